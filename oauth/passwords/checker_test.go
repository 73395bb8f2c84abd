package passwords_test

import (
	"strings"
	"testing"
	"time"

	"github.com/signd/signd/oauth/passwords"
)

// TestNewRefuses: a checker needs its store and hasher, and a password
// lock that may not last shorter than its first step.
func TestNewRefuses(t *testing.T) {
	// Stand-ins that New only holds: it calls neither.
	st, hasher := struct{ passwords.Store }{}, struct{ passwords.Hasher }{}
	for _, tt := range []struct {
		name string
		cfg  passwords.Config
		want string
	}{
		{"no_store", passwords.Config{Hasher: hasher}, "Store is required"},
		{"no_hasher", passwords.Config{Store: st}, "Hasher is required"},
		{"lockout_max_below_base", passwords.Config{Store: st, Hasher: hasher,
			Lockout: passwords.Lockout{Base: time.Hour, Max: time.Minute}}, "shorter than Lockout.Base"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := passwords.New(tt.cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New: %v, want an error naming %q", err, tt.want)
			}
		})
	}
	if _, err := passwords.New(passwords.Config{Store: st, Hasher: hasher}); err != nil {
		t.Errorf("New with store and hasher: %v", err)
	}
}
