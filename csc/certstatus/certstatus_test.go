package certstatus_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ocsp"

	"github.com/signd/signd/csc/certstatus"
	"github.com/signd/signd/csc/certstatus/certstatustest"
)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

type fixture struct {
	clk     *clock
	ca      *certstatustest.CA
	checker *certstatus.Checker
}

func newFixture(t *testing.T) *fixture {
	clk := &clock{t: time.Now()}
	ca := certstatustest.New(t, "Status CA", clk.Now)
	return &fixture{clk: clk, ca: ca, checker: certstatus.New(certstatus.Config{
		Now: clk.Now, Refresh: 10 * time.Minute, Timeout: 2 * time.Second,
		AllowLoopback: true, // the test CA serves on 127.0.0.1
	})}
}

func (f *fixture) leaf(t *testing.T, ocspOn, crlOn bool) (*x509.Certificate, [][]byte) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	cert := f.ca.Issue(t, key.Public(), certstatustest.Leaf{Subject: pkix.Name{CommonName: "Signer"}, OCSP: ocspOn, CRL: crlOn})
	return cert, [][]byte{cert.Raw, f.ca.Cert.Raw}
}

func (f *fixture) refresh(chains ...[][]byte) {
	f.checker.Refresh(context.Background(), chains)
}

// wantStatus fails the test unless the checker has chain's status as want
// and current or not as current; what says when.
func (f *fixture) wantStatus(t *testing.T, what string, chain [][]byte, want certstatus.Status, current bool) {
	t.Helper()
	if s, cur := f.checker.Status(chain); s != want || cur != current {
		t.Fatalf("%s: %s, current %v; want %s, current %v", what, s, cur, want, current)
	}
}

func TestStatus(t *testing.T) {
	tests := []struct {
		name          string
		ocsp, crl     bool
		setup         func(ca *certstatustest.CA, leaf *x509.Certificate)
		want          certstatus.Status
		wantCurrent   bool
		wantOCSPFetch bool
	}{
		{name: "OCSP good", ocsp: true, want: certstatus.Valid, wantCurrent: true},
		{name: "OCSP revoked", ocsp: true, want: certstatus.Revoked, wantCurrent: true,
			setup: func(ca *certstatustest.CA, l *x509.Certificate) { ca.Revoke(l.SerialNumber, ocsp.KeyCompromise) }},
		{name: "OCSP on hold", ocsp: true, want: certstatus.Suspended, wantCurrent: true,
			setup: func(ca *certstatustest.CA, l *x509.Certificate) { ca.Revoke(l.SerialNumber, ocsp.CertificateHold) }},
		{name: "CRL good", crl: true, want: certstatus.Valid, wantCurrent: true},
		{name: "CRL revoked", crl: true, want: certstatus.Revoked, wantCurrent: true,
			setup: func(ca *certstatustest.CA, l *x509.Certificate) { ca.Revoke(l.SerialNumber, ocsp.Unspecified) }},
		{name: "CRL on hold", crl: true, want: certstatus.Suspended, wantCurrent: true,
			setup: func(ca *certstatustest.CA, l *x509.Certificate) { ca.Revoke(l.SerialNumber, ocsp.CertificateHold) }},
		{name: "OCSP down, CRL answers", ocsp: true, crl: true, want: certstatus.Revoked, wantCurrent: true,
			setup: func(ca *certstatustest.CA, l *x509.Certificate) {
				ca.SetDown(true, false)
				ca.Revoke(l.SerialNumber, ocsp.Superseded)
			}},
		{name: "both down: never answered", ocsp: true, crl: true, want: certstatus.Valid, wantCurrent: false,
			setup: func(ca *certstatustest.CA, _ *x509.Certificate) { ca.SetDown(true, true) }},
		{name: "bad CRL signature", crl: true, want: certstatus.Valid, wantCurrent: false,
			setup: func(ca *certstatustest.CA, _ *x509.Certificate) { ca.SetBadSignature(true) }},
		{name: "bad OCSP signature", ocsp: true, want: certstatus.Valid, wantCurrent: false,
			setup: func(ca *certstatustest.CA, _ *x509.Certificate) { ca.SetBadSignature(true) }},
		{name: "stale answers", ocsp: true, crl: true, want: certstatus.Valid, wantCurrent: false,
			setup: func(ca *certstatustest.CA, _ *x509.Certificate) { ca.SetNextUpdate(-time.Second) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			leaf, chain := f.leaf(t, tt.ocsp, tt.crl)
			if tt.setup != nil {
				tt.setup(f.ca, leaf)
			}
			f.wantStatus(t, "before the first refresh", chain, certstatus.Valid, false)
			f.refresh(chain)
			s, cur := f.checker.Status(chain)
			if s != tt.want || cur != tt.wantCurrent {
				t.Fatalf("Status = %s, current %v; want %s, current %v", s, cur, tt.want, tt.wantCurrent)
			}
		})
	}
}

