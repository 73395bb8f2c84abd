package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/signd/signd/store"
)

// Transactions.

func testReadOnly(t *testing.T, s store.Store) {
	createUsers(t, s, "alice")
	update(t, s, func(tx store.Tx) error {
		if err := tx.CreateClient(newClient("rp")); err != nil {
			return err
		}
		return tx.CreateCredential(newCredential("c1", "alice"))
	})
	writes := []struct {
		name string
		fn   func(tx store.Tx) error
	}{
		{"CreateUser", func(tx store.Tx) error { return tx.CreateUser(newUser(t, "bob")) }},
		{"PutUser", func(tx store.Tx) error {
			u, err := tx.User("alice")
			if err != nil {
				return err
			}
			u.FailedPasswords++
			return tx.PutUser(u)
		}},
		{"PutProof", func(tx store.Tx) error {
			return tx.PutProof("alice", store.Proof{ProofRef: store.ProofRef{ID: "p", ContentType: store.ProofPNG}, Content: []byte("x")})
		}},
		{"CreateClient", func(tx store.Tx) error { return tx.CreateClient(newClient("rp2")) }},
		{"PutClient", func(tx store.Tx) error { return tx.PutClient(newClient("rp")) }},
		{"DeleteClient", func(tx store.Tx) error { return tx.DeleteClient("rp") }},
		{"CreateCredential", func(tx store.Tx) error { return tx.CreateCredential(newCredential("c2", "alice")) }},
		{"PutCredential", func(tx store.Tx) error {
			c, err := tx.Credential("c1")
			if err != nil {
				return err
			}
			c.Status = store.CredentialDisabled
			return tx.PutCredential(c)
		}},
	}
	for _, w := range writes {
		t.Run(w.name, func(t *testing.T) {
			err := s.View(context.Background(), w.fn)
			wantErr(t, w.name+" in View", err, store.ErrReadOnly)
		})
	}
	u := getUser(t, s, "alice")
	if u.FailedPasswords != 0 || len(u.Proofs) != 0 {
		t.Errorf("a write in View changed alice: %+v", u)
	}
	view(t, s, func(tx store.Tx) error {
		if _, err := tx.User("bob"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("CreateUser in View stored bob (err %v)", err)
		}
		if _, err := tx.Client("rp"); err != nil {
			t.Errorf("DeleteClient in View deleted rp: %v", err)
		}
		if c, err := tx.Credential("c1"); err != nil || c.Status != store.CredentialPending {
			t.Errorf("PutCredential in View changed c1: %+v %v", c, err)
		}
		return nil
	})
}

// writeEverything writes one record of each kind and changes existing ones,
// so a rollback test can check none of it survived.
func writeEverything(t *testing.T, tx store.Tx) {
	t.Helper()
	steps := []func() error{
		func() error { return tx.CreateUser(newUser(t, "bob")) },
		func() error {
			u, err := tx.User("alice")
			if err != nil {
				return err
			}
			u.FailedPasswords = 3
			return tx.PutUser(u)
		},
		func() error {
			return tx.PutProof("alice", store.Proof{ProofRef: store.ProofRef{ID: "p", ContentType: store.ProofPNG}, Content: []byte("x")})
		},
		func() error { return tx.CreateClient(newClient("rp2")) },
		func() error { return tx.DeleteClient("rp") },
		func() error { return tx.CreateCredential(newCredential("c2", "bob")) },
		func() error {
			c, err := tx.Credential("c1")
			if err != nil {
				return err
			}
			c.Owner = "bob"
			return tx.PutCredential(c)
		},
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("write %d inside Update: %v", i, err)
		}
	}
}

func setupRollback(t *testing.T, s store.Store) {
	createUsers(t, s, "alice")
	update(t, s, func(tx store.Tx) error {
		if err := tx.CreateClient(newClient("rp")); err != nil {
			return err
		}
		return tx.CreateCredential(newCredential("c1", "alice"))
	})
}

