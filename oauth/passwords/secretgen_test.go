package passwords_test

import (
	"context"
	"testing"
	"time"

	"github.com/signd/signd/oauth/passwords"
	"github.com/signd/signd/store"
	"github.com/signd/signd/store/memory"
	"github.com/signd/signd/store/storetest"
)

// heldHasher is a passwords.Hasher whose Check, once armed, tells the test
// it started (checking) and waits for the test to let it go on (release):
// the test commits a reset while the old secret is being hashed.
type heldHasher struct {
	*store.Hasher
	checking, release chan struct{}
}

func (h *heldHasher) Check(encoded string, secret []byte) (bool, error) {
	h.checking <- struct{}{}
	<-h.release
	return h.Hasher.Check(encoded, secret)
}

// TestSecretChangedWhileChecked: a password or PIN that is being hashed
// when an admin's reset commits (set-pin, set-password, a revocation of
// the user's grants) is not accepted, even though it was the right secret
// when its check began, and the reset's cleared counter is not charged
// for it. A revocation alone (the secret unchanged) gives the guess's
// reservation back.
func TestSecretChangedWhileChecked(t *testing.T) {
	setPIN := func(tx store.Tx, h string) error {
		if err := storetest.EditUser(tx, "alice", func(u *store.User) { u.PINHash, u.PINLocked, u.FailedPINs = h, false, 0 }); err != nil {
			return err
		}
		_, err := tx.RevokeUserSigning("alice")
		return err
	}
	setPassword := func(tx store.Tx, h string) error {
		if err := storetest.EditUser(tx, "alice", func(u *store.User) { u.PasswordHash, u.FailedPasswords = h, 0 }); err != nil {
			return err
		}
		_, err := tx.RevokeUser("alice")
		return err
	}
	revoke := func(tx store.Tx, _ string) error { _, err := tx.RevokeUser("alice"); return err }
	pin := func(ctx context.Context, c *passwords.Checker) bool {
		res, _, err := c.CheckPIN(ctx, "alice", "old secret", nil)
		if err != nil {
			t.Errorf("CheckPIN: %v", err)
		}
		return res == passwords.PINValid
	}
	login := func(ctx context.Context, c *passwords.Checker) bool {
		_, ok, err := c.Login(ctx, "alice", "old secret", "", time.Now())
		if err != nil {
			t.Errorf("Login: %v", err)
		}
		return ok
	}
	failedPINs := func(u *store.User) int { return u.FailedPINs }
	failedPasswords := func(u *store.User) int { return u.FailedPasswords }
	tests := []struct {
		name   string
		check  func(ctx context.Context, c *passwords.Checker) bool
		reset  func(tx store.Tx, newHash string) error // nil: none
		failed func(u *store.User) int
	}{
		{"CheckPIN, no reset", pin, nil, failedPINs},
		{"CheckPIN, set-pin", pin, setPIN, failedPINs},
		{"CheckPIN, set-password", pin, setPassword, failedPINs},
		{"Login, no reset", login, nil, failedPasswords},
		{"Login, set-password", login, setPassword, failedPasswords},
		{"Login, set-pin", login, setPIN, failedPasswords},
		{"Login, RevokeUser", login, revoke, failedPasswords},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			inner, err := store.NewHasher(store.Argon2Params{Time: 1, MemoryKiB: 64, Threads: 1, KeyLen: 32, SaltLen: 16})
			if err != nil {
				t.Fatal(err)
			}
			old, _ := store.HashPassword(inner.Params(), []byte("old secret"))
			next, _ := store.HashPassword(inner.Params(), []byte("new secret"))
			db := memory.New(memory.Options{})
			if err := db.Update(ctx, func(tx store.Tx) error {
				return tx.CreateUser(&store.User{ID: "u1", Username: "alice", Status: store.UserActive, PasswordHash: old, PINHash: old})
			}); err != nil {
				t.Fatal(err)
			}
			h := &heldHasher{Hasher: inner, checking: make(chan struct{}), release: make(chan struct{})}
			c, err := passwords.New(passwords.Config{
				Store: store.Scope(db, func(tx store.Tx) passwords.Tx { return tx }), Hasher: h, MaxFailures: 3,
			})
			if err != nil {
				t.Fatal(err)
			}
			accepted := make(chan bool, 1)
			go func() { accepted <- tt.check(ctx, c) }()
			<-h.checking // reserved; the old secret is being hashed
			if tt.reset != nil {
				if err := db.Update(ctx, func(tx store.Tx) error { return tt.reset(tx, next) }); err != nil {
					t.Fatal(err)
				}
			}
			close(h.release)
			if got, want := <-accepted, tt.reset == nil; got != want {
				t.Errorf("accepted = %v, want %v", got, want)
			}
			if err := db.View(ctx, func(tx store.Tx) error {
				u, err := tx.User("alice")
				if err == nil && tt.failed(u) != 0 {
					t.Errorf("failure counter %d after the check, want 0 (nothing counted)", tt.failed(u))
				}
				return err
			}); err != nil {
				t.Fatal(err)
			}
		})
	}
}
