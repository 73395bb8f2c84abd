package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/signd/signd/store"
)

// testRevocationGeneration checks store.RevocationReader: every write that
// could make a working access token stop working raises the generation in
// its own transaction (so a rollback takes the raise back and a commit
// publishes it to every later reader), and the hot-path writes (consuming a
// SAD, issuing a token, counting a failed login, sweeping) leave it alone.
func testRevocationGeneration(t *testing.T, s store.Store) {
	now := time.Now().UTC().Round(0)
	createUsers(t, s, "alice", "bob")
	update(t, s, func(tx store.Tx) error {
		for _, id := range []string{"rp", "rp2"} {
			if err := tx.CreateClient(newClient(id)); err != nil {
				return err
			}
		}
		for _, tok := range []*store.Token{
			newToken("at-live", store.TokenAccess, "code-at", now.Add(time.Hour)),
			newToken("sad-live", store.TokenSAD, "", now.Add(time.Hour)),
			newToken("at-expired", store.TokenAccess, "", now.Add(-time.Minute)),
		} {
			if err := tx.CreateToken(tok); err != nil {
				return err
			}
		}
		return nil
	})
	var start uint64
	view(t, s, func(tx store.Tx) (err error) { start, err = tx.RevocationGeneration(); return err })

	tests := []struct {
		name  string
		raise bool
		fn    func(tx store.Tx) error
	}{
		{"DeleteToken access", true, func(tx store.Tx) error { return tx.DeleteToken(store.Fingerprint("at-live")) }},
		{"DeleteTokensByCode", true, func(tx store.Tx) error {
			_, err := tx.DeleteTokensByCode(store.Fingerprint("code-at"))
			return err
		}},
		{"RevokeUser", true, func(tx store.Tx) error { _, err := tx.RevokeUser("alice"); return err }},
		{"RevokeClient", true, func(tx store.Tx) error { _, err := tx.RevokeClient("rp"); return err }},
		{"PutUser disabled", true, func(tx store.Tx) error {
			u, err := tx.User("alice")
			if err != nil {
				return err
			}
			u.Status = store.UserDisabled
			return tx.PutUser(u)
		}},
		{"DeleteUser", true, func(tx store.Tx) error { return tx.DeleteUser("bob") }},
		{"PutClient", true, func(tx store.Tx) error { return tx.PutClient(newClient("rp")) }},
		{"DeleteClient", true, func(tx store.Tx) error { return tx.DeleteClient("rp2") }},

		{"DeleteToken SAD", false, func(tx store.Tx) error { return tx.DeleteToken(store.Fingerprint("sad-live")) }},
		{"CreateToken", false, func(tx store.Tx) error {
			return tx.CreateToken(newToken("at-new", store.TokenAccess, "", now.Add(time.Hour)))
		}},
		{"PutUser failed login", false, func(tx store.Tx) error {
			u, err := tx.User("alice")
			if err != nil {
				return err
			}
			u.FailedPasswords++
			return tx.PutUser(u)
		}},
		{"SweepExpired", false, func(tx store.Tx) error {
			sw, err := tx.SweepExpired(now, 10)
			if err == nil && sw.Total() == 0 {
				err = errors.New("swept nothing: the fixture is wrong")
			}
			return err
		}},
		{"RevokeCredential without access tokens", false, func(tx store.Tx) error {
			_, err := tx.RevokeCredential("cred-1")
			return err
		}},
	}
	// Each write in a transaction that is rolled back, so all run on the
	// same fixture.
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			updateRolledBack(t, s, func(tx store.Tx) error {
				if err := tt.fn(tx); err != nil {
					return err
				}
				g, err := tx.RevocationGeneration()
				if err != nil {
					return err
				}
				if raised := g > start; raised != tt.raise || g < start {
					t.Errorf("generation %d after %s, was %d; want raised = %v", g, tt.name, start, tt.raise)
				}
				return nil
			})
			var g uint64
			view(t, s, func(tx store.Tx) (err error) { g, err = tx.RevocationGeneration(); return err })
			if g != start {
				t.Errorf("generation %d after a rolled-back %s, want %d", g, tt.name, start)
			}
		})
	}

	// A committed revocation is seen by every later reader, and the
	// generation never goes down.
	update(t, s, func(tx store.Tx) error { return tx.DeleteToken(store.Fingerprint("at-live")) })
	var g1 uint64
	view(t, s, func(tx store.Tx) (err error) { g1, err = tx.RevocationGeneration(); return err })
	if g1 <= start {
		t.Fatalf("generation %d after a committed revocation, want > %d", g1, start)
	}
	update(t, s, func(tx store.Tx) error { _, err := tx.RevokeClient("rp"); return err })
	var g2 uint64
	view(t, s, func(tx store.Tx) (err error) { g2, err = tx.RevocationGeneration(); return err })
	if g2 < g1 {
		t.Fatalf("generation went down: %d after %d", g2, g1)
	}
}
