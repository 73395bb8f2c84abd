package etcd

import (
	"context"
	"sync"
)

// barrier shares the reads that start transactions on the watch cache, as
// the Batcher shares commits: a transaction waits for a read that started
// after it arrived (so the read sees every commit made before it began),
// and the transactions that arrive while a read is in flight share the
// next one. Under load a node pays about one read per round trip, not one
// per transaction.
type barrier struct {
	// read is the barrier's etcd read (watchCache.lastCommit).
	read func(ctx context.Context) (last, now int64, err error)

	mu sync.Mutex
	// running: a goroutine sends rounds; next is the round the arrivals
	// join, sent when the one in flight returns.
	running bool
	next    *round
}

// round is one barrier read and its outcome, shared by its waiters.
type round struct {
	done      chan struct{}
	waiters   int // the calls it serves (tests)
	last, now int64
	err       error
}

// wait returns the outcome of a barrier read that started after the call:
// the revision of the store's last commit and the cluster's revision when
// the read was answered.
func (b *barrier) wait(ctx context.Context) (last, now int64, err error) {
	b.mu.Lock()
	if b.next == nil {
		b.next = &round{done: make(chan struct{})}
	}
	r := b.next
	r.waiters++
	if !b.running {
		b.running = true
		go b.send()
	}
	b.mu.Unlock()
	select {
	case <-r.done:
		return r.last, r.now, r.err
	case <-ctx.Done():
		return 0, 0, ctx.Err()
	}
}

// send reads for the waiting rounds, one after the other, until none
// waits.
func (b *barrier) send() {
	for {
		b.mu.Lock()
		r := b.next
		b.next = nil
		if r == nil {
			b.running = false
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		r.last, r.now, r.err = b.read(context.Background())
		close(r.done)
	}
}
