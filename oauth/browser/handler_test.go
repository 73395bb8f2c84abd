package browser_test

import (
	"strings"
	"testing"

	"github.com/signd/signd/oauth"
	"github.com/signd/signd/oauth/browser"
	"github.com/signd/signd/store"
	"github.com/signd/signd/store/memory"
)

// TestNewRefuses: the browser flow needs the authorization server, its
// store view and the password checker.
func TestNewRefuses(t *testing.T) {
	db := memory.New(memory.Options{})
	t.Cleanup(func() { db.Close() })
	st := store.Scope(db, func(tx store.Tx) oauth.Tx { return tx })
	core := (*oauth.Server)(nil) // never called: the checks come first
	for _, tt := range []struct {
		name string
		cfg  browser.Config
		want string
	}{
		{"no_core", browser.Config{Store: st, Passwords: struct{ browser.Passwords }{}}, "Core is required"},
		{"no_store", browser.Config{Core: core, Passwords: struct{ browser.Passwords }{}}, "Store is required"},
		{"no_passwords", browser.Config{Core: core, Store: st}, "Passwords is required"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := browser.New(tt.cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New: %v, want an error naming %q", err, tt.want)
			}
		})
	}
}
