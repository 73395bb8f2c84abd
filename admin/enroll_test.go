package admin

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/signd/signd/store"
	"github.com/signd/signd/store/memory"
	"github.com/signd/signd/store/storetest"
)

// enrollWorld is a Local over a memory store with an injected clock and
// enrollment links under https://sign.example; logs collects its log.
func enrollWorld(t *testing.T) (l *Local, clock *storetest.Clock, logs *bytes.Buffer) {
	t.Helper()
	hasher, err := store.NewHasher(store.Argon2Params{Time: 1, MemoryKiB: 64, Threads: 1, KeyLen: 32, SaltLen: 16})
	if err != nil {
		t.Fatal(err)
	}
	clock = storetest.NewClock(time.Date(2030, 3, 4, 5, 6, 7, 0, time.UTC))
	logs = &bytes.Buffer{}
	l = New(Config{Store: memory.New(memory.Options{}), Hasher: hasher, Now: clock.Now,
		Logger: slog.New(slog.NewJSONHandler(logs, nil)), EnrollBaseURL: "https://sign.example/signd/"})
	return l, clock, logs
}

// newEnrollee creates username with an enrollment link and returns the
// link's token.
func newEnrollee(t *testing.T, l *Local, username string) string {
	t.Helper()
	v, err := l.AddUser(context.Background(), carol, AddUserRequest{Username: username, Enroll: true, Email: username + "@example.org"})
	if err != nil {
		t.Fatal(err)
	}
	if v.Enrollment == nil {
		t.Fatal("AddUser with enroll returned no link")
	}
	prefix := "https://sign.example/signd" + EnrollPath
	token, ok := strings.CutPrefix(v.Enrollment.Link, prefix)
	if !ok {
		t.Fatalf("link %q does not start with %q", v.Enrollment.Link, prefix)
	}
	return token
}

// TestEnrollmentLinkIssued: the administrator alone creates the user with
// a link; the record holds the link's fingerprint and expiry, no password,
// no PIN; the audit entry names the operator and not the link.
func TestEnrollmentLinkIssued(t *testing.T) {
	l, clock, logs := enrollWorld(t)
	ctx := context.Background()
	v, err := l.AddUser(ctx, carol, AddUserRequest{Username: "erin", Enroll: true})
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimPrefix(v.Enrollment.Link, "https://sign.example/signd"+EnrollPath)
	name, secret, _ := strings.Cut(token, "~")
	if name != "erin" || len(secret) != 43 {
		t.Errorf("token %q: want erin~ and 43 characters (256 bits)", token)
	}
	if want := clock.Now().Add(DefaultEnrollmentTTL); !v.Enrollment.ExpiresAt.Equal(want) || v.EnrollmentExpires == nil || !v.EnrollmentExpires.Equal(want) {
		t.Errorf("expires %v / %v, want %v", v.Enrollment.ExpiresAt, v.EnrollmentExpires, want)
	}
	var u *store.User
	_ = l.core.Store.View(ctx, func(tx store.Tx) (err error) { u, err = tx.User("erin"); return err })
	if u.PasswordHash != "" || u.PINHash != "" || !bytes.Equal(u.EnrollmentHash, store.Fingerprint(token)) {
		t.Errorf("stored: password %q PIN %q enrollment %x", u.PasswordHash, u.PINHash, u.EnrollmentHash)
	}
	if got := auditOf(t, l, "enroll", "password", "enrollment_expires"); len(got) != 1 ||
		got[0] != "user_added ok uid:1003 (carol) enroll=link enrollment_expires=2030-03-05T05:06:07Z" {
		t.Errorf("audit %q", got)
	}
	if strings.Contains(logs.String(), secret) {
		t.Errorf("the log holds the link's secret: %s", logs)
	}
	// Two links never match: the secret is random.
	if other := newEnrollee(t, l, "frank"); strings.TrimPrefix(other, "frank~") == secret {
		t.Error("two links with one secret")
	}
	// A second link for the same name is refused as AddUser refuses it.
	if _, err := l.AddUser(ctx, carol, AddUserRequest{Username: "erin", Enroll: true}); KindOf(err) != KindExists {
		t.Errorf("second AddUser: %v", err)
	}
}

