package certstatus_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/signd/signd/csc/certstatus"
	"github.com/signd/signd/csc/certstatus/certstatustest"
	"github.com/signd/signd/internal/logtest"
)

// issue makes a chain of one leaf from f's CA that names the responders
// ocsp and the distribution points crl (nil: none), and its CA.
func (f *fixture) issue(t *testing.T, ocsp, crl []string) [][]byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if crl == nil {
		crl = []string{}
	}
	if ocsp == nil {
		ocsp = []string{}
	}
	cert := f.ca.Issue(t, key.Public(), certstatustest.Leaf{Subject: pkix.Name{CommonName: "Signer"},
		OCSPURLs: ocsp, CRLURLs: crl})
	return [][]byte{cert.Raw, f.ca.Cert.Raw}
}

// refreshInBackground runs Refresh over chains until it returns; done is
// closed then. The refresh is cancelled, and waited for, when the test
// ends.
func (f *fixture) refreshInBackground(t *testing.T, chains [][][]byte) (done chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	done = make(chan struct{})
	go func() { defer close(done); f.checker.Refresh(ctx, chains) }()
	t.Cleanup(func() { cancel(); <-done })
	return done
}

func running(done chan struct{}) bool {
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// A refresh publishes each chain's answer as soon as it has it: chain 0
// signs while chain 4's responder still holds its request (after a
// restart, or a certificate imported, a credential waits for its own
// sources only, not for every credential's).
func TestRefreshPublishesEachChain(t *testing.T) {
	f := newFixture(t)
	silent := certstatustest.NewSilent(t)
	f.checker = certstatus.New(certstatus.Config{Now: f.clk.Now, Timeout: time.Minute, AllowLoopback: true})
	var chains [][][]byte
	for range 4 {
		chains = append(chains, f.issue(t, []string{f.ca.URL + "/ocsp"}, nil))
	}
	chains = append(chains, f.issue(t, []string{silent.URL + "/ocsp"}, nil))
	done := f.refreshInBackground(t, chains)
	waitFor(t, func() bool { _, cur := f.checker.Status(chains[0]); return cur })
	waitFor(t, func() bool { return silent.Accepted() == 1 })
	if !running(done) {
		t.Fatal("the refresh ended while chain 4's responder holds its request")
	}
	f.wantStatus(t, "chain 4, its responder silent", chains[4], certstatus.Valid, false)
	for i, chain := range chains[:4] {
		f.wantStatus(t, fmt.Sprintf("chain %d while chain 4's responder is silent", i), chain, certstatus.Valid, true)
	}
}

// A refresh checks several chains at once: chains whose responder hangs
// (fewer than FetchWorkers) do not hold up the chains listed after them.
func TestRefreshInParallel(t *testing.T) {
	f := newFixture(t)
	silent := certstatustest.NewSilent(t)
	f.checker = certstatus.New(certstatus.Config{Now: f.clk.Now, Timeout: time.Minute, AllowLoopback: true})
	const hanging = 4
	if hanging >= certstatus.FetchWorkers {
		t.Fatalf("%d chains checked at once, the test needs more than %d", certstatus.FetchWorkers, hanging)
	}
	var chains [][][]byte
	for range hanging {
		chains = append(chains, f.issue(t, []string{silent.URL + "/ocsp"}, nil))
	}
	for range 4 {
		chains = append(chains, f.issue(t, []string{f.ca.URL + "/ocsp"}, nil))
	}
	done := f.refreshInBackground(t, chains)
	last := chains[len(chains)-1]
	waitFor(t, func() bool { _, cur := f.checker.Status(last); return cur })
	if !running(done) {
		t.Fatal("the refresh ended while the silent responder holds its requests")
	}
	waitFor(t, func() bool { return silent.Accepted() == hanging })
}

// Within a refresh, a host that did not answer is not asked again: the
// chains naming it go to their CRL at once, FetchWorkers chains at most
// wait for the time limit, and the CRL they share is fetched once.
func TestRefreshBreaker(t *testing.T) {
	f := newFixture(t)
	silent := certstatustest.NewSilent(t)
	logs := &logtest.Buffer{}
	f.checker = certstatus.New(certstatus.Config{Now: f.clk.Now, Timeout: 2 * time.Second, AllowLoopback: true,
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	var chains [][][]byte
	for range 3 * certstatus.FetchWorkers {
		chains = append(chains, f.issue(t, []string{silent.URL + "/ocsp"}, []string{f.ca.URL + "/crl"}))
	}
	f.refresh(chains...)
	for i, chain := range chains {
		f.wantStatus(t, fmt.Sprintf("chain %d, from the CRL", i), chain, certstatus.Valid, true)
	}
	if n := silent.Accepted(); n < 1 || n > certstatus.FetchWorkers {
		t.Errorf("the silent responder was asked %d times in one refresh, want 1 to %d", n, certstatus.FetchWorkers)
	}
	if n := f.ca.Fetches("/crl"); n != 1 {
		t.Errorf("the CRL was fetched %d times in one refresh, want 1", n)
	}

	// The next refresh asks the host again.
	before := silent.Accepted()
	f.refresh(chains[0])
	if n := silent.Accepted(); n != before+1 {
		t.Errorf("the next refresh asked the silent responder %d times, want 1", n-before)
	}
	if !strings.Contains(logs.String(), "host did not answer, not asked again in this refresh") {
		t.Errorf("no skipped host in the log:\n%s", logs.String())
	}
}

// A redirect is never followed: neither a CRL's GET nor an OCSP POST
// reaches the host the redirect names (a server inside signd's network);
// the source fails, and the log says why.
func TestRedirectRefused(t *testing.T) {
	for _, tt := range []struct {
		name, path string
		code       int
	}{
		{"CRL 302", "/crl", http.StatusFound},
		{"CRL 301", "/crl", http.StatusMovedPermanently},
		{"OCSP 307 (would re-send the POST)", "/ocsp", http.StatusTemporaryRedirect},
		{"OCSP 308", "/ocsp", http.StatusPermanentRedirect},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			logs := &logtest.Buffer{}
			f.checker = certstatus.New(certstatus.Config{Now: f.clk.Now, AllowLoopback: true,
				Logger: slog.New(slog.NewTextHandler(logs, nil))})
			internal := certstatustest.New(t, "Status CA", f.clk.Now) // an internal server
			from := certstatustest.Redirect(t, tt.code, internal.URL+tt.path)
			var chain [][]byte
			if tt.path == "/crl" {
				chain = f.issue(t, nil, []string{from})
			} else {
				chain = f.issue(t, []string{from}, nil)
			}
			f.refresh(chain)
			if n := internal.Fetches(tt.path); n != 0 {
				t.Fatalf("the redirect target got %d requests", n)
			}
			f.wantStatus(t, "redirected source", chain, certstatus.Valid, false)
			if !strings.Contains(logs.String(), "redirect refused (to "+internal.URL+tt.path+")") {
				t.Errorf("no refused redirect in the log:\n%s", logs.String())
			}
		})
	}
}

// By default no fetch reaches a loopback address, by IP or by a name
// that resolves to one; AllowLoopback (tests) lets it.
func TestLoopbackRefusedByDefault(t *testing.T) {
	f := newFixture(t)
	logs := &logtest.Buffer{}
	f.checker = certstatus.New(certstatus.Config{Now: f.clk.Now, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	byName := strings.Replace(f.ca.URL, "127.0.0.1", "localhost", 1)
	chains := [][][]byte{
		f.issue(t, []string{f.ca.URL + "/ocsp"}, []string{f.ca.URL + "/crl"}),
		f.issue(t, []string{byName + "/ocsp"}, []string{byName + "/crl"}),
	}
	f.refresh(chains...)
	if n, m := f.ca.Fetches("/ocsp"), f.ca.Fetches("/crl"); n != 0 || m != 0 {
		t.Fatalf("the CA on loopback got %d OCSP and %d CRL requests", n, m)
	}
	for i, chain := range chains {
		f.wantStatus(t, fmt.Sprintf("chain %d, its sources on loopback", i), chain, certstatus.Valid, false)
	}
	if !strings.Contains(logs.String(), "address 127.0.0.1 refused") {
		t.Errorf("no refused address in the log:\n%s", logs.String())
	}

	f.checker = certstatus.New(certstatus.Config{Now: f.clk.Now, AllowLoopback: true})
	f.refresh(chains...)
	for i, chain := range chains {
		f.wantStatus(t, fmt.Sprintf("chain %d, AllowLoopback", i), chain, certstatus.Valid, true)
	}
}

// An OCSP response is taken only when the CertID of its single response
// names the certificate's issuer, not only its serial number: a "good"
// signed with the issuer's key about the same serial number of another
// CA (a responder key shared across CAs, replayed by an on-path
// attacker) is refused.
func TestOCSPCertIDOfAnotherCA(t *testing.T) {
	for _, tt := range []struct {
		name  string
		other func(f *fixture) *x509.Certificate
	}{
		{"another name and key", func(f *fixture) *x509.Certificate {
			return certstatustest.New(t, "Other CA", f.clk.Now).Cert
		}},
		{"the same name, another key", func(f *fixture) *x509.Certificate {
			return certstatustest.New(t, "Status CA", f.clk.Now).Cert
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			_, chain := f.leaf(t, true, false)
			f.ca.SetCertIDOf(tt.other(f))
			f.refresh(chain)
			f.wantStatus(t, "a CertID of another issuer", chain, certstatus.Valid, false)
			f.ca.SetCertIDOf(nil)
			f.refresh(chain)
			f.wantStatus(t, "the issuer's own CertID", chain, certstatus.Valid, true)
		})
	}
}

// A refresh checks an intermediate that many chains share once: its
// issuer's responder is asked once, and every chain takes that one answer
// (answers fetched concurrently, one a second older than another, would
// otherwise refuse each other as replays).
func TestRefreshChecksASharedIntermediateOnce(t *testing.T) {
	f := newFixture(t)
	sub := certstatustest.New(t, "Sub CA", f.clk.Now)
	sub.Cert = f.ca.Issue(t, sub.Key.Public(), certstatustest.Leaf{Subject: sub.Cert.Subject, OCSP: true, CA: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign})
	var chains [][][]byte
	for range 3 * certstatus.FetchWorkers {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		leaf := sub.Issue(t, key.Public(), certstatustest.Leaf{Subject: pkix.Name{CommonName: "Signer"}, CRL: true})
		chains = append(chains, [][]byte{leaf.Raw, sub.Cert.Raw, f.ca.Cert.Raw})
	}
	f.refresh(chains...)
	for i, chain := range chains {
		f.wantStatus(t, fmt.Sprintf("chain %d", i), chain, certstatus.Valid, true)
	}
	if n := f.ca.Fetches("/ocsp"); n != 1 {
		t.Errorf("the intermediate's responder was asked %d times in one refresh, want 1", n)
	}
	if n := sub.Fetches("/crl"); n != 1 {
		t.Errorf("the leaves' CRL was fetched %d times in one refresh, want 1", n)
	}
}