// A chain that names no revocation source has nothing to check: valid
// and current without any refresh.
func TestNothingToCheck(t *testing.T) {
	f := newFixture(t)
	_, chain := f.leaf(t, false, false)
	f.wantStatus(t, "Status", chain, certstatus.Valid, true)
	f.refresh(chain)
	f.wantStatus(t, "after refresh", chain, certstatus.Valid, true)
}

// A leaf that names a CRL without its issuer in the chain cannot be
// verified: never current.
func TestIssuerMissing(t *testing.T) {
	f := newFixture(t)
	_, chain := f.leaf(t, false, true)
	chain = chain[:1]
	f.refresh(chain)
	if s, cur := f.checker.Status(chain); cur {
		t.Fatalf("Status = %s, current; want not current", s)
	}
}

// Fetch failures keep the last good answer until its nextUpdate, then the
// answer is no longer current (hard fail); a fresh answer restores it.
func TestOutageKeepsLastGoodUntilNextUpdate(t *testing.T) {
	f := newFixture(t)
	leaf, chain := f.leaf(t, true, true)
	f.refresh(chain)
	f.ca.Revoke(leaf.SerialNumber, ocsp.CertificateHold)
	f.refresh(chain)
	f.wantStatus(t, "Status", chain, certstatus.Suspended, true)
	f.ca.SetDown(true, true)
	f.clk.Add(30 * time.Minute)
	f.refresh(chain)
	f.wantStatus(t, "down, before nextUpdate", chain, certstatus.Suspended, true)
	f.clk.Add(31 * time.Minute) // past the hour of nextUpdate
	f.refresh(chain)
	f.wantStatus(t, "down, past nextUpdate", chain, certstatus.Suspended, false)
	f.ca.SetDown(false, false)
	f.ca.Unrevoke(leaf.SerialNumber)
	f.refresh(chain)
	f.wantStatus(t, "back up", chain, certstatus.Valid, true)
}

// One refresh fetches a shared CRL once.
func TestCRLFetchedOncePerRefresh(t *testing.T) {
	f := newFixture(t)
	_, a := f.leaf(t, false, true)
	_, b := f.leaf(t, false, true)
	f.refresh(a, b, a)
	if n := f.ca.Fetches("/crl"); n != 1 {
		t.Fatalf("CRL fetched %d times, want 1", n)
	}
}

// Chains no longer listed are forgotten; an intermediate's revocation
// revokes the chain.
func TestChainRules(t *testing.T) {
	f := newFixture(t)
	_, chain := f.leaf(t, true, false)
	f.refresh(chain)
	f.refresh()
	if _, cur := f.checker.Status(chain); cur {
		t.Fatal("a forgotten chain is still current")
	}

	// An intermediate CA under f.ca, revoked on f.ca's CRL.
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	inter := f.ca.Issue(t, key.Public(), certstatustest.Leaf{Subject: pkix.Name{CommonName: "Intermediate"}, CRL: true,
		KeyUsage: x509.KeyUsageCertSign})
	leaf, _ := f.leaf(t, false, false)
	full := [][]byte{leaf.Raw, inter.Raw, f.ca.Cert.Raw}
	f.refresh(full)
	f.wantStatus(t, "intermediate good", full, certstatus.Valid, true)
	f.ca.Revoke(inter.SerialNumber, ocsp.CACompromise)
	f.refresh(full)
	f.wantStatus(t, "intermediate revoked", full, certstatus.Revoked, true)
}