// TestEnrollmentLinkRequest: enroll with a password or a PIN, or without
// server.base_url, is refused before anything is stored.
func TestEnrollmentLinkRequest(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  AddUserRequest
		base string
		kind Kind
		msg  string
	}{
		{"with a password", AddUserRequest{Username: "u", Enroll: true, Password: "correct horse"}, "https://x", KindInvalid, "give neither"},
		{"with a PIN", AddUserRequest{Username: "u", Enroll: true, PIN: "1234"}, "https://x", KindInvalid, "give neither"},
		{"without base URL", AddUserRequest{Username: "u", Enroll: true}, "", KindUnavailable, "server.base_url"},
		{"bad username", AddUserRequest{Username: "u~x", Enroll: true}, "https://x", KindInvalid, "username"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, _, _ := enrollWorld(t)
			l = l.reconfigured(func(c *Config) { c.EnrollBaseURL = tc.base })
			_, err := l.AddUser(context.Background(), alice2, tc.req)
			if KindOf(err) != tc.kind || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("err = %v (%s), want %s %q", err, KindOf(err), tc.kind, tc.msg)
			}
			if _, err := l.User(context.Background(), "u"); KindOf(err) != KindNotFound {
				t.Errorf("the user was stored: %v", err)
			}
		})
	}
}

