package enrollment

import (
	"strings"
	"testing"
	"time"

	"github.com/signd/signd/store"
)

func TestUsername(t *testing.T) {
	token, err := New("erin")
	if err != nil {
		t.Fatal(err)
	}
	secret := strings.TrimPrefix(token, "erin~")
	tests := []struct {
		name, token, want string
	}{
		{"fresh", token, "erin"},
		{"no separator", "erin" + secret, ""},
		{"short secret", "erin~" + secret[1:], ""},
		{"not base64url", "erin~" + strings.Repeat("+", 43), ""},
		{"bad username", "er in~" + secret, ""},
		{"username too long", strings.Repeat("a", 65) + "~" + secret, ""},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Username(tt.token); got != tt.want {
				t.Errorf("Username(%q) = %q, want %q", tt.token, got, tt.want)
			}
		})
	}
}

func TestRefusal(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	token, err := New("erin")
	if err != nil {
		t.Fatal(err)
	}
	other := token[:len(token)-1] + "A" // another secret of the same user
	if strings.HasSuffix(token, "A") {
		other = token[:len(token)-1] + "B"
	}
	open := func() *store.User {
		return &store.User{Username: "erin", Status: store.UserActive,
			EnrollmentHash: store.Fingerprint(token), EnrollmentExpires: now.Add(time.Hour)}
	}
	tests := []struct {
		name  string
		user  func() *store.User
		token string
		want  string
	}{
		{"open", open, token, ""},
		{"closed", func() *store.User { u := open(); u.EnrollmentHash = nil; return u }, token, "no enrollment link is open"},
		{"disabled", func() *store.User { u := open(); u.Status = store.UserDisabled; return u }, token, "the user is disabled"},
		{"another link", open, other, "not the user's current enrollment link"},
		{"expired", func() *store.User { u := open(); u.EnrollmentExpires = now; return u }, token, "expired at 2026-01-02T03:04:05Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Refusal(tt.user(), tt.token, now)
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Errorf("Refusal = %q, want %q", got, tt.want)
			}
		})
	}
}
