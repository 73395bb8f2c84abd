package groupcommit

import (
	"context"
	"fmt"
	"runtime/trace"
	"sync"

	"github.com/signd/signd/store"
)

// Batcher is the group commit behind both backends' Batch. There is no
// timer: the first caller leads a commit at once; callers that arrive while
// a commit is in flight queue up, and the first of them leads the next
// commit with the queue (at most Max calls; 0 means no bound). So a lone
// caller pays one commit, and N concurrent callers about one commit per
// round instead of N. How a commit runs the functions, and what it does
// when one fails, is the backend's (the commit function of Run).
type Batcher struct {
	// Max bounds the calls handed to one commit; 0: the whole queue.
	Max int

	mu      sync.Mutex
	busy    bool // a leader is committing
	pending []*BatchCall
}

// BatchCall is one queued Batch call: its function, and where its outcome
// goes.
type BatchCall struct {
	Fn   func(store.Tx) error
	done chan error    // buffered; receives the outcome
	lead chan struct{} // closed when this call must lead the next commit
}

// Deliver hands the call its outcome; a commit calls it once per call it
// committed (or gave up on).
func (c *BatchCall) Deliver(err error) { c.done <- err }

// BatchPanic carries a panic of a batched function to the goroutine that
// called Batch, where Run raises it again.
type BatchPanic struct{ V any }

func (p BatchPanic) Error() string {
	return fmt.Sprintf("store: panic in batched transaction: %v", p.V)
}

// Recovered runs fn on tx, turning a panic into a BatchPanic.
func Recovered(fn func(store.Tx) error, tx store.Tx) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = BatchPanic{v}
		}
	}()
	return fn(tx)
}

// Run queues fn and returns its outcome once a commit delivered it. The
// call that leads runs commit with the head of the queue (itself first);
// commit must deliver an outcome to every call it returns no verdict for
// in its result: the calls it returns were not committed (they did not fit)
// and lead the next commit, ahead of the queue. A BatchPanic outcome is
// raised again in the caller's goroutine. ctx is only checked before fn is
// queued, and names the execution-trace regions (runtime/trace; no-ops
// without a trace): the wait for a shared commit, and this call's commit
// as the leader.
func (b *Batcher) Run(ctx context.Context, fn func(store.Tx) error, commit func([]*BatchCall) []*BatchCall) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c := &BatchCall{Fn: fn, done: make(chan error, 1), lead: make(chan struct{})}
	b.mu.Lock()
	b.pending = append(b.pending, c)
	if !b.busy {
		b.busy = true
		close(c.lead)
	}
	b.mu.Unlock()

	queued := trace.StartRegion(ctx, "store.queue")
	select {
	case err := <-c.done:
		queued.End()
		return rethrow(err)
	case <-c.lead:
	}
	queued.End()
	defer trace.StartRegion(ctx, "store.commit").End()
	// This call leads: commit the head of the queue, put back what did not
	// fit, and hand the lead to the first call waiting.
	b.mu.Lock()
	n := len(b.pending)
	if b.Max > 0 {
		n = min(n, b.Max)
	}
	calls := b.pending[:n:n]
	b.pending = b.pending[n:]
	b.mu.Unlock()
	rest := commit(calls)
	b.mu.Lock()
	if len(rest) > 0 {
		b.pending = append(rest, b.pending...)
	}
	if len(b.pending) > 0 {
		close(b.pending[0].lead)
	} else {
		b.busy = false
	}
	b.mu.Unlock()
	return rethrow(<-c.done)
}

func rethrow(err error) error {
	if p, ok := err.(BatchPanic); ok {
		panic(p.V)
	}
	return err
}

// Queued is the number of calls waiting for a commit that has not taken
// them yet.
func (b *Batcher) Queued() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.pending)
}
