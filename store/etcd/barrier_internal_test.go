package etcd

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// TestBarrierShared: a call waits for a barrier read that started after
// it arrived, never for the one in flight; the calls that arrive while a
// read is in flight share the next one; a failed read fails its calls.
func TestBarrierShared(t *testing.T) {
	ctx := context.Background()
	started := make(chan int64, 4)
	release := make(chan struct{}, 4)
	var reads int64
	fail := errors.New("no quorum")
	b := barrier{read: func(context.Context) (int64, int64, error) {
		reads++ // one goroutine sends the rounds, one after the other
		n := reads
		started <- n
		<-release
		if n == 3 {
			return 0, 0, fail
		}
		return n, 100 + n, nil
	}}
	got := make(chan [2]int64, 16)
	wait := func() {
		last, now, err := b.wait(ctx)
		if err != nil {
			last = -1
		}
		got <- [2]int64{last, now}
	}
	go wait()
	if n := <-started; n != 1 {
		t.Fatalf("first read %d", n)
	}
	// Round 1 is in flight: 8 calls arrive and join round 2.
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(wait)
	}
	waiters := func() int {
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.next == nil {
			return 0
		}
		return b.next.waiters
	}
	for deadline := time.Now().Add(30 * time.Second); waiters() != 8; {
		if time.Now().After(deadline) {
			t.Fatalf("%d calls wait for the next round, want 8", waiters())
		}
		select {
		case r := <-got:
			t.Fatalf("a call returned %v during the read it arrived after", r)
		default:
		}
	}
	release <- struct{}{}
	if r := <-got; r != [2]int64{1, 101} {
		t.Fatalf("first call: %v, want round 1", r)
	}
	if n := <-started; n != 2 {
		t.Fatalf("second read %d", n)
	}
	release <- struct{}{}
	wg.Wait()
	for range 8 {
		if r := <-got; r != [2]int64{2, 102} {
			t.Errorf("a call that arrived during round 1: %v, want round 2", r)
		}
	}
	go wait()
	<-started
	release <- struct{}{}
	if r := <-got; r[0] != -1 {
		t.Errorf("a failed read answered %v", r)
	}
	if reads != 3 {
		t.Errorf("%d reads for 10 calls in 3 rounds", reads)
	}
}
