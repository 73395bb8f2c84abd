package memory

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/btree"

	"github.com/signd/signd/store"
	"github.com/signd/signd/store/kv"
)

// Errors of this backend besides the store sentinels.
var (
	// ErrClosed is returned by View, Update, Batch and Secret after Close.
	ErrClosed = errors.New("store: memory store is closed")
	// ErrTxDone is returned by a write on a Tx whose function has returned.
	ErrTxDone = errors.New("store: transaction has ended")
)

// Options configure New.
type Options struct {
	// Now is the clock for CreatedAt/UpdatedAt and unstamped audit
	// entries; nil means time.Now.
	Now func() time.Time
}

// DB is an in-memory store.Store. It is safe for concurrent use.
type DB struct {
	now func() time.Time

	// committed is the last committed snapshot; nil after Close. Its
	// trees are never written.
	committed atomic.Pointer[snapshot]
	// writer serializes write transactions.
	writer sync.Mutex

	// gate counts running transactions for Close.
	gate store.Gate
}

var (
	_ store.Store   = (*DB)(nil)
	_ store.Batcher = (*DB)(nil)
)

// New returns an empty store with every bucket of kv.BucketNames.
func New(opts Options) *DB {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	s := snapshot{}
	for _, name := range kv.BucketNames() {
		s[name] = btree.NewG(degree, less)
	}
	db := &DB{now: now}
	db.committed.Store(&s)
	return db
}

// View runs fn in a read-only transaction on the committed snapshot; see
// store.Store.
func (db *DB) View(ctx context.Context, fn func(store.Tx) error) error {
	return db.gate.Run(ctx, ErrClosed, func() error { return db.run(*db.committed.Load(), false, fn) })
}

// Update runs fn in one write transaction; see store.Store. Write
// transactions are serialized; fn works on a copy-on-write clone of the
// committed snapshot, which replaces it only if fn returns nil.
func (db *DB) Update(ctx context.Context, fn func(store.Tx) error) error {
	return db.gate.Run(ctx, ErrClosed, func() error {
		db.writer.Lock()
		defer db.writer.Unlock()
		work := db.committed.Load().clone()
		if err := db.run(work, true, fn); err != nil {
			return err // also when fn panics: the clone is dropped
		}
		db.committed.Store(&work)
		return nil
	})
}

// Fence is Update (see store.Store): a commit is a pointer swap that
// either happened or did not before Update returned.
func (db *DB) Fence(ctx context.Context, fn func(store.Tx) error) error {
	return db.Update(ctx, fn)
}

// run runs fn in a store transaction over s; the transaction ends with fn.
func (db *DB) run(s snapshot, writable bool, fn func(store.Tx) error) error {
	t := &txn{s: s, writable: writable}
	defer func() { t.done = true }()
	return fn(kv.NewTx(t, db.now))
}

// Batch runs fn in a write transaction: csc.Store's group commit. With no
// commit to share it is Update, so fn runs exactly once (the contract of
// Batch allows more).
func (db *DB) Batch(ctx context.Context, fn func(store.Tx) error) error {
	return db.Update(ctx, fn)
}

// Close waits for running transactions, then drops every record. Later
// calls fail with ErrClosed; closing again does nothing.
func (db *DB) Close() error {
	db.gate.Close()
	db.committed.Store(nil)
	return nil
}

// Secret returns the random key stored under name, creating it with size
// bytes from crypto/rand on first use; a stored key of another size is an
// error (the name is reused for something else). The same contract as
// bolt's DB.Secret, except that the key lives as long as the DB.
func (db *DB) Secret(ctx context.Context, name string, size int) ([]byte, error) {
	return kv.Secret(ctx, db, name, size)
}
