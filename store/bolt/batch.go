package bolt

import (
	"context"
	"errors"
	"fmt"
	"runtime/trace"
	"sync"

	"go.etcd.io/bbolt"

	"github.com/signd/signd/store"
	"github.com/signd/signd/store/kv"
)

// batcher groups concurrent Batch calls into shared write transactions
// (group commit). There is no timer: the first caller commits at once;
// callers that arrive while a commit is in flight queue up and the next of
// them commits the whole queue in one transaction. So a lone caller pays
// one commit, and N concurrent callers pay about one commit (two fsyncs)
// per round instead of N.
type batcher struct {
	mu      sync.Mutex
	busy    bool // a leader is committing
	pending []*batchCall
}

type batchCall struct {
	fn   func(store.Tx) error
	done chan error    // buffered; receives the outcome
	lead chan struct{} // closed when this call must commit the queue
}

// batchPanic carries a panic of fn to the goroutine that called Batch.
type batchPanic struct{ v any }

func (p batchPanic) Error() string {
	return fmt.Sprintf("store: panic in batched transaction: %v", p.v)
}

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
	if err := ctx.Err(); err != nil {
		return err
	}
	c := &batchCall{fn: fn, done: make(chan error, 1), lead: make(chan struct{})}
	b := &db.batch
	b.mu.Lock()
	b.pending = append(b.pending, c)
	if !b.busy {
		b.busy = true
		close(c.lead)
	}
	b.mu.Unlock()

	// Regions for an execution trace (runtime/trace; no-ops without one):
	// the wait for a shared commit, and this call's commit as the leader.
	queued := trace.StartRegion(ctx, "store.queue")
	select {
	case err := <-c.done:
		queued.End()
		return rethrow(err)
	case <-c.lead:
	}
	queued.End()
	defer trace.StartRegion(ctx, "store.commit").End()
	// This call leads: commit everything queued so far (itself included),
	// then hand the lead to the first call that queued meanwhile.
	b.mu.Lock()
	calls := b.pending
	b.pending = nil
	b.mu.Unlock()
	db.commitBatch(calls)
	b.mu.Lock()
	if len(b.pending) > 0 {
		close(b.pending[0].lead)
	} else {
		b.busy = false
	}
	b.mu.Unlock()
	return rethrow(<-c.done)
}

func rethrow(err error) error {
	if p, ok := err.(batchPanic); ok {
		panic(p.v)
	}
	return err
}

// commitBatch runs calls in one transaction and delivers every outcome.
// If the shared transaction fails, each call is run again in a transaction
// of its own, so one failing function cannot fail the others.
func (db *DB) commitBatch(calls []*batchCall) {
	if len(calls) == 1 {
		calls[0].done <- db.updateOne(calls[0].fn)
		return
	}
	err := db.updateOne(func(t store.Tx) error {
		for _, c := range calls {
			if err := c.fn(t); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil || errors.Is(err, store.ErrUnavailable) {
		// Committed, or the store could not write at all: running each
		// function alone would fail the same way, one commit at a time.
		for _, c := range calls {
			c.done <- err
		}
		return
	}
	for _, c := range calls {
		c.done <- db.updateOne(c.fn)
	}
}

// updateOne is Update without the context check, turning a panic of fn
// into a batchPanic (bbolt has rolled back by then).
func (db *DB) updateOne(fn func(store.Tx) error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = batchPanic{v}
		}
	}()
	return db.update(func(btx *bbolt.Tx) error {
		return fn(kv.NewTx(boltTx{btx}, db.now))
	})
}
