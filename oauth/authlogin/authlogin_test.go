package authlogin_test

import (
	"strings"
	"testing"

	"github.com/signd/signd/oauth"
	"github.com/signd/signd/oauth/authlogin"
)

// TestNewRefuses: the pageless login needs its client, its scope, the
// authorization server's store view and the password checker. (The
// logins themselves are tested through the assembled server in oauth's
// direct_test.go and timedlock_test.go.)
func TestNewRefuses(t *testing.T) {
	// Stand-ins that New only holds: it calls neither.
	st, pw := struct{ oauth.Store }{}, struct{ authlogin.Passwords }{}
	for _, tt := range []struct {
		name string
		cfg  authlogin.Config
		want string
	}{
		{"no_client", authlogin.Config{Scope: "service", Store: st, Passwords: pw}, "ClientID is required"},
		{"no_scope", authlogin.Config{ClientID: "rp", Store: st, Passwords: pw}, "Scope is required"},
		{"no_store", authlogin.Config{ClientID: "rp", Scope: "service", Passwords: pw}, "Store is required"},
		{"no_passwords", authlogin.Config{ClientID: "rp", Scope: "service", Store: st}, "Passwords is required"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := authlogin.New(tt.cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New: %v, want an error naming %q", err, tt.want)
			}
		})
	}
	if _, err := authlogin.New(authlogin.Config{ClientID: "rp", Scope: "service", Store: st, Passwords: pw}); err != nil {
		t.Errorf("New: %v", err)
	}
}