func checkRolledBack(t *testing.T, s store.Store) {
	t.Helper()
	view(t, s, func(tx store.Tx) error {
		users, err := tx.Users()
		if err != nil {
			return err
		}
		if len(users) != 1 || users[0].Username != "alice" || users[0].FailedPasswords != 0 || len(users[0].Proofs) != 0 {
			t.Errorf("users after rollback: %+v", users)
		}
		if _, err := tx.Proof("alice", "p"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("proof after rollback: %v", err)
		}
		clients, err := tx.Clients()
		if err != nil {
			return err
		}
		if len(clients) != 1 || clients[0].ID != "rp" {
			t.Errorf("clients after rollback: %+v", clients)
		}
		creds, err := tx.Credentials("", "", 0)
		if err != nil {
			return err
		}
		if ids := credentialIDs(creds); !slices.Equal(ids, []string{"c1"}) || creds[0].Owner != "alice" {
			t.Errorf("credentials after rollback: %+v", creds)
		}
		if ids := credentialIDs(mustList(t, tx, "alice")); !slices.Equal(ids, []string{"c1"}) {
			t.Errorf("alice's credentials after rollback: %v", ids)
		}
		if ids := credentialIDs(mustList(t, tx, "bob")); len(ids) != 0 {
			t.Errorf("bob's credentials after rollback: %v", ids)
		}
		return nil
	})
}

func mustList(t *testing.T, tx store.Tx, owner string) []store.Credential {
	t.Helper()
	cs, err := tx.Credentials(owner, "", 0)
	if err != nil {
		t.Fatalf("Credentials(%q): %v", owner, err)
	}
	return cs
}

func testRollbackOnError(t *testing.T, s store.Store) {
	setupRollback(t, s)
	boom := errors.New("boom")
	err := s.Update(context.Background(), func(tx store.Tx) error {
		writeEverything(t, tx)
		return fmt.Errorf("wrapped: %w", boom)
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Update returned %v, want fn's error", err)
	}
	checkRolledBack(t, s)
}

func testRollbackOnPanic(t *testing.T, s store.Store) {
	setupRollback(t, s)
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Errorf("recovered %v, want the panic of fn", r)
			}
		}()
		_ = s.Update(context.Background(), func(tx store.Tx) error {
			writeEverything(t, tx)
			panic("boom")
		})
		t.Error("Update did not re-panic")
	}()
	checkRolledBack(t, s)
	// The write lock was released: another Update works.
	createUsers(t, s, "carol")
}

func testCanceledContext(t *testing.T, s store.Store) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	called := false
	fn := func(store.Tx) error { called = true; return nil }
	wantErr(t, "View with canceled ctx", s.View(ctx, fn), context.Canceled)
	wantErr(t, "Update with canceled ctx", s.Update(ctx, fn), context.Canceled)
	wantErr(t, "Fence with canceled ctx", s.Fence(ctx, fn), context.Canceled)
	if called {
		t.Error("fn was called with a canceled context")
	}
}

// testFence: a fence reads and writes as an Update, commits what its
// function writes and rolls back on its error; store.Settle reads
// through it only for a failure that may have committed.
func testFence(t *testing.T, s store.Store) {
	ctx := context.Background()
	createUsers(t, s, "alice")
	err := s.Fence(ctx, func(tx store.Tx) error {
		if _, err := tx.User("alice"); err != nil {
			return err
		}
		return tx.CreateUser(newUser(t, "bob"))
	})
	if err != nil {
		t.Fatalf("Fence: %v", err)
	}
	getUser(t, s, "bob")
	boom := errors.New("boom")
	err = s.Fence(ctx, func(tx store.Tx) error {
		if err := tx.CreateUser(newUser(t, "carol")); err != nil {
			return err
		}
		return boom
	})
	wantErr(t, "Fence whose function fails", err, boom)
	err = s.View(ctx, func(tx store.Tx) error { _, err := tx.User("carol"); return err })
	wantErr(t, "carol after a failed Fence", err, store.ErrNotFound)

	user := func(name string) func(store.Tx) error {
		return func(tx store.Tx) error { _, err := tx.User(name); return err }
	}
	lost := fmt.Errorf("%w: the answer was lost", store.ErrOutcomeUnknown)
	for _, tt := range []struct {
		name  string
		err   error
		found func(store.Tx) error
		want  store.Fate
	}{
		{"definite failure: no read", store.ErrUnavailable, func(store.Tx) error { t.Error("Settle read after a definite failure"); return nil }, store.NotCommitted},
		{"outcome unknown, stored", lost, user("alice"), store.Committed},
		{"outcome unknown, absent", lost, user("dave"), store.NotCommitted},
		{"outcome unknown, the read fails", lost, func(store.Tx) error { return boom }, store.FateUnknown},
	} {
		fate, err := store.Settle(ctx, s, tt.err, tt.found)
		if fate != tt.want || (err != nil) != (tt.want == store.FateUnknown) {
			t.Errorf("%s: Settle = %v, %v; want %v", tt.name, fate, err, tt.want)
		}
	}
}

