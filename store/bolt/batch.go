package bolt

import (
	"context"
	"errors"

	"go.etcd.io/bbolt"

	"github.com/signd/signd/store"
	"github.com/signd/signd/store/kv"
	"github.com/signd/signd/store/kv/groupcommit"
)

// Batch runs fn in a write transaction that it may share with concurrent
// Batch calls. It has Update's guarantees for fn — atomic, and either every
// write of fn is committed or none is — with one difference: fn may be
// called more than once (when another function of the same shared
// transaction fails, each is run again alone), so fn must reset whatever it
// records outside the transaction each time it starts, and the caller may
// trust only what the last call recorded once Batch returned nil. Batch
// returns fn's error as Update would; a panic in fn is re-raised in the
// caller's goroutine. ctx is only checked before fn is queued.
//
// Use it for small, independent, frequent writes (consuming a SAD with its
// audit entry); the durability is Update's: Batch returns after the fsync.
func (db *DB) Batch(ctx context.Context, fn func(store.Tx) error) error {
	return db.batch.Run(ctx, fn, db.commitBatch)
}

// commitBatch runs calls in one transaction and delivers every outcome.
// If the shared transaction fails, each call is run again in a transaction
// of its own, so one failing function cannot fail the others.
func (db *DB) commitBatch(calls []*groupcommit.BatchCall) []*groupcommit.BatchCall {
	if len(calls) == 1 {
		calls[0].Deliver(db.updateOne(calls[0].Fn))
		return nil
	}
	err := db.updateOne(func(t store.Tx) error {
		for _, c := range calls {
			if err := c.Fn(t); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil || errors.Is(err, store.ErrUnavailable) {
		// Committed, or the store could not write at all: running each
		// function alone would fail the same way, one commit at a time.
		for _, c := range calls {
			c.Deliver(err)
		}
		return nil
	}
	for _, c := range calls {
		c.Deliver(db.updateOne(c.Fn))
	}
	return nil
}

// updateOne is Update without the context check, turning a panic of fn
// into a groupcommit.BatchPanic (bbolt has rolled back by then).
func (db *DB) updateOne(fn func(store.Tx) error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = groupcommit.BatchPanic{V: v}
		}
	}()
	return db.update(func(btx *bbolt.Tx) error {
		return fn(kv.NewTx(boltTx{btx}, db.now))
	})
}