// TestEnroll: the user sets password and PIN once; every other use is
// refused with one error, the known user's refusals audited.
func TestEnroll(t *testing.T) {
	const pw, pin = "correct horse battery", "123456"
	cases := []struct {
		name string
		// use returns the request to make after erin's link token was
		// issued (and anything the case does first).
		use       func(t *testing.T, l *Local, clock *storetest.Clock, token string) EnrollRequest
		err       error
		audit     string // the last audit line, "" = none written by the use
		stillOpen bool
	}{
		{"ok", func(t *testing.T, l *Local, _ *storetest.Clock, token string) EnrollRequest {
			return EnrollRequest{Token: token, Password: pw, PIN: pin, IP: "192.0.2.1"}
		}, nil, "account_action ok user:erin action=enroll ip=192.0.2.1 password=set pin=set", false},
		{"replayed", func(t *testing.T, l *Local, _ *storetest.Clock, token string) EnrollRequest {
			if _, err := l.Enroll(context.Background(), EnrollRequest{Token: token, Password: pw, PIN: pin, IP: "192.0.2.1"}); err != nil {
				t.Fatal(err)
			}
			return EnrollRequest{Token: token, Password: "another password", PIN: "9999", IP: "198.51.100.9"}
		}, ErrEnrollmentRefused, "account_action refused user:erin action=enroll ip=198.51.100.9", false},
		{"expired", func(t *testing.T, l *Local, clock *storetest.Clock, token string) EnrollRequest {
			clock.Advance(DefaultEnrollmentTTL)
			return EnrollRequest{Token: token, Password: pw, PIN: pin, IP: "192.0.2.1"}
		}, ErrEnrollmentRefused, "account_action refused user:erin action=enroll ip=192.0.2.1", false},
		{"another secret", func(t *testing.T, l *Local, _ *storetest.Clock, token string) EnrollRequest {
			return EnrollRequest{Token: "erin~" + strings.Repeat("A", 43), Password: pw, PIN: pin, IP: "192.0.2.1"}
		}, ErrEnrollmentRefused, "account_action refused user:erin action=enroll ip=192.0.2.1", true},
		{"another user's name", func(t *testing.T, l *Local, _ *storetest.Clock, token string) EnrollRequest {
			return EnrollRequest{Token: "frank~" + strings.TrimPrefix(token, "erin~"), Password: pw, PIN: pin, IP: "192.0.2.1"}
		}, ErrEnrollmentRefused, "account_action refused user:frank action=enroll ip=192.0.2.1", true},
		{"unknown", func(t *testing.T, l *Local, _ *storetest.Clock, token string) EnrollRequest {
			return EnrollRequest{Token: "nobody", Password: pw, PIN: pin}
		}, ErrEnrollmentRefused, "", true},
		{"oversized token", func(t *testing.T, l *Local, _ *storetest.Clock, token string) EnrollRequest {
			return EnrollRequest{Token: token + strings.Repeat("A", 5000), Password: pw, PIN: pin}
		}, ErrEnrollmentRefused, "", true},
		{"empty token", func(t *testing.T, l *Local, _ *storetest.Clock, token string) EnrollRequest {
			return EnrollRequest{Password: pw, PIN: pin}
		}, ErrEnrollmentRefused, "", true},
		{"short password", func(t *testing.T, l *Local, _ *storetest.Clock, token string) EnrollRequest {
			return EnrollRequest{Token: token, Password: "short", PIN: pin}
		}, ErrEnrollPassword, "", true},
		{"oversized password", func(t *testing.T, l *Local, _ *storetest.Clock, token string) EnrollRequest {
			return EnrollRequest{Token: token, Password: strings.Repeat("p", 1025), PIN: pin}
		}, ErrEnrollPassword, "", true},
		{"control character in password", func(t *testing.T, l *Local, _ *storetest.Clock, token string) EnrollRequest {
			return EnrollRequest{Token: token, Password: "correct\nhorse", PIN: pin}
		}, ErrEnrollPassword, "", true},
		{"short PIN", func(t *testing.T, l *Local, _ *storetest.Clock, token string) EnrollRequest {
			return EnrollRequest{Token: token, Password: pw, PIN: "12"}
		}, ErrEnrollPIN, "", true},
		{"oversized PIN", func(t *testing.T, l *Local, _ *storetest.Clock, token string) EnrollRequest {
			return EnrollRequest{Token: token, Password: pw, PIN: strings.Repeat("1", 65)}
		}, ErrEnrollPIN, "", true},
		{"with TOTP", func(t *testing.T, l *Local, _ *storetest.Clock, token string) EnrollRequest {
			return EnrollRequest{Token: token, Password: pw, PIN: pin, IP: "192.0.2.1", TOTPSecret: "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP", TOTPStep: 42}
		}, nil, "account_action ok user:erin action=enroll ip=192.0.2.1 password=set pin=set totp=enrolled", false},
		{"malformed TOTP secret", func(t *testing.T, l *Local, _ *storetest.Clock, token string) EnrollRequest {
			return EnrollRequest{Token: token, Password: pw, PIN: pin, TOTPSecret: "jbswy3dp"}
		}, ErrEnrollTOTP, "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l, clock, logs := enrollWorld(t)
			ctx := context.Background()
			token := newEnrollee(t, l, "erin")
			newEnrollee(t, l, "frank")
			before := len(auditOf(t, l))
			req := tc.use(t, l, clock, token)
			if tc.name == "replayed" {
				before++
			}
			name, err := l.Enroll(ctx, req)
			if !errors.Is(err, tc.err) || (err == nil) != (name == "erin") {
				t.Fatalf("Enroll = %q, %v; want %v", name, err, tc.err)
			}
			got := auditOf(t, l, "action", "ip", "password", "pin", "totp")
			switch {
			case tc.audit == "" && len(got) != before:
				t.Errorf("audit %q, want nothing new", got[before:])
			case tc.audit != "" && (len(got) != before+1 || got[before] != tc.audit):
				t.Errorf("audit %q, want %q", got[before:], tc.audit)
			}
			_, open := l.EnrollmentUser(ctx, token)
			if (open == nil) != tc.stillOpen {
				t.Errorf("after the use the link is open: %v, want %v", open == nil, tc.stillOpen)
			}
			for _, s := range []string{strings.TrimPrefix(token, "erin~"), pw, pin} {
				if strings.Contains(logs.String(), s) {
					t.Errorf("the log holds %q", s)
				}
			}
			if tc.err != nil {
				return
			}
			var u *store.User
			_ = l.core.Store.View(ctx, func(tx store.Tx) (err error) { u, err = tx.User("erin"); return err })
			if ok, _ := l.cfg.Hasher.Check(u.PasswordHash, []byte(pw)); !ok {
				t.Error("the password was not set")
			}
			if ok, _ := l.cfg.Hasher.Check(u.PINHash, []byte(pin)); !ok {
				t.Error("the PIN was not set")
			}
			if u.TOTPSecret != req.TOTPSecret || u.TOTPLastStep != req.TOTPStep {
				t.Errorf("TOTP stored %q step %d, want %q %d", u.TOTPSecret, u.TOTPLastStep, req.TOTPSecret, req.TOTPStep)
			}
			if len(u.EnrollmentHash) != 0 || !u.EnrollmentExpires.IsZero() {
				t.Errorf("the link stays stored: %x %v", u.EnrollmentHash, u.EnrollmentExpires)
			}
		})
	}
}

// TestEnrollConcurrent: the same link posted many times at once sets the
// secrets exactly once; every other use is refused.
func TestEnrollConcurrent(t *testing.T) {
	l, _, _ := enrollWorld(t)
	token := newEnrollee(t, l, "erin")
	const n = 8
	errs := make([]error, n)
	storetest.AtOnce(n, func(i int) {
		_, errs[i] = l.Enroll(context.Background(), EnrollRequest{Token: token, Password: "password number " + string(rune('a'+i)), PIN: "1234"})
	})
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, ErrEnrollmentRefused):
			t.Errorf("unexpected error %v", err)
		}
	}
	if ok != 1 {
		t.Fatalf("%d of %d concurrent uses of one link succeeded, want exactly 1", ok, n)
	}
	got := auditOf(t, l, "action")
	okEntries := 0
	for _, line := range got {
		if strings.HasPrefix(line, "account_action ok") {
			okEntries++
		}
	}
	if okEntries != 1 {
		t.Errorf("audit %q: want one account_action ok", got)
	}
}

