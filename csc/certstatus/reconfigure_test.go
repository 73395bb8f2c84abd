package certstatus_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509/pkix"
	"errors"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/ocsp"

	"github.com/signd/signd/csc/certstatus"
	"github.com/signd/signd/csc/certstatus/certstatustest"
)

// deadlineTransport records the time left on each request's context and
// fails the request.
type deadlineTransport struct {
	mu   sync.Mutex
	left []time.Duration
}

func (d *deadlineTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	deadline, ok := r.Context().Deadline()
	d.mu.Lock()
	defer d.mu.Unlock()
	if ok {
		d.left = append(d.left, time.Until(deadline))
	}
	return nil, errors.New("offline")
}

func (d *deadlineTransport) last() time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.left) == 0 {
		return 0
	}
	return d.left[len(d.left)-1]
}

// TestReconfigure: Reconfigure (a SIGHUP reload of csc.cert_status.*)
// with new settings fetches every chain again at once, and each setting
// it changes is the one the next refresh uses: the interval of Run, the
// fetch time limit and the max age of an OCSP response without
// nextUpdate. With the settings in use (a reload for another reason) it
// fetches nothing.
func TestReconfigure(t *testing.T) {
	runChecker := func(t *testing.T, f *fixture, chain [][]byte) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			f.checker.Run(ctx, func(context.Context) ([][][]byte, error) { return [][][]byte{chain}, nil })
		}()
		t.Cleanup(func() { cancel(); <-done })
	}
	t.Run("fetches again at once", func(t *testing.T) {
		f := newFixture(t) // refresh every 10 minutes
		leaf, chain := f.leaf(t, true, false)
		// Known before Run starts: Status never asks Run for a refresh
		// (as for a chain no refresh has seen).
		f.refresh(chain)
		f.wantStatus(t, "before Run", chain, certstatus.Valid, true)
		runChecker(t, f, chain)
		waitFor(t, func() bool { return f.ca.Fetches("/ocsp") == 2 }) // Run's first refresh
		f.ca.Revoke(leaf.SerialNumber, ocsp.KeyCompromise)
		if !f.checker.Reconfigure(certstatus.Settings{Refresh: 10 * time.Minute, Timeout: 3 * time.Second}) {
			t.Error("Reconfigure with a new timeout reports no change")
		}
		waitFor(t, func() bool { s, _ := f.checker.Status(chain); return s == certstatus.Revoked })
	})
	t.Run("the same settings fetch nothing", func(t *testing.T) {
		f := newFixture(t) // refresh every 10 minutes, 2 s per fetch
		_, chain := f.leaf(t, true, false)
		runChecker(t, f, chain)
		waitFor(t, func() bool { return f.ca.Fetches("/ocsp") == 1 }) // Run's first refresh
		for _, set := range []certstatus.Settings{
			{Refresh: 10 * time.Minute, Timeout: 2 * time.Second, OCSPMaxAge: certstatus.DefaultOCSPMaxAge},
			{Refresh: 10 * time.Minute, Timeout: 2 * time.Second}, // zero: the default, as in use
		} {
			if f.checker.Reconfigure(set) {
				t.Errorf("Reconfigure(%+v), the settings in use, reports a change", set)
			}
		}
		// The refresh a change asks for comes at once (below): none
		// within a second is none at all.
		for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if n := f.ca.Fetches("/ocsp"); n != 1 {
				t.Fatalf("Reconfigure with the settings in use: %d OCSP requests, want 1 (no refresh)", n)
			}
		}
		f.checker.Reconfigure(certstatus.Settings{Refresh: 10 * time.Minute, Timeout: 3 * time.Second})
		waitFor(t, func() bool { return f.ca.Fetches("/ocsp") == 2 })
	})
	t.Run("refresh interval", func(t *testing.T) {
		f := newFixture(t) // refresh every 10 minutes
		_, chain := f.leaf(t, true, false)
		runChecker(t, f, chain)
		waitFor(t, func() bool { return f.ca.Fetches("/ocsp") == 1 })
		f.checker.Reconfigure(certstatus.Settings{Refresh: time.Second, Timeout: 2 * time.Second})
		// The refresh Reconfigure asks for, then one a second.
		waitFor(t, func() bool { return f.ca.Fetches("/ocsp") >= 4 })
	})
	t.Run("fetch time limit", func(t *testing.T) {
		f := newFixture(t) // 2 s per fetch
		rt := &deadlineTransport{}
		f.checker = certstatus.New(certstatus.Config{Now: f.clk.Now, Timeout: 2 * time.Second, Client: &http.Client{Transport: rt}})
		_, chain := f.leaf(t, true, false)
		f.refresh(chain)
		if left := rt.last(); left <= time.Second || left > 2*time.Second {
			t.Fatalf("first fetch: %v left, want at most the 2 s timeout", left)
		}
		f.checker.Reconfigure(certstatus.Settings{Timeout: 30 * time.Second})
		f.refresh(chain)
		if left := rt.last(); left <= 29*time.Second || left > 30*time.Second {
			t.Fatalf("after Reconfigure: %v left, want the new 30 s timeout", left)
		}
	})
	t.Run("OCSP max age", func(t *testing.T) {
		f, chain := oldAnswer(t, 5*time.Minute, 6*time.Minute)
		f.wantStatus(t, "6 minutes old, 5-minute max age", chain, certstatus.Valid, false)
		f.checker.Reconfigure(certstatus.Settings{OCSPMaxAge: 10 * time.Minute})
		f.refresh(chain)
		f.wantStatus(t, "6 minutes old, max age reconfigured to 10 minutes", chain, certstatus.Valid, true)
	})
}

