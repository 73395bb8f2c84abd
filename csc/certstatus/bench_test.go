package certstatus_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509/pkix"
	"testing"
	"time"

	"github.com/signd/signd/csc/certstatus"
	"github.com/signd/signd/csc/certstatus/certstatustest"
)

// BenchmarkRefreshSilentResponder: one refresh of 50 chains whose leaves
// name an OCSP responder that accepts connections and never answers, and
// a working CRL, with a 1 s time limit. It reports the time until the
// first chain is current (first-current-s, polled every millisecond) and
// the time of the whole refresh (pass-s).
func BenchmarkRefreshSilentResponder(b *testing.B) {
	const n = 50
	clk := &clock{t: time.Now()}
	ca := certstatustest.New(b, "Status CA", clk.Now)
	silent := certstatustest.NewSilent(b)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	chains := make([][][]byte, n)
	for i := range chains {
		leaf := ca.Issue(b, key.Public(), certstatustest.Leaf{Subject: pkix.Name{CommonName: "Signer"},
			OCSPURLs: []string{silent.URL + "/ocsp"}, CRLURLs: []string{ca.URL + "/crl"}})
		chains[i] = [][]byte{leaf.Raw, ca.Cert.Raw}
	}
	var first, pass time.Duration
	for b.Loop() {
		checker := certstatus.New(certstatus.Config{Now: clk.Now, Timeout: time.Second, AllowLoopback: true})
		start := time.Now()
		done := make(chan struct{})
		go func() { defer close(done); checker.Refresh(context.Background(), chains) }()
		found := time.Duration(0)
		for found == 0 {
			for _, chain := range chains {
				if _, cur := checker.Status(chain); cur {
					found = time.Since(start)
					break
				}
			}
			select {
			case <-done:
				if found == 0 {
					found = time.Since(start)
				}
			case <-time.After(time.Millisecond):
			}
		}
		<-done
		first += found
		pass += time.Since(start)
	}
	b.ReportMetric(first.Seconds()/float64(b.N), "first-current-s")
	b.ReportMetric(pass.Seconds()/float64(b.N), "pass-s")
}
