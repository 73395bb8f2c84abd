package csc_test

import (
	"context"
	"crypto"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/signd/signd/store"
)

// BenchmarkSignHashHTTP is the signHash request path in one process (real
// router, a bbolt file, the software token, HTTP over loopback), for
// profiling:
//
//	go test -run '^$' -bench SignHashHTTP -cpuprofile cpu.out ./csc/
//
// `make bench` measures the daemon from a separate process instead.
func BenchmarkSignHashHTTP(b *testing.B) {
	for _, c := range []int{1, 8} {
		b.Run(fmt.Sprintf("concurrency-%d", c), func(b *testing.B) {
			e := newBoltEnv(b)
			bearer, cred := e.alice()
			bodies := make([]string, b.N)
			d := digest("bench")
			e.update(func(tx store.Tx) error {
				for i := range bodies {
					v := randomValue()
					if err := tx.CreateToken(&store.Token{
						Hash: store.Fingerprint(v), Kind: store.TokenSAD, ClientID: "rp1", Username: "alice",
						CredentialID: cred, Hashes: [][]byte{d}, ExpiresAt: time.Now().Add(time.Hour),
					}); err != nil {
						return err
					}
					bodies[i] = signHashBody(cred, v, d)
				}
				return nil
			})
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: c}}
			url := e.srv.URL + "/csc/v1/signatures/signHash"
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			start := time.Now()
			for range c {
				wg.Go(func() {
					for {
						i := next.Add(1) - 1
						if i >= int64(b.N) {
							return
						}
						req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(bodies[i]))
						req.Header.Set("Content-Type", "application/json")
						req.Header.Set("Authorization", "Bearer "+bearer)
						res, err := client.Do(req)
						if err != nil {
							b.Error(err)
							return
						}
						_, _ = io.Copy(io.Discard, res.Body) // so the connection is reused
						res.Body.Close()
						if res.StatusCode != http.StatusOK {
							b.Errorf("status %d", res.StatusCode)
							return
						}
					}
				})
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "sigs/s")
		})
	}
}

// BenchmarkSignDigest is the software token alone, for comparison; hsm's
// BenchmarkSignRSA2048 measures SoftHSM2.
func BenchmarkSignDigest(b *testing.B) {
	d := digest("bench")
	for _, c := range []int{1, 8} {
		b.Run(fmt.Sprintf("concurrency-%d", c), func(b *testing.B) {
			var next atomic.Int64
			var wg sync.WaitGroup
			start := time.Now()
			for range c {
				wg.Go(func() {
					for next.Add(1) <= int64(b.N) {
						if _, err := token.SignDigest(context.Background(), keyA.ID, crypto.SHA256, d); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "sigs/s")
		})
	}
}