// TestReconfigureTightensKeptAnswers: a tightened OCSP max age or refresh
// interval also bounds the answer a chain keeps while its responder does
// not answer, at once and after every refresh that fails: blocking the
// responder does not keep an answer without nextUpdate current past the
// new policy. An answer with nextUpdate stays current until then.
func TestReconfigureTightensKeptAnswers(t *testing.T) {
	tests := []struct {
		name string
		// noNext: the responder omits nextUpdate; age is the answer's
		// age when fetched.
		noNext bool
		age    time.Duration
		set    certstatus.Settings
		// current: whether the kept answer is current right after
		// Reconfigure and after a failed refresh.
		current bool
	}{
		{name: "max age 24h to 10m, answer 2h old", noNext: true, age: 2 * time.Hour,
			set: certstatus.Settings{Refresh: 10 * time.Hour, OCSPMaxAge: 10 * time.Minute}},
		{name: "refresh 10h to 30m, answer fetched 90m ago", noNext: true, age: time.Minute,
			set: certstatus.Settings{Refresh: 30 * time.Minute, OCSPMaxAge: 24 * time.Hour}},
		{name: "loosened: kept as it was", noNext: true, age: 2 * time.Hour, current: true,
			set: certstatus.Settings{Refresh: 20 * time.Hour, OCSPMaxAge: 48 * time.Hour}},
		{name: "nextUpdate bounds it, not the max age", age: 2 * time.Hour, current: true,
			set: certstatus.Settings{Refresh: 10 * time.Hour, OCSPMaxAge: 10 * time.Minute}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.checker = certstatus.New(certstatus.Config{Now: f.clk.Now, AllowLoopback: true, Refresh: 10 * time.Hour, OCSPMaxAge: 24 * time.Hour})
			_, chain := f.leaf(t, true, false)
			f.ca.OmitNextUpdate(tt.noNext)
			f.ca.SetNextUpdate(4 * time.Hour)
			f.ca.SetThisUpdate(tt.age)
			f.refresh(chain)
			f.wantStatus(t, "fetched", chain, certstatus.Valid, true)
			f.ca.SetDown(true, true)
			f.clk.Add(90 * time.Minute)
			f.wantStatus(t, "responder down, 90 minutes later", chain, certstatus.Valid, true)
			f.checker.Reconfigure(tt.set)
			f.wantStatus(t, "reconfigured", chain, certstatus.Valid, tt.current)
			f.refresh(chain)
			f.wantStatus(t, "reconfigured, refresh failed", chain, certstatus.Valid, tt.current)
			f.clk.Add(90 * time.Minute)
			f.refresh(chain)
			f.wantStatus(t, "another 90 minutes, refresh failed", chain, certstatus.Valid, tt.current)
		})
	}
}

// holdingTransport holds, while hold is set, each request to host until
// release is closed, after telling arrived.
type holdingTransport struct {
	host             string
	hold             atomic.Bool
	arrived, release chan struct{}
}

func (h *holdingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if h.hold.Load() && r.URL.Host == h.host {
		h.arrived <- struct{}{}
		<-h.release
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestReconfigureDuringRefresh: a Reconfigure that lands while a refresh
// runs, after the refresh took a chain's last good answer (its responder
// down) and before it stores its results, still bounds that answer: the
// refresh caps what it stores with the settings in force then.
func TestReconfigureDuringRefresh(t *testing.T) {
	f := newFixture(t)
	other := certstatustest.New(t, "Other CA", f.clk.Now)
	u, err := url.Parse(other.URL)
	if err != nil {
		t.Fatal(err)
	}
	rt := &holdingTransport{host: u.Host, arrived: make(chan struct{}, 1), release: make(chan struct{})}
	f.checker = certstatus.New(certstatus.Config{Now: f.clk.Now, Refresh: 10 * time.Hour, OCSPMaxAge: 24 * time.Hour,
		Client: &http.Client{Transport: rt}})
	_, a := f.leaf(t, true, false)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	b := [][]byte{other.Issue(t, key.Public(), certstatustest.Leaf{Subject: pkix.Name{CommonName: "Other"}, OCSP: true}).Raw, other.Cert.Raw}
	f.ca.OmitNextUpdate(true)
	f.ca.SetThisUpdate(2 * time.Hour)
	f.refresh(a, b)
	f.wantStatus(t, "chain a fetched", a, certstatus.Valid, true)

	f.ca.SetDown(true, true)
	rt.hold.Store(true)
	done := make(chan struct{})
	go func() { defer close(done); f.refresh(a, b) }()
	<-rt.arrived // a's answer kept, b's fetch held
	f.checker.Reconfigure(certstatus.Settings{Refresh: 10 * time.Hour, OCSPMaxAge: 10 * time.Minute})
	close(rt.release)
	<-done
	f.wantStatus(t, "chain a after the refresh the Reconfigure landed in", a, certstatus.Valid, false)
	f.wantStatus(t, "chain b", b, certstatus.Valid, true)
}
