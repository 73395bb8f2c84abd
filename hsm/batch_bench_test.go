package hsm

import (
	"context"
	"crypto"
	"fmt"
	"sync"
	"testing"
	"time"
)

// BenchmarkSignBatch10 signs batches of ten SHA-256 digests with the
// shared RSA-2048 key, alternating within each iteration between ten
// SignDigestOpts calls (a session taken from the pool for each signature)
// and one SignDigests call (one session for the batch), from 1 and 4
// goroutines at once. It reports the mean time per batch of each side and
// their ratio (session/calls); ns/op covers both.
func BenchmarkSignBatch10(b *testing.B) {
	ctx := context.Background()
	digests := make([][]byte, 10)
	for i := range digests {
		digests[i] = digestOf(crypto.SHA256, fmt.Appendf(nil, "bench %d", i))
	}
	calls := func() error {
		for _, d := range digests {
			if _, err := shared.SignDigestOpts(ctx, sharedKey.ID, crypto.SHA256, d); err != nil {
				return err
			}
		}
		return nil
	}
	session := func() error {
		_, err := shared.SignDigests(ctx, sharedKey.ID, crypto.SHA256, digests)
		return err
	}
	for _, g := range []int{1, 4} {
		b.Run(fmt.Sprintf("goroutines-%d", g), func(b *testing.B) {
			var mu sync.Mutex
			var tCalls, tSession time.Duration
			timed := func(fn func() error, total *time.Duration) {
				start := time.Now()
				if err := fn(); err != nil {
					b.Error(err)
				}
				d := time.Since(start)
				mu.Lock()
				*total += d
				mu.Unlock()
			}
			for i := 0; i < b.N; i++ {
				var wg sync.WaitGroup
				for w := range g {
					wg.Go(func() {
						// Half the workers start with each side, and
						// the order flips every iteration.
						if (i+w)%2 == 0 {
							timed(calls, &tCalls)
							timed(session, &tSession)
						} else {
							timed(session, &tSession)
							timed(calls, &tCalls)
						}
					})
				}
				wg.Wait()
			}
			n := float64(b.N * g)
			b.ReportMetric(float64(tCalls.Microseconds())/n, "calls-µs/batch")
			b.ReportMetric(float64(tSession.Microseconds())/n, "session-µs/batch")
			b.ReportMetric(float64(tSession)/float64(tCalls), "session/calls")
		})
	}
}
