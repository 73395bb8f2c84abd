package passwords_test

import (
	"strings"
	"testing"
	"time"

	"github.com/signd/signd/oauth/passwords"
	"github.com/signd/signd/store"
	"github.com/signd/signd/store/memory"
)

// TestNewRefuses: a checker needs its store and hasher, and a password
// lock that may not last shorter than its first step.
func TestNewRefuses(t *testing.T) {
	db := memory.New(memory.Options{})
	t.Cleanup(func() { db.Close() })
	st := store.Scope(db, func(tx store.Tx) passwords.Tx { return tx })
	hasher, err := store.NewHasher(store.Argon2Params{Time: 1, MemoryKiB: 8, Threads: 1, KeyLen: 16, SaltLen: 8})
	if err != nil {
		t.Fatal(err)
	}
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
