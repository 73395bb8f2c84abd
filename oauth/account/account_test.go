package account_test

import (
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/oauth/account"
)

// TestMountRefuses: the account page is not mounted without its backend,
// the login session it shares or the password checker; it registers no
// route then.
func TestMountRefuses(t *testing.T) {
	backend, sessions, passwords := struct{ account.Backend }{}, struct{ account.Sessions }{}, struct{ account.Passwords }{}
	for _, tt := range []struct {
		name string
		h    account.Handler
		want string
	}{
		{"no_backend", account.Handler{Sessions: sessions, Passwords: passwords}, "Backend is required"},
		{"no_sessions", account.Handler{Backend: backend, Passwords: passwords}, "Sessions is required"},
		{"no_passwords", account.Handler{Backend: backend, Sessions: sessions}, "Passwords is required"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := echo.New()
			if err := tt.h.Mount(e.Group("")); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Mount: %v, want an error naming %q", err, tt.want)
			}
			if n := len(e.Routes()); n != 0 {
				t.Errorf("%d routes registered by a refused Mount", n)
			}
		})
	}
}
