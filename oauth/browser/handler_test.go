package browser_test

import (
	"strings"
	"testing"

	"github.com/signd/signd/oauth"
	"github.com/signd/signd/oauth/browser"
)

// TestNewRefuses: the browser flow needs the authorization server, its
// store view and the password checker.
func TestNewRefuses(t *testing.T) {
	// Stand-ins never called: the checks come first.
	st, core := struct{ oauth.Store }{}, (*oauth.Server)(nil)
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