// TestEnrollmentClosedByOperator: an operator who sets the password or
// the PIN takes the enrollment over, and a disabled user's link does not
// work: the link is refused afterwards.
func TestEnrollmentClosedByOperator(t *testing.T) {
	for _, tc := range []struct {
		name  string
		act   func(ctx context.Context, l *Local) error
		field string // the act's entry: enrollment=closed, "" = no field
	}{
		{"set password", func(ctx context.Context, l *Local) error {
			_, err := l.SetPassword(ctx, alice2, SetSecretRequest{Username: "erin", Secret: "an operator's password"})
			return err
		}, "closed"},
		{"set PIN", func(ctx context.Context, l *Local) error {
			_, err := l.SetPIN(ctx, alice2, SetSecretRequest{Username: "erin", Secret: "8642"})
			return err
		}, "closed"},
		{"disable", func(ctx context.Context, l *Local) error {
			_, err := l.SetUserStatus(ctx, alice2, "erin", false)
			return err
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, _, _ := enrollWorld(t)
			ctx := context.Background()
			token := newEnrollee(t, l, "erin")
			if err := tc.act(ctx, l); err != nil {
				t.Fatal(err)
			}
			got := auditOf(t, l, "enrollment")
			if last := got[len(got)-1]; strings.Contains(last, "enrollment=closed") != (tc.field == "closed") {
				t.Errorf("the act's entry: %q", last)
			}
			if _, err := l.Enroll(ctx, EnrollRequest{Token: token, Password: "the link's password", PIN: "1234"}); !errors.Is(err, ErrEnrollmentRefused) {
				t.Errorf("Enroll after the operator's act: %v", err)
			}
		})
	}
}

// TestIssueEnrollment: a new link replaces the open one (the old one is
// refused, the new one works); a user with a password or a PIN, an
// unknown user and a principal without the administrator role are
// refused, each with its one audit entry.
func TestIssueEnrollment(t *testing.T) {
	l, clock, _ := enrollWorld(t)
	ctx := context.Background()
	old := newEnrollee(t, l, "erin")
	clock.Advance(DefaultEnrollmentTTL) // the first link expired unused
	v, err := l.IssueEnrollment(ctx, carol, "erin")
	if err != nil || v.Enrollment == nil || !v.Enrollment.ExpiresAt.Equal(clock.Now().Add(DefaultEnrollmentTTL)) {
		t.Fatalf("IssueEnrollment = %+v, %v", v, err)
	}
	token := strings.TrimPrefix(v.Enrollment.Link, "https://sign.example/signd"+EnrollPath)
	if _, err := l.Enroll(ctx, EnrollRequest{Token: old, Password: "the old link's", PIN: "1111"}); !errors.Is(err, ErrEnrollmentRefused) {
		t.Errorf("the replaced link: %v", err)
	}
	if _, err := l.Enroll(ctx, EnrollRequest{Token: token, Password: "the new link's", PIN: "2222"}); err != nil {
		t.Errorf("the new link: %v", err)
	}
	for _, tc := range []struct {
		name string
		by   Principal
		user string
		kind Kind
	}{
		{"enrolled", carol, "erin", KindConflict},
		{"with a password", carol, "frank", KindConflict},
		{"unknown", carol, "nobody", KindNotFound},
		{"invalid name", carol, "a~b", KindInvalid},
		{"security officer", alice, "erin", KindForbidden},
		{"auditor", dave, "erin", KindForbidden},
	} {
		if tc.user == "frank" {
			if _, err := l.AddUser(ctx, carol, AddUserRequest{Username: "frank", Password: "correct horse"}); err != nil {
				t.Fatal(err)
			}
		}
		before := len(auditOf(t, l))
		if _, err := l.IssueEnrollment(ctx, tc.by, tc.user); KindOf(err) != tc.kind {
			t.Errorf("%s: %v (%s), want %s", tc.name, err, KindOf(err), tc.kind)
		}
		if got := auditOf(t, l); len(got) != before+1 || !strings.Contains(got[before], "refused") {
			t.Errorf("%s: audit %q, want one refusal", tc.name, got[before:])
		}
	}
}
