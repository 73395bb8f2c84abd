package hsm

import (
	"context"
	"crypto"
	"crypto/rsa"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var benchGoroutines = []int{1, 2, 4, 8}

// BenchmarkSignRSA2048 signs SHA-256 digests with the RSA-2048 key
// generated in the shared token (pool of GOMAXPROCS sessions, the
// default), from 1, 2, 4 and 8 goroutines.
func BenchmarkSignRSA2048(b *testing.B) {
	key, err := shared.Key(context.Background(), sharedKey.ID)
	if err != nil {
		b.Fatal(err)
	}
	digest := digestOf(crypto.SHA256, []byte("benchmark"))
	benchSigners(b, func() error {
		_, err := key.SignDigest(context.Background(), crypto.SHA256, digest)
		return err
	})
}

// BenchmarkGoCryptoRSA2048 is crypto/rsa on the same work, for comparison.
func BenchmarkGoCryptoRSA2048(b *testing.B) {
	digest := digestOf(crypto.SHA256, []byte("benchmark"))
	benchSigners(b, func() error {
		_, err := rsa.SignPKCS1v15(nil, fixtureKey, crypto.SHA256, digest)
		return err
	})
}

// benchSigners runs b.N calls of sign split over each goroutine count and
// reports signatures per second.
func benchSigners(b *testing.B, sign func() error) {
	for _, n := range benchGoroutines {
		b.Run(fmt.Sprintf("goroutines-%d", n), func(b *testing.B) {
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			start := time.Now()
			for range n {
				wg.Go(func() {
					for next.Add(1) <= int64(b.N) {
						if err := sign(); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "sigs/s")
		})
	}
}
