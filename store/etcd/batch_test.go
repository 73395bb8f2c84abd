package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/signd/signd/store"
	"github.com/signd/signd/store/etcd"
	"github.com/signd/signd/store/etcd/etcdtest"
)

// sadHash is the fingerprint of SAD i.
func sadHash(i int) []byte { return store.Fingerprint(fmt.Sprint("sad-", i)) }

// createSADs stores SADs 0 … n-1 of alice, 10 per transaction (within
// etcd's default --max-txn-ops).
func createSADs(t *testing.T, db store.Store, n int) {
	t.Helper()
	for lo := 0; lo < n; lo += 10 {
		err := db.Update(context.Background(), func(tx store.Tx) error {
			for i := lo; i < min(lo+10, n); i++ {
				if err := tx.CreateToken(&store.Token{
					Hash: sadHash(i), Kind: store.TokenSAD, ClientID: "rp", Username: "alice",
					CredentialID: "cred-1", Hashes: [][]byte{make([]byte, 32)}, ExpiresAt: time.Now().Add(time.Hour),
				}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// consume is the commit of a granted signHash: read SAD i, delete it,
// append the audit entry of its use (User names i).
func consume(tx store.Tx, i int) error {
	if _, err := tx.Token(sadHash(i)); err != nil {
		return err
	}
	if err := tx.DeleteToken(sadHash(i)); err != nil {
		return err
	}
	return tx.AppendAudit(&store.AuditEntry{Kind: store.AuditSignHash, User: fmt.Sprint(i), Outcome: store.AuditGranted})
}

// queued starts n Batch calls behind a first one whose function holds the
// commit until all n are queued, so that they share the next transaction;
// fn is the function of call i (0 is the first). It returns each call's
// error.
func queued(t *testing.T, db *etcd.DB, n int, fn func(tx store.Tx, i int) error) []error {
	t.Helper()
	ctx := context.Background()
	errs := make([]error, n+1)
	release := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	wg.Go(func() {
		errs[0] = batch(ctx, db, func(tx store.Tx) error {
			<-release
			return fn(tx, 0)
		})
	})
	// The first call leads once nothing else is queued: then it waits.
	waitFor(t, func() bool { return db.Stats().BatchRuns == 1 })
	for i := 1; i <= n; i++ {
		wg.Go(func() { errs[i] = batch(ctx, db, func(tx store.Tx) error { return fn(tx, i) }) })
	}
	waitFor(t, func() bool { return db.QueuedBatch() == n })
	once.Do(func() { close(release) })
	wg.Wait()
	return errs
}

// panicked is a panic that Batch re-raised in its caller.
type panicked struct{ v any }

func (p panicked) Error() string { return fmt.Sprint("panic: ", p.v) }

// batch calls db.Batch and returns a panic it re-raised as panicked.
func batch(ctx context.Context, db *etcd.DB, fn func(store.Tx) error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = panicked{v}
		}
	}()
	return db.Batch(ctx, fn)
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
	}
}

// auditUsers verifies the chain and returns how often each User appears.
func auditUsers(t *testing.T, db store.Store) map[string]int {
	t.Helper()
	users := map[string]int{}
	err := db.View(context.Background(), func(tx store.Tx) error {
		if _, _, err := store.VerifyAudit(tx); err != nil {
			return err
		}
		return store.AuditEntries(tx, 1, func(e *store.AuditEntry) error {
			users[e.User]++
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return users
}

func sadExists(t *testing.T, db store.Store, i int) bool {
	t.Helper()
	var ok bool
	err := db.View(context.Background(), func(tx store.Tx) error {
		_, err := tx.Token(sadHash(i))
		ok = err == nil
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// TestBatchGroupCommit: calls queued while a commit is in flight share
// the next one: 1 + 40 consumptions in two etcd Txns, each SAD consumed,
// each audit entry once in one intact chain, in commit order.
func TestBatchGroupCommit(t *testing.T) {
	db := open(t, etcd.Options{MaxBatch: 64, MaxTxnOps: 1 << 16})
	const n = 40
	createSADs(t, db, n+1)
	before := db.Stats()
	errs := queued(t, db, n, consume)
	for i, err := range errs {
		if err != nil {
			t.Errorf("call %d: %v", i, err)
		}
	}
	st := db.Stats()
	if got := st.Commits - before.Commits; got != 2 {
		t.Errorf("%d etcd Txns for %d calls, want 2 (the first alone, then the queue)", got, n+1)
	}
	if got := st.BatchCalls - before.BatchCalls; got != n+1 {
		t.Errorf("BatchCalls = %d, want %d", got, n+1)
	}
	users := auditUsers(t, db)
	for i := range n + 1 {
		if users[fmt.Sprint(i)] != 1 || sadExists(t, db, i) {
			t.Errorf("call %d: %d audit entries, SAD left %v", i, users[fmt.Sprint(i)], sadExists(t, db, i))
		}
	}
}

// TestBatchIsolatesFailure: in one shared transaction, a function that
// fails after writing, and one that panics, are rolled back alone: their
// callers get their error (or panic), none of their writes lands, and
// every other call commits in the same etcd Txn.
func TestBatchIsolatesFailure(t *testing.T) {
	db := open(t, etcd.Options{MaxBatch: 64, MaxTxnOps: 1 << 16})
	const n = 20
	createSADs(t, db, n+1)
	boom := errors.New("boom")
	before := db.Stats()
	errs := queued(t, db, n, func(tx store.Tx, i int) error {
		if err := consume(tx, i); err != nil {
			return err
		}
		switch i {
		case 7:
			return boom
		case 13:
			panic("kaboom")
		}
		return nil
	})
	for i, err := range errs {
		var p panicked
		switch {
		case i == 7 && !errors.Is(err, boom),
			i == 13 && (!errors.As(err, &p) || p.v != "kaboom"),
			i != 7 && i != 13 && err != nil:
			t.Errorf("call %d: %v", i, err)
		}
	}
	if got := db.Stats().Commits - before.Commits; got != 2 {
		t.Errorf("%d etcd Txns, want 2", got)
	}
	users := auditUsers(t, db)
	for i := range n + 1 {
		failed := i == 7 || i == 13
		if got := users[fmt.Sprint(i)]; got != map[bool]int{true: 0, false: 1}[failed] || sadExists(t, db, i) != failed {
			t.Errorf("call %d (failing %v): %d audit entries, SAD left %v", i, failed, got, sadExists(t, db, i))
		}
	}
}

// TestBatchDefaultFits: DefaultMaxBatch signHash consumptions (the
// credential, client and user read as signHash does, the SAD issued for a
// code, so with a tokens_by_code entry) fit in one etcd Txn of
// DefaultMaxTxnOps operations and comparisons: a shared signHash commit is
// never split at the defaults.
func TestBatchDefaultFits(t *testing.T) {
	db := open(t, etcd.Options{})
	n := etcd.DefaultMaxBatch
	err := db.Update(context.Background(), func(tx store.Tx) error {
		for i := range n {
			if err := tx.CreateToken(&store.Token{
				Hash: sadHash(i), Kind: store.TokenSAD, ClientID: "rp", Username: "alice", CredentialID: "cred-1",
				Hashes: [][]byte{make([]byte, 32)}, ExpiresAt: time.Now().Add(time.Hour), CodeHash: store.Fingerprint("code"),
			}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	signHash := func(i int) func(tx store.Tx) error {
		return func(tx store.Tx) error {
			_, _ = tx.Credential("cred-1") // absent here: a read all the same
			_, _ = tx.Client("rp")
			_, _ = tx.User("alice")
			return consume(tx, i)
		}
	}
	ops1, cmps1, _, err := db.TxnSize(signHash(0))
	if err != nil {
		t.Fatal(err)
	}
	var fns []func(store.Tx) error
	for i := range n {
		fns = append(fns, signHash(i))
	}
	ops, cmps, size, err := db.TxnSize(fns...)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("one consumption: %d operations, %d comparisons; %d: %d operations, %d comparisons, %d bytes", ops1, cmps1, n, ops, cmps, size)
	if ops > etcd.DefaultMaxTxnOps || cmps > etcd.DefaultMaxTxnOps || size > 1<<20 {
		t.Errorf("%d consumptions: %d operations, %d comparisons, %d bytes; want at most %d, %d, 1 MiB",
			n, ops, cmps, size, etcd.DefaultMaxTxnOps, etcd.DefaultMaxTxnOps)
	}
}

// TestBatchConflictReruns: another node appends to the audit chain while
// a shared transaction of this node runs; its commit fails the guard on
// the chain head, every function of it runs again on a fresh snapshot,
// and each effect lands exactly once: every SAD consumed, every audit
// entry once, the other node's entry too, in one intact chain.
func TestBatchConflictReruns(t *testing.T) {
	prefix := server.Prefix()
	a := open(t, etcd.Options{Prefix: prefix, MaxBatch: 64, MaxTxnOps: 1 << 16})
	b := open(t, etcd.Options{Prefix: prefix})
	const n = 10
	createSADs(t, a, n+1)
	runs := make([]atomic.Int32, n+1)
	var other sync.Once
	before := a.Stats()
	errs := queued(t, a, n, func(tx store.Tx, i int) error {
		runs[i].Add(1)
		if err := consume(tx, i); err != nil {
			return err
		}
		if i != n {
			return nil
		}
		var err error
		other.Do(func() {
			err = b.Update(context.Background(), func(tx store.Tx) error {
				return tx.AppendAudit(&store.AuditEntry{Kind: store.AuditSignHash, User: "other", Outcome: store.AuditGranted})
			})
		})
		return err
	})
	for i, err := range errs {
		if err != nil {
			t.Errorf("call %d: %v", i, err)
		}
	}
	st := a.Stats()
	if got := st.Conflicts - before.Conflicts; got != 1 {
		t.Errorf("%d conflicts, want 1", got)
	}
	for i := 1; i <= n; i++ {
		if got := runs[i].Load(); got != 2 {
			t.Errorf("call %d ran %d times, want 2 (the conflict reruns the whole shared transaction)", i, got)
		}
	}
	users := auditUsers(t, a)
	if users["other"] != 1 {
		t.Errorf("the other node's entry: %d times", users["other"])
	}
	for i := range n + 1 {
		if users[fmt.Sprint(i)] != 1 || sadExists(t, a, i) {
			t.Errorf("call %d: %d audit entries, SAD left %v", i, users[fmt.Sprint(i)], sadExists(t, a, i))
		}
	}
}

// TestBatchSplit: on a cluster with etcd's default --max-txn-ops (128),
// 30 consumptions queued at once (8 operations each, plus 5 shared) are
// committed in as many Txns as the limits need, each within them, and
// all succeed. A DB told the cluster takes more sees its shared commit
// refused (the limit is real): every caller gets store.ErrUnavailable.
func TestBatchSplit(t *testing.T) {
	srv := etcd.StartEmbedded(t)
	const n = 30
	for _, tc := range []struct {
		name    string
		opts    etcd.Options
		txns    uint64 // etcd Txns for 1 + n calls
		refused bool
	}{
		{"defaults: DefaultMaxBatch per Txn", etcd.Options{}, 1 + 3, false},
		{"64 per batch: split at 128 operations", etcd.Options{MaxBatch: 64}, 1 + 2, false},
		{"64 per batch, limit unknown: refused", etcd.Options{MaxBatch: 64, MaxTxnOps: 1 << 16}, 1 + 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Endpoints = srv
			tc.opts.Prefix = fmt.Sprintf("/split-%d/", time.Now().UnixNano())
			db, err := etcd.Open(context.Background(), tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			createSADs(t, db, n+1)
			before := db.Stats()
			errs := queued(t, db, n, consume)
			for i, err := range errs {
				if refused := i > 0 && tc.refused; refused != errors.Is(err, store.ErrUnavailable) || !refused && err != nil {
					t.Errorf("call %d: %v", i, err)
				}
			}
			if got := db.Stats().Commits - before.Commits; got != tc.txns {
				t.Errorf("%d etcd Txns, want %d", got, tc.txns)
			}
			users := auditUsers(t, db)
			for i := range n + 1 {
				done := i == 0 || !tc.refused
				if (users[fmt.Sprint(i)] == 1) != done || sadExists(t, db, i) == done {
					t.Errorf("call %d (committed %v): %d audit entries, SAD left %v", i, done, users[fmt.Sprint(i)], sadExists(t, db, i))
				}
			}
		})
	}
}

// TestBatchUnavailable: when the commit of a shared transaction fails
// (the cluster went away: its outcome is unknown), every caller of that
// transaction gets store.ErrUnavailable, none a success.
func TestBatchUnavailable(t *testing.T) {
	srv, err := etcdtest.Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var stop sync.Once
	defer stop.Do(srv.Close)
	db, err := srv.Open(etcd.Options{MaxBatch: 64, MaxTxnOps: 1 << 16, RequestTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const n = 8
	createSADs(t, db, n+1)
	errs := queued(t, db, n, func(tx store.Tx, i int) error {
		if err := consume(tx, i); err != nil {
			return err
		}
		if i == n {
			stop.Do(srv.Close) // after the last read, before the commit
		}
		return nil
	})
	if errs[0] != nil {
		t.Errorf("call 0 (committed alone before): %v", errs[0])
	}
	for i, err := range errs[1:] {
		if !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("call %d: %v, want store.ErrUnavailable", i+1, err)
		}
	}
}