// Run refreshes at once and stops with its context.
func TestRun(t *testing.T) {
	f := newFixture(t)
	leaf, chain := f.leaf(t, true, false)
	f.ca.Revoke(leaf.SerialNumber, ocsp.KeyCompromise)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	listed := make(chan struct{}, 1)
	go func() {
		f.checker.Run(ctx, func(context.Context) ([][][]byte, error) {
			defer func() {
				select {
				case listed <- struct{}{}:
				default:
				}
			}()
			return [][][]byte{chain}, nil
		})
		close(done)
	}()
	<-listed
	deadline := time.Now().Add(5 * time.Second)
	for {
		if s, _ := f.checker.Status(chain); s == certstatus.Revoked {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Run did not refresh")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
}

// A chain Status meets after Run's first refresh (a certificate imported
// since) is fetched without waiting for the next tick.
func TestRunKickedByNewChain(t *testing.T) {
	f := newFixture(t) // refresh every 10 minutes
	_, first := f.leaf(t, true, false)
	leaf, later := f.leaf(t, true, false)
	f.ca.Revoke(leaf.SerialNumber, ocsp.KeyCompromise)
	var mu sync.Mutex
	chains := [][][]byte{first}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go f.checker.Run(ctx, func(context.Context) ([][][]byte, error) {
		mu.Lock()
		defer mu.Unlock()
		return chains, nil
	})
	waitFor(t, func() bool { _, cur := f.checker.Status(first); return cur })
	mu.Lock()
	chains = append(chains, later)
	mu.Unlock()
	waitFor(t, func() bool { s, cur := f.checker.Status(later); return s == certstatus.Revoked && cur })
}

// TestRunRefreshesBeforeAnswersEnd: an answer that stops being current
// before the next tick (here a nextUpdate 4 s ahead, with a 20 s refresh
// interval; an OCSP response without nextUpdate is the same, its end
// being thisUpdate + ocsp_max_age) is fetched again before it ends, a
// tenth of the interval (at most a minute) ahead, and not more often than
// that.
func TestRunRefreshesBeforeAnswersEnd(t *testing.T) {
	f := newFixture(t)
	f.checker = certstatus.New(certstatus.Config{Now: f.clk.Now, AllowLoopback: true, Refresh: 20 * time.Second, Timeout: 2 * time.Second})
	_, chain := f.leaf(t, true, false)
	f.ca.SetNextUpdate(4 * time.Second) // the test clock stands still: always 4 s ahead
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.checker.Run(ctx, func(context.Context) ([][][]byte, error) { return [][][]byte{chain}, nil })
	}()
	start := time.Now()
	waitFor(t, func() bool { return f.ca.Fetches("/ocsp") >= 2 })
	if d := time.Since(start); d < 1500*time.Millisecond {
		t.Errorf("second fetch after %v; want about 2 s (4 s to the end, less a tenth of 20 s)", d)
	}
	cancel()
	<-done
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A chain that ends at an intermediate naming a CRL (its root left out,
// as chains often are) is checked up to the intermediate, which is where
// the chain ends.
func TestChainEndsAtIntermediate(t *testing.T) {
	f := newFixture(t)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	inter := f.ca.Issue(t, key.Public(), certstatustest.Leaf{Subject: pkix.Name{CommonName: "Intermediate"}, CRL: true,
		KeyUsage: x509.KeyUsageCertSign})
	f.ca.SetDown(true, true) // the root's CRL is never fetched
	leaf, _ := f.leaf(t, false, false)
	chain := [][]byte{leaf.Raw, inter.Raw}
	f.wantStatus(t, "Status", chain, certstatus.Valid, true)
}

// Answers the checker must not take: a delegated OCSP responder without
// id-kp-OCSPSigning, a CRL over the size cap, a distribution point that is
// not http(s). With a proper delegated responder the answer counts.
func TestRefusedSources(t *testing.T) {
	t.Run("delegated responder with id-kp-OCSPSigning", func(t *testing.T) {
		f := newFixture(t)
		leaf, chain := f.leaf(t, true, false)
		f.ca.SetResponder(t, true)
		f.ca.Revoke(leaf.SerialNumber, ocsp.KeyCompromise)
		f.refresh(chain)
		f.wantStatus(t, "Status", chain, certstatus.Revoked, true)
	})
	t.Run("delegated responder without id-kp-OCSPSigning", func(t *testing.T) {
		f := newFixture(t)
		_, chain := f.leaf(t, true, false)
		f.ca.SetResponder(t, false)
		f.refresh(chain)
		if s, cur := f.checker.Status(chain); cur {
			t.Fatalf("Status = %s, current; want not current", s)
		}
	})
	t.Run("CRL over the size cap", func(t *testing.T) {
		f := newFixture(t)
		f.checker = certstatus.New(certstatus.Config{Now: f.clk.Now, AllowLoopback: true, MaxCRLSize: 64})
		_, chain := f.leaf(t, false, true)
		f.refresh(chain)
		if s, cur := f.checker.Status(chain); cur {
			t.Fatalf("Status = %s, current; want not current", s)
		}
	})
	t.Run("ldap and file distribution points", func(t *testing.T) {
		f := newFixture(t)
		// A client that could read file: URLs, and a good CRL in a
		// file: only the checker's own rule keeps it from being used.
		tr := &http.Transport{}
		tr.RegisterProtocol("file", http.NewFileTransport(http.Dir("/")))
		f.checker = certstatus.New(certstatus.Config{Now: f.clk.Now, Client: &http.Client{Transport: tr}})
		res, err := http.Get(f.ca.URL + "/crl")
		if err != nil {
			t.Fatal(err)
		}
		crl, _ := io.ReadAll(res.Body)
		res.Body.Close()
		file := filepath.Join(t.TempDir(), "ca.crl")
		if err := os.WriteFile(file, crl, 0o600); err != nil {
			t.Fatal(err)
		}
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		leaf := f.ca.Issue(t, key.Public(), certstatustest.Leaf{Subject: pkix.Name{CommonName: "Signer"},
			CRLURLs: []string{"ldap://ldap.example/cn=CA?certificateRevocationList", "file://" + file}})
		chain := [][]byte{leaf.Raw, f.ca.Cert.Raw}
		f.refresh(chain)
		if s, cur := f.checker.Status(chain); cur {
			t.Fatalf("Status = %s, current; want not current", s)
		}
	})
}

// recordingMetrics keeps what a Checker reports.
type recordingMetrics struct {
	mu       sync.Mutex
	checks   map[string]int // source/result
	unusable map[string]int
}

func (m *recordingMetrics) ObserveCheck(source, result string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.checks[source+"/"+result]++
}

func (m *recordingMetrics) SetUnusable(counts map[string]int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.unusable = maps.Clone(counts)
}

// TestMetrics: each source asked about a certificate is counted as ok or
// failed, and after each refresh the chains that cannot sign are counted
// by why, the same way signHash refuses them.
func TestMetrics(t *testing.T) {
	f := newFixture(t)
	m := &recordingMetrics{checks: map[string]int{}}
	f.checker = certstatus.New(certstatus.Config{Now: f.clk.Now, AllowLoopback: true, Refresh: 10 * time.Minute, Timeout: 2 * time.Second, Metrics: m})
	good, goodChain := f.leaf(t, true, true)
	revoked, revokedChain := f.leaf(t, false, true)
	held, heldChain := f.leaf(t, true, false)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	old := f.ca.Issue(t, key.Public(), certstatustest.Leaf{Subject: pkix.Name{CommonName: "Expired"}, CRL: true,
		NotBefore: f.clk.Now().Add(-48 * time.Hour), NotAfter: f.clk.Now().Add(-time.Hour)})
	expiredChain := [][]byte{old.Raw, f.ca.Cert.Raw}
	_, quiet := f.leaf(t, false, false) // nothing to check: never counted
	f.ca.Revoke(revoked.SerialNumber, ocsp.KeyCompromise)
	f.ca.Revoke(held.SerialNumber, ocsp.CertificateHold)
	_ = good

	f.refresh(goodChain, revokedChain, heldChain, expiredChain, quiet, revokedChain) // one chain twice: two credentials
	wantChecks := map[string]int{"ocsp/ok": 2, "crl/ok": 2}
	wantUnusable := map[string]int{"expired": 1, "revoked": 2, "suspended": 1, "unknown": 0}
	check := func(step string) {
		t.Helper()
		m.mu.Lock()
		defer m.mu.Unlock()
		if !maps.Equal(m.checks, wantChecks) {
			t.Errorf("%s: checks %v, want %v", step, m.checks, wantChecks)
		}
		if !maps.Equal(m.unusable, wantUnusable) {
			t.Errorf("%s: unusable %v, want %v", step, m.unusable, wantUnusable)
		}
	}
	check("first refresh")

	// OCSP down: the good chain falls back to the CRL (one failure, one
	// answer); then both down and past nextUpdate: every answer fails and
	// what had none current is unknown.
	f.ca.SetDown(true, false)
	f.refresh(goodChain, heldChain)
	wantChecks["ocsp/failed"] += 2 // the held chain names OCSP only: its last answer stays
	wantChecks["crl/ok"]++
	wantUnusable = map[string]int{"expired": 0, "revoked": 0, "suspended": 1, "unknown": 0}
	check("OCSP down")
	f.ca.SetDown(true, true)
	f.clk.Add(2 * time.Hour)
	f.refresh(goodChain, heldChain)
	wantChecks["ocsp/failed"] += 2
	wantChecks["crl/failed"]++
	// The held chain keeps its last answer (suspended), no longer current:
	// suspended counts first, as signHash refuses it for that.
	wantUnusable = map[string]int{"expired": 0, "revoked": 0, "suspended": 1, "unknown": 1}
	check("all down")
}
