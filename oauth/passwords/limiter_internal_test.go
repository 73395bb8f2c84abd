package passwords

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestLimiter: at most n run at once; a caller waits for a slot, and gives
// up with ErrBusy after the wait (or on its context).
func TestLimiter(t *testing.T) {
	l := newLimiter(2, time.Second)
	var running, peak atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := l.do(context.Background(), func() {
				n := running.Add(1)
				for {
					p := peak.Load()
					if n <= p || peak.CompareAndSwap(p, n) {
						break
					}
				}
				time.Sleep(5 * time.Millisecond)
				running.Add(-1)
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if p := peak.Load(); p != 2 {
		t.Errorf("peak concurrency %d, want 2", p)
	}

	short := newLimiter(1, 10*time.Millisecond)
	hold, release := make(chan struct{}), make(chan struct{})
	go func() {
		_ = short.do(context.Background(), func() { close(hold); <-release })
	}()
	<-hold
	if err := short.do(context.Background(), func() {}); !errors.Is(err, ErrBusy) {
		t.Errorf("saturated limiter: %v, want ErrBusy", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := short.do(ctx, func() {}); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled: %v", err)
	}
	close(release)
}
