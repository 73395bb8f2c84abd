package certstatus_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ocsp"

	"github.com/signd/signd/csc/certstatus"
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
// fetches every chain again at once, and each setting it changes is the
// one the next refresh uses: the interval of Run, the fetch time limit and
// the max age of an OCSP response without nextUpdate.
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
		f.checker.Reconfigure(certstatus.Settings{Refresh: 10 * time.Minute, Timeout: 2 * time.Second})
		waitFor(t, func() bool { s, _ := f.checker.Status(chain); return s == certstatus.Revoked })
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
		f := newFixture(t)
		f.checker = certstatus.New(certstatus.Config{Now: f.clk.Now, OCSPMaxAge: 5 * time.Minute})
		_, chain := f.leaf(t, true, false)
		f.ca.OmitNextUpdate(true)
		f.ca.SetThisUpdate(6 * time.Minute)
		f.refresh(chain)
		f.wantStatus(t, "6 minutes old, 5-minute max age", chain, certstatus.Valid, false)
		f.checker.Reconfigure(certstatus.Settings{OCSPMaxAge: 10 * time.Minute})
		f.refresh(chain)
		f.wantStatus(t, "6 minutes old, max age reconfigured to 10 minutes", chain, certstatus.Valid, true)
	})
}
