package store_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/signd/signd/store"
)

func TestGrantParties(t *testing.T) {
	tests := []struct {
		name                     string
		client, user, credential string
		want                     []string
	}{
		{"nothing", "", "", "", nil},
		{"client only", "app", "", "", []string{"capp\x00"}},
		{"before login", "app", "", "cred", []string{"capp\x00", "kcred\x00"}},
		{"access token", "app", "alice", "", []string{"capp\x00", "ualice\x00"}},
		{"signing grant", "app", "alice", "cred", []string{"capp\x00", "ualice\x00", "kcred\x00", "salice\x00"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := store.GrantParties(tt.client, tt.user, tt.credential); !slices.Equal(got, tt.want) {
				t.Errorf("GrantParties = %q, want %q", got, tt.want)
			}
		})
	}
	if got := store.SessionParties("alice"); !slices.Equal(got, []string{"ualice\x00"}) {
		t.Errorf("SessionParties = %q", got)
	}
}

func TestCheckRevokeName(t *testing.T) {
	for _, tt := range []struct {
		name string
		ok   bool
	}{{"alice", true}, {"", false}, {"al\x00ice", false}} {
		err := store.CheckRevokeName(tt.name)
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, store.ErrInvalid)) {
			t.Errorf("CheckRevokeName(%q) = %v, want ok=%v or ErrInvalid", tt.name, err, tt.ok)
		}
	}
}
