package etcd_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/signd/signd/store"
	"github.com/signd/signd/store/etcd"
	"github.com/signd/signd/store/etcd/etcdtest"
)

func newUser(name string) *store.User {
	return &store.User{ID: "id-" + name, Username: name, Status: store.UserActive}
}

// TestGuardConflict: a write by another node between a transaction's read
// and its commit fails the commit; with one attempt allowed, Update gives
// up with ErrConflict (as store.ErrUnavailable) and writes nothing; with
// more, the rerun reads the other node's write and builds on it.
func TestGuardConflict(t *testing.T) {
	ctx := context.Background()
	prefix := server.Prefix()
	a := open(t, etcd.Options{Prefix: prefix, MaxAttempts: 1})
	b := open(t, etcd.Options{Prefix: prefix})
	if err := a.Update(ctx, func(tx store.Tx) error { return tx.CreateUser(newUser("alice")) }); err != nil {
		t.Fatal(err)
	}
	bump := func(db *etcd.DB) error {
		return db.Update(ctx, func(tx store.Tx) error {
			u, err := tx.User("alice")
			if err != nil {
				return err
			}
			u.FailedPINs++
			return tx.PutUser(u)
		})
	}
	runs := 0
	err := a.Update(ctx, func(tx store.Tx) error {
		runs++
		u, err := tx.User("alice")
		if err != nil {
			return err
		}
		if err := bump(b); err != nil { // the other node counts a failure meanwhile
			return err
		}
		u.FailedPINs++
		return tx.PutUser(u)
	})
	if !errors.Is(err, etcd.ErrConflict) || !errors.Is(err, store.ErrUnavailable) || runs != 1 {
		t.Fatalf("Update = %v after %d runs, want ErrConflict after 1", err, runs)
	}
	if got := etcd.FailedPINs(t, b); got != 1 {
		t.Fatalf("FailedPINs = %d, want 1 (the conflicting commit wrote nothing)", got)
	}

	c := open(t, etcd.Options{Prefix: prefix, MaxAttempts: 3})
	runs = 0
	err = c.Update(ctx, func(tx store.Tx) error {
		runs++
		u, err := tx.User("alice")
		if err != nil {
			return err
		}
		if runs == 1 {
			if err := bump(b); err != nil {
				return err
			}
		}
		u.FailedPINs++
		return tx.PutUser(u)
	})
	if err != nil || runs != 2 {
		t.Fatalf("Update = %v after %d runs, want nil after 2", err, runs)
	}
	if got := etcd.FailedPINs(t, b); got != 3 {
		t.Fatalf("FailedPINs = %d, want 3: no increment lost", got)
	}
}

// TestGuardRange: a transaction that listed a bucket conflicts with an
// insert into it by another node, though it never read the new key.
func TestGuardRange(t *testing.T) {
	ctx := context.Background()
	prefix := server.Prefix()
	a := open(t, etcd.Options{Prefix: prefix, MaxAttempts: 1})
	b := open(t, etcd.Options{Prefix: prefix})
	err := a.Update(ctx, func(tx store.Tx) error {
		users, err := tx.Users()
		if err != nil || len(users) != 0 {
			return errors.Join(err, errors.New("users at start"))
		}
		if err := b.Update(ctx, func(tx store.Tx) error { return tx.CreateUser(newUser("bob")) }); err != nil {
			return err
		}
		return tx.CreateUser(newUser("alice"))
	})
	if !errors.Is(err, etcd.ErrConflict) {
		t.Fatalf("Update = %v, want ErrConflict", err)
	}
}

// TestUnavailable: without the cluster, View and Update fail with
// store.ErrUnavailable within the request timeout (the daemon answers
// 503), Update commits nothing (and says so: its read failed, its commit
// was never sent), and Open refuses to start.
func TestUnavailable(t *testing.T) {
	dir := t.TempDir()
	srv, err := etcdtest.Start(dir)
	if err != nil {
		t.Fatal(err)
	}
	db, err := srv.Open(etcd.Options{RequestTimeout: 300 * time.Millisecond, DialTimeout: time.Second})
	if err != nil {
		srv.Close()
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	if err := db.Update(ctx, func(tx store.Tx) error { return tx.CreateUser(newUser("alice")) }); err != nil {
		t.Fatal(err)
	}
	srv.Close()

	start := time.Now()
	called := false
	err = db.Update(ctx, func(tx store.Tx) error {
		called = true
		u, err := tx.User("alice")
		if err != nil {
			return err
		}
		u.FailedPINs++
		return tx.PutUser(u)
	})
	if !errors.Is(err, store.ErrUnavailable) || !called {
		t.Errorf("Update without etcd = %v (fn called %v), want store.ErrUnavailable", err, called)
	}
	if store.MayHaveCommitted(err) {
		// Its read failed: the commit was never sent.
		t.Errorf("Update without etcd = %v: MayHaveCommitted, want a definite failure", err)
	}
	if err := db.View(ctx, func(tx store.Tx) error { _, err := tx.Users(); return err }); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("View without etcd = %v, want store.ErrUnavailable", err)
	}
	if err := db.Health(); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Health without etcd = %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("failing took %s: the request timeout does not bound it", d)
	}
	if _, err := etcd.Open(ctx, etcd.Options{Endpoints: srv.Endpoints, DialTimeout: 300 * time.Millisecond, RequestTimeout: 300 * time.Millisecond}); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Open without etcd = %v, want store.ErrUnavailable", err)
	}
	_ = os.RemoveAll(dir)
}

// TestOpenInvalid: Open refuses a configuration it cannot use.
func TestOpenInvalid(t *testing.T) {
	ctx := context.Background()
	if _, err := etcd.Open(ctx, etcd.Options{}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("Open without endpoints = %v, want store.ErrInvalid", err)
	}
	if _, err := etcd.Open(ctx, etcd.Options{Endpoints: server.Endpoints, Prefix: "/a\x00b/"}); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("Open with a NUL in the prefix = %v, want store.ErrInvalid", err)
	}
}
