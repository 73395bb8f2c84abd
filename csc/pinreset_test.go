package csc_test

import (
	"context"
	"net/http"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/signd/signd/store"
	"github.com/signd/signd/store/storetest"
)

// TestAuthorizePINResetWhileChecked: an admin's set-pin (a new PIN hash,
// the lock and counter cleared, the user's SADs revoked) that commits
// while credentials/authorize checks the old PIN, or after the check and
// before the SAD is written, wins: no SAD on the old PIN, the refusal
// answered as a wrong PIN and audited with its reason, no failure
// counted; the new PIN then authorizes and signs.
func TestAuthorizePINResetWhileChecked(t *testing.T) {
	const newPIN = "13579"
	for _, tt := range []struct {
		name string
		hook func(c *countingChecker, reset func())
	}{
		{"during the check", func(c *countingChecker, reset func()) { c.during = reset }},
		{"after the check", func(c *countingChecker, reset func()) { c.settled = reset }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newExplicitEnv(t)
			bearer := e.accessToken("alice", "rp1")
			cred := e.explicitCredential("alice", 1, store.AuthExplicit)
			h, err := e.checker.Hash([]byte(newPIN))
			if err != nil {
				t.Fatal(err)
			}
			var once sync.Once
			tt.hook(e.checker, func() {
				once.Do(func() {
					e.update(func(tx store.Tx) error {
						err := storetest.EditUser(tx, "alice", func(u *store.User) { u.PINHash, u.PINLocked, u.FailedPINs = h, false, 0 })
						if err != nil {
							return err
						}
						_, err = tx.RevokeUserSigning("alice")
						return err
					})
				})
			})
			d := digest(tt.name)
			r := e.call("credentials/authorize", bearer, authorizeBody(cred, 1, testPIN, d))
			wantError(t, r, http.StatusBadRequest, "invalid_pin", "The PIN is invalid")
			if sad := r.str("SAD"); sad != "" {
				t.Errorf("a SAD was issued on the old PIN after the reset: %s", r.raw)
				if s := e.call("signatures/signHash", bearer, signHashBody(cred, sad, d)); s.status == http.StatusOK {
					t.Errorf("and it signed: %s", s.raw)
				}
			}
			entries := e.auditEntries()
			if last := entries[len(entries)-1]; last.Kind != store.AuditAuthorize || last.Outcome != store.AuditRefused ||
				last.Reason != "PIN changed meanwhile" {
				t.Errorf("last audit entry %+v, want a refused authorize (PIN changed meanwhile)", last)
			}
			e.view(func(tx store.Tx) error {
				u, err := tx.User("alice")
				if err == nil && u.FailedPINs != 0 {
					t.Errorf("FailedPINs = %d after the reset, want 0: the old PIN's check counted", u.FailedPINs)
				}
				return err
			})
			r = e.call("credentials/authorize", bearer, authorizeBody(cred, 1, newPIN, d))
			if r.status != http.StatusOK {
				t.Fatalf("authorize with the new PIN: %d %s", r.status, r.raw)
			}
			signatures(t, e.call("signatures/signHash", bearer, signHashBody(cred, r.str("SAD"), d)))
		})
	}
}

// TestAuthorizeRacesPINReset fires authorizations with the old PIN and
// the admin's set-pin at once, the reset committing once k of the n
// guesses are being hashed (k = 0 … n over the rounds): whatever the
// interleaving, no SAD obtained with the old PIN signs afterwards (issued
// before the reset, the reset revoked it; checked across it, none was
// issued).
func TestAuthorizeRacesPINReset(t *testing.T) {
	const n = maxFailures // every guess is evaluated: none is refused as in flight
	for round := range 2 * (n + 1) {
		k := int64(round % (n + 1))
		e := newExplicitEnv(t)
		bearer := e.accessToken("alice", "rp1")
		cred := e.explicitCredential("alice", 1, store.AuthExplicit)
		h, err := e.checker.Hash([]byte("13579"))
		if err != nil {
			t.Fatal(err)
		}
		d := digest("race")
		sads := make([]string, n)
		storetest.AtOnce(n+1, func(i int) {
			if i == n {
				for deadline := time.Now().Add(10 * time.Second); e.checker.checks.Load() < k && time.Now().Before(deadline); {
					runtime.Gosched()
				}
				err := e.db.Update(context.Background(), func(tx store.Tx) error {
					err := storetest.EditUser(tx, "alice", func(u *store.User) { u.PINHash, u.PINLocked, u.FailedPINs = h, false, 0 })
					if err != nil {
						return err
					}
					_, err = tx.RevokeUserSigning("alice")
					return err
				})
				if err != nil {
					t.Error(err)
				}
				return
			}
			sads[i] = e.call("credentials/authorize", bearer, authorizeBody(cred, 1, testPIN, d)).str("SAD")
		})
		for i, sad := range sads {
			if sad == "" {
				continue
			}
			if r := e.call("signatures/signHash", bearer, signHashBody(cred, sad, d)); r.status == http.StatusOK {
				t.Errorf("round %d: SAD %d of the old PIN signed after the PIN reset", round, i)
			}
		}
	}
}
