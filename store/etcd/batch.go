package etcd

import (
	"context"
	"fmt"

	"github.com/signd/signd/store"
	"github.com/signd/signd/store/kv"
	"github.com/signd/signd/store/kv/groupcommit"
)

// Batch runs fn in a write transaction that it may share with concurrent
// Batch calls of this DB: store.Batcher, with Update's guarantees for fn —
// either every write of fn commits or none does, and what fn read is
// unchanged when its writes commit — but fn may run more than once (when
// the shared commit conflicts with another node, every function of it runs
// again on a fresh snapshot), so it must reset whatever it records outside
// the transaction each time it starts, and the caller may trust only what
// the last run recorded once Batch returned nil.
//
// A function that fails (or panics) is rolled back to the savepoint taken
// before it ran: its writes are dropped, its error (or panic) reaches its
// caller alone, and the others commit. A commit whose outcome is unknown
// (its answer lost) reaches every caller of the shared transaction as
// store.ErrOutcomeUnknown; a failed read, and a commit that conflicted
// Options.MaxAttempts times, as plain store.ErrUnavailable. ctx is
// only checked before fn is queued.
func (db *DB) Batch(ctx context.Context, fn func(store.Tx) error) error {
	return db.gate.Run(ctx, ErrClosed, func() error { return db.batch.Run(ctx, fn, db.commitBatch) })
}

// commitBatch runs calls in one transaction, retried on conflict, and
// delivers the outcome of those that committed; it returns the calls that
// did not fit into the etcd Txn (calls[0] always fits), to be committed
// next.
func (db *DB) commitBatch(calls []*groupcommit.BatchCall) []*groupcommit.BatchCall {
	db.writer.Lock()
	defer db.writer.Unlock()
	for attempt := range db.attempts {
		if attempt > 0 {
			_ = backoff(context.Background(), attempt)
		}
		errs, n, ok, err := db.attemptBatch(calls)
		if err != nil {
			// Unknown outcome or a failed read: nothing is known to have
			// committed, and no caller may act as if it had.
			for _, c := range calls {
				c.Deliver(err)
			}
			return nil
		}
		if ok {
			db.stats.calls.Add(uint64(n))
			for i, c := range calls[:n] {
				c.Deliver(errs[i])
			}
			return calls[n:]
		}
	}
	err := fmt.Errorf("%w: %w (%d attempts)", store.ErrUnavailable, ErrConflict, db.attempts)
	for _, c := range calls {
		c.Deliver(err)
	}
	return nil
}

// attemptBatch runs the functions of calls in order in one transaction,
// each after a savepoint, and commits. errs holds each function's own
// outcome (nil, its error or a groupcommit.BatchPanic; the failed ones rolled back); n
// is how many ran and commit: a function after the first whose writes
// would make the Txn exceed the etcd limits is rolled back and ends the
// batch there. ok is false when the guard failed; err is a failed read
// (store.ErrUnavailable) or commit (store.ErrOutcomeUnknown once sent).
func (db *DB) attemptBatch(calls []*groupcommit.BatchCall) (errs []error, n int, ok bool, err error) {
	t := newTxn(context.Background(), db, true)
	defer func() { t.done = true }()
	errs = make([]error, len(calls))
	n = len(calls)
	for i, c := range calls {
		sp := t.savepoint()
		db.stats.runs.Add(1)
		errs[i] = groupcommit.Recovered(c.Fn, kv.NewTx(t, db.now))
		if t.err != nil {
			return nil, 0, false, t.err
		}
		if errs[i] != nil {
			// The function's writes go; its reads stay in the guard, so
			// that its failure was decided on the state that commits.
			t.rollback(sp, false)
		}
		if i > 0 && !t.fits(db.maxTxnOps, maxBatchBytes) {
			t.rollback(sp, true)
			n = i
			break
		}
	}
	ok, err = t.commit()
	return errs[:n], n, ok, err
}

// savepoint marks the lengths of the transaction's journals.
type savepoint struct{ undo, reads, ranged int }

func (t *txn) savepoint() savepoint {
	return savepoint{len(t.undo), len(t.readLog), len(t.rangedLog)}
}

// rollback undoes the writes buffered since sp, newest first, and with
// reads also takes the keys and buckets read since sp out of the guard
// (their cached values stay: they are the snapshot's).
func (t *txn) rollback(sp savepoint, reads bool) {
	for i := len(t.undo) - 1; i >= sp.undo; i-- {
		u := t.undo[i]
		o := t.overlay(u.bucket, false)
		if u.had {
			o.ReplaceOrInsert(u.prev)
		} else {
			o.Delete(write{key: u.key})
		}
	}
	t.undo = t.undo[:sp.undo]
	if !reads {
		return
	}
	for _, k := range t.readLog[sp.reads:] {
		delete(t.reads, k)
	}
	t.readLog = t.readLog[:sp.reads]
	for _, b := range t.rangedLog[sp.ranged:] {
		delete(t.ranged, b)
	}
	t.rangedLog = t.rangedLog[:sp.ranged]
}

// maxBatchBytes bounds the request of a shared commit: below etcd's
// default --max-request-bytes (1.5 MiB), whatever the cluster allows. A
// lone function's transaction may be larger (a proof document): it is
// sent alone.
const maxBatchBytes = 1 << 20

// opBytes is a generous allowance for the encoding of one operation or
// comparison of a Txn besides its key and value.
const opBytes = 32

// fits reports whether the commit would stay within maxOps operations,
// maxOps comparisons (etcd's --max-txn-ops bounds each list) and maxBytes.
func (t *txn) fits(maxOps, maxBytes int) bool {
	ops, size := t.size()
	cmps := len(t.reads) + len(t.ranged) + 1 // and the fence key's
	size += len(t.db.versionKey(fenceBucket)) + opBytes
	for k := range t.reads {
		size += len(k) + opBytes
	}
	for b := range t.ranged {
		size += len(t.db.versionKey(b)) + opBytes
	}
	return ops <= maxOps && cmps <= maxOps && size <= maxBytes
}

// size counts the operations of the commit (every buffered write and a
// version key per bucket written) and their bytes.
func (t *txn) size() (ops, bytes int) {
	for name, o := range t.writes {
		if o.Len() == 0 {
			continue
		}
		ops++
		bytes += len(t.db.versionKey(name)) + opBytes
		prefix := len(t.db.recordKey(name, ""))
		o.Ascend(func(w write) bool {
			ops++
			bytes += prefix + len(w.key) + len(w.val) + opBytes
			return true
		})
	}
	return ops, bytes
}
