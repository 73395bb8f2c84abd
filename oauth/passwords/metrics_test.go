package passwords_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/signd/signd/oauth/passwords"
	"github.com/signd/signd/store"
	"github.com/signd/signd/store/memory"
)

// recorder is a passwords.Metrics that counts what it hears.
type recorder struct {
	mu       sync.Mutex
	logins   map[[2]string]int
	lockouts map[string]int
}

func (r *recorder) ObserveLogin(method, result string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logins[[2]string{method, result}]++
}

func (r *recorder) ObserveLockout(secret string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lockouts[secret]++
}

// TestMetricsLockAfterRestart: a counter that reached oauth.max_failures
// without its lock being written (the process died after the last
// reservation) is locked by the next guess's reservation, without
// evaluating it; that lock is counted like any other, and so is the
// answer.
func TestMetricsLockAfterRestart(t *testing.T) {
	ctx := context.Background()
	hasher, err := store.NewHasher(store.Argon2Params{Time: 1, MemoryKiB: 64, Threads: 1, KeyLen: 32, SaltLen: 16})
	if err != nil {
		t.Fatal(err)
	}
	pw, _ := store.HashPassword(hasher.Params(), []byte("right password"))
	db := memory.New(memory.Options{})
	if err := db.Update(ctx, func(tx store.Tx) error {
		return tx.CreateUser(&store.User{ID: "u1", Username: "alice", Status: store.UserActive,
			PasswordHash: pw, PINHash: pw, FailedPasswords: 3, FailedPINs: 3})
	}); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{logins: map[[2]string]int{}, lockouts: map[string]int{}}
	c, err := passwords.New(passwords.Config{
		Store: store.Scope(db, func(tx store.Tx) passwords.Tx { return tx }), Hasher: hasher, MaxFailures: 3, Metrics: rec,
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := c.Login(ctx, "alice", "right password", "", time.Now()); err != nil || ok {
		t.Fatalf("Login = %v, %v; want refused", ok, err)
	}
	if res, _, err := c.CheckPIN(ctx, "alice", "right password", nil); err != nil || res != passwords.PINLocked {
		t.Fatalf("CheckPIN = %v, %v; want PINLocked", res, err)
	}
	if got := rec.logins; len(got) != 1 || got[[2]string{"password", "locked"}] != 1 {
		t.Errorf("logins %v, want one password/locked", got)
	}
	if got := rec.lockouts; len(got) != 2 || got["password"] != 1 || got["pin"] != 1 {
		t.Errorf("lockouts %v, want one password and one pin", got)
	}
}