// Copies.

func testCopies(t *testing.T, s store.Store) {
	createUsers(t, s, "alice")
	rp := newClient("rp")
	cred := newCredential("c1", "alice")
	cred.Status = store.CredentialEnabled
	cred.Chain = [][]byte{[]byte("leaf"), []byte("ca")}
	update(t, s, func(tx store.Tx) error {
		if err := tx.CreateClient(rp); err != nil {
			return err
		}
		if err := tx.CreateCredential(cred); err != nil {
			return err
		}
		return tx.PutProof("alice", store.Proof{ProofRef: store.ProofRef{ID: "p", ContentType: store.ProofPNG}, Content: []byte("png")})
	})
	// Mutating what was passed in after the write changes nothing stored.
	rp.RedirectURIs[0] = "https://evil.example/cb"
	cred.KeyID[0] = 'X'
	cred.Chain[0][0] = 'X'

	// Mutating what was read, inside and after the transaction, changes
	// nothing stored.
	var (
		u     *store.User
		c     *store.Client
		cr    *store.Credential
		list  []store.Credential
		proof *store.Proof
	)
	view(t, s, func(tx store.Tx) (err error) {
		if u, err = tx.User("alice"); err != nil {
			return err
		}
		if c, err = tx.Client("rp"); err != nil {
			return err
		}
		if cr, err = tx.Credential("c1"); err != nil {
			return err
		}
		if list, err = tx.Credentials("alice", "", 0); err != nil {
			return err
		}
		if proof, err = tx.Proof("alice", "p"); err != nil {
			return err
		}
		u.Claims["given_name"] = "Mallory"
		u.Proofs[0].SHA256 = "forged"
		c.RedirectURIs[0] = "https://evil.example/cb"
		c.Scopes[0] = "admin"
		cr.KeyID[0] = 'Y'
		cr.Chain[0][0] = 'Y'
		return nil
	})
	// Values stay intact after the transaction ended.
	if string(proof.Content) != "png" || string(list[0].Chain[0]) != "leaf" || list[0].ID != "c1" {
		t.Errorf("records read in View changed after it ended: %q %q", proof.Content, list[0].Chain[0])
	}
	proof.Content[0] = 'X'
	list[0].Chain[1][0] = 'X'
	list[0].KeyID[0] = 'X'
	createUsers(t, s, "bob") // a write after the reads, in case pages move

	view(t, s, func(tx store.Tx) error {
		u2, err := tx.User("alice")
		if err != nil {
			return err
		}
		if u2.Claims["given_name"] != "Ann" || u2.Proofs[0].SHA256 == "forged" {
			t.Errorf("mutating a returned user changed the store: %+v", u2)
		}
		c2, err := tx.Client("rp")
		if err != nil {
			return err
		}
		if c2.RedirectURIs[0] != "https://rp.example.com/cb" || c2.Scopes[0] != "service" {
			t.Errorf("mutating a client changed the store: %+v", c2)
		}
		cr2, err := tx.Credential("c1")
		if err != nil {
			return err
		}
		if string(cr2.KeyID) != "key-c1" || string(cr2.Chain[0]) != "leaf" || string(cr2.Chain[1]) != "ca" {
			t.Errorf("mutating a credential changed the store: %q %q", cr2.KeyID, cr2.Chain)
		}
		p2, err := tx.Proof("alice", "p")
		if err != nil {
			return err
		}
		if string(p2.Content) != "png" {
			t.Errorf("mutating a proof changed the store: %q", p2.Content)
		}
		return nil
	})
}

// Concurrency.

func testConcurrentUpdates(t *testing.T, s store.Store) {
	const n = 16
	createUsers(t, s, "alice")
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for range n {
		wg.Go(func() {
			errs <- s.Update(context.Background(), func(tx store.Tx) error {
				u, err := tx.User("alice")
				if err != nil {
					return err
				}
				u.FailedPasswords++
				return tx.PutUser(u)
			})
		})
		wg.Go(func() { // concurrent readers never see a torn record
			errs <- s.View(context.Background(), func(tx store.Tx) error {
				u, err := tx.User("alice")
				if err == nil && (u.FailedPasswords < 0 || u.FailedPasswords > n) {
					return fmt.Errorf("read FailedPasswords %d", u.FailedPasswords)
				}
				return err
			})
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if got := getUser(t, s, "alice").FailedPasswords; got != n {
		t.Errorf("FailedPasswords = %d after %d concurrent increments", got, n)
	}
}
