package groupcommit_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"

	"github.com/signd/signd/store"
	"github.com/signd/signd/store/kv/groupcommit"
)

// TestBatcher checks the queue discipline both backends rely on: a lone
// call commits at once; calls that queue behind a commit in flight share
// the next one, at most Max of them; calls a commit hands back lead the
// next commit ahead of the queue; every call gets its own outcome, and a
// BatchPanic is raised in its caller's goroutine.
func TestBatcher(t *testing.T) {
	errOwn := errors.New("own outcome")
	tests := []struct {
		name      string
		max       int
		handBack  bool // the second commit hands all but its first call back
		wantSizes []int
	}{
		{"no bound", 0, false, []int{1, 7}},
		{"max 3", 3, false, []int{1, 3, 3, 1}},
		{"handed back", 0, true, []int{1, 7, 6}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &groupcommit.Batcher{Max: tt.max}
			first := make(chan struct{})
			release := make(chan struct{})
			var mu sync.Mutex
			var sizes []int
			commit := func(calls []*groupcommit.BatchCall) []*groupcommit.BatchCall {
				mu.Lock()
				sizes = append(sizes, len(calls))
				n := len(sizes)
				mu.Unlock()
				if n == 1 {
					close(first)
					<-release
				}
				take := calls
				if tt.handBack && n == 2 {
					take = calls[:1]
				}
				for _, c := range take {
					c.Deliver(c.Fn(nil))
				}
				return calls[len(take):]
			}
			var wg sync.WaitGroup
			errs := make([]error, 8)
			run := func(i int) {
				defer wg.Done()
				errs[i] = b.Run(context.Background(), func(store.Tx) error {
					if i%2 == 1 {
						return errOwn
					}
					return nil
				}, commit)
			}
			wg.Add(1)
			go run(0)
			<-first
			for i := 1; i < 8; i++ {
				wg.Add(1)
				go run(i)
			}
			for b.Queued() < 7 { // all seven queued behind the commit in flight
				runtime.Gosched()
			}
			close(release)
			wg.Wait()
			if len(sizes) != len(tt.wantSizes) {
				t.Fatalf("commit sizes %v, want %v", sizes, tt.wantSizes)
			}
			for i := range sizes {
				if sizes[i] != tt.wantSizes[i] {
					t.Fatalf("commit sizes %v, want %v", sizes, tt.wantSizes)
				}
			}
			for i, err := range errs {
				if want := map[bool]error{true: errOwn, false: nil}[i%2 == 1]; err != want {
					t.Errorf("call %d: %v, want %v", i, err, want)
				}
			}
			if b.Queued() != 0 {
				t.Errorf("%d calls left queued", b.Queued())
			}
		})
	}
}

func TestBatcherPanicAndContext(t *testing.T) {
	b := &groupcommit.Batcher{}
	commit := func(calls []*groupcommit.BatchCall) []*groupcommit.BatchCall {
		for _, c := range calls {
			c.Deliver(groupcommit.Recovered(c.Fn, nil))
		}
		return nil
	}
	func() {
		defer func() {
			if v := recover(); v != "boom" {
				t.Errorf("recovered %v, want the function's panic", v)
			}
		}()
		_ = b.Run(context.Background(), func(store.Tx) error { panic("boom") }, commit)
		t.Error("Run returned after a panic")
	}()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ran := false
	if err := b.Run(ctx, func(store.Tx) error { ran = true; return nil }, commit); !errors.Is(err, context.Canceled) || ran {
		t.Errorf("canceled context: %v, ran %v", err, ran)
	}
}
