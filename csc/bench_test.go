package csc_test

import (
	"context"
	"crypto"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/signd/signd/hsm"
	softhsmtest "github.com/signd/signd/softhsm-test"
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
			benchSignHashHTTP(b, newBoltEnv(b), keyA, c, 0)
		})
	}
}

// BenchmarkSignHashHTTPSoftHSM is BenchmarkSignHashHTTP with a real
// SoftHSM2 token (opened as the daemon opens it: GOMAXPROCS sessions) and,
// as in `make bench`, 100 000 other live SADs in the bbolt file, so that a
// commit writes what the daemon's does. With -trace, every request is a
// trace task whose phases `signd-load phases` tabulates:
//
//	go test -run '^$' -bench SignHashHTTPSoftHSM/concurrency-1 -benchtime 2000x -trace c1.trace ./csc/
//	go tool trace -d=parsed c1.trace | go run ./cmd/signd-load phases
//
// The token is created by the benchmark (SoftHSM2 must be installed); the
// other tests of the package need none.
func BenchmarkSignHashHTTPSoftHSM(b *testing.B) {
	st, err := softhsmtest.Setup(b.TempDir(), "csc-bench")
	if err != nil {
		b.Fatalf("the benchmark needs SoftHSM2: %v", err)
	}
	tok, err := hsm.Open(hsm.Config{Module: st.Module, TokenLabel: st.Label, PIN: st.PIN, MaxSessions: runtime.GOMAXPROCS(0)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { tok.Close() })
	key, err := tok.GenerateRSA(context.Background(), "csc-bench", 2048)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []int{1, 8} {
		b.Run(fmt.Sprintf("concurrency-%d", c), func(b *testing.B) {
			benchSignHashHTTP(b, newBoltEnv(b, withSigner(tok)), key, c, 100_000)
		})
	}
}

// benchSignHashHTTP POSTs b.N signHash requests, each with a SAD of its
// own, from c clients over keep-alive loopback connections, with extra
// other live SADs in the store.
func benchSignHashHTTP(b *testing.B, e *env, key *hsm.KeyInfo, c, extra int) {
	bearer := e.accessToken("alice", "rp1")
	cred := e.credential(valid("alice", key))
	bodies := make([]string, b.N)
	d := digest("bench")
	mint := func(n int, body bool) {
		e.update(func(tx store.Tx) error {
			for i := range n {
				v := randomValue()
				h := d
				if !body {
					h = digest(v)
				}
				if err := tx.CreateToken(&store.Token{
					Hash: store.Fingerprint(v), Kind: store.TokenSAD, ClientID: "rp1", Username: "alice",
					CredentialID: cred, Hashes: [][]byte{h}, ExpiresAt: time.Now().Add(time.Hour),
				}); err != nil {
					return err
				}
				if body {
					bodies[i] = signHashBody(cred, v, d)
				}
			}
			return nil
		})
	}
	for n := extra; n > 0; n -= 10_000 {
		mint(min(n, 10_000), false)
	}
	mint(b.N, true)
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
