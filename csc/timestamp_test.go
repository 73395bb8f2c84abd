package csc_test

import (
	"context"
	"crypto"
	"encoding/base64"
	"fmt"
	"math/big"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/signd/signd/csc"
	"github.com/signd/signd/hsm"
	"github.com/signd/signd/oauth"
	"github.com/signd/signd/store"
)

// fakeStamper records what it was asked last and answers a fixed "token".
// It is called from parallel requests: mu guards what it records.
type fakeStamper struct {
	calls  atomic.Int32
	mu     sync.Mutex
	hash   crypto.Hash
	digest []byte
	nonce  *big.Int
	err    error
}

func (f *fakeStamper) TimeStamp(_ context.Context, h crypto.Hash, d []byte, n *big.Int) ([]byte, *big.Int, error) {
	f.calls.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hash, f.digest, f.nonce = h, d, n
	if f.err != nil {
		return nil, nil, f.err
	}
	return []byte("token"), big.NewInt(0xabc), nil
}

func withStamper(s csc.TimeStamper) envOption { return func(h *csc.Handler) { h.TimeStamper = s } }

func timestampBody(d []byte, algo, extra string) string {
	return `{"hash":"` + base64.StdEncoding.EncodeToString(d) + `","hashAlgo":"` + algo + `"` + extra + `}`
}

// TestTimestampHandler: the request is parsed and checked before the
// TimeStamper is asked; the token leaves with its audit entry only.
func TestTimestampHandler(t *testing.T) {
	f := &fakeStamper{}
	e := newEnv(t, withStamper(f))
	bearer := e.accessToken("alice", "rp1")
	d := digest("a signature value")

	r := e.call("signatures/timestamp", bearer, timestampBody(d, "2.16.840.1.101.3.4.2.1", `,"nonce":"00ff"`))
	if r.status != http.StatusOK || r.str("timestamp") != base64.StdEncoding.EncodeToString([]byte("token")) {
		t.Fatalf("timestamp: %d %s", r.status, r.raw)
	}
	if r.header.Get("Cache-Control") != "no-store" {
		t.Errorf("Cache-Control %q", r.header.Get("Cache-Control"))
	}
	if f.hash != crypto.SHA256 || !slices.Equal(f.digest, d) || f.nonce.Int64() != 255 {
		t.Errorf("TimeStamper got %v %x %v", f.hash, f.digest, f.nonce)
	}
	entries := e.auditEntries()
	if len(entries) != 1 || entries[0].Kind != store.AuditTimestamp || entries[0].User != "alice" || entries[0].Client != "rp1" ||
		entries[0].Reason != "serial abc" || !slices.Equal(entries[0].Hashes, []string{hexOf(d)}) {
		t.Errorf("audit %+v", entries)
	}

	// Refusals never reach the TimeStamper.
	calls := f.calls.Load()
	for _, body := range []string{
		`{}`, `{"hash":"` + b64(d) + `"}`, timestampBody(d[:31], "2.16.840.1.101.3.4.2.1", ""),
		timestampBody(d, "1.3.14.3.2.26", ""), timestampBody(d, "2.16.840.1.101.3.4.2.1", `,"nonce":"0"`),
		timestampBody(d, "2.16.840.1.101.3.4.2.1", `,"nonce":"`+strings.Repeat("0", 130)+`"`),
	} {
		if r := e.call("signatures/timestamp", bearer, body); r.status != http.StatusBadRequest || r.str("error") != oauth.CodeInvalidRequest {
			t.Errorf("%s: %d %s", body, r.status, r.raw)
		}
	}
	if f.calls.Load() != calls {
		t.Error("a refused request reached the TimeStamper")
	}
	// A nonce of exactly 64 bytes is fine.
	if r := e.call("signatures/timestamp", bearer, timestampBody(d, "2.16.840.1.101.3.4.2.1", `,"nonce":"`+strings.Repeat("ff", 64)+`"`)); r.status != http.StatusOK {
		t.Errorf("64-byte nonce: %d %s", r.status, r.raw)
	}
}

// TestTimestampAuditFails: when the audit entry cannot be committed, the
// token does not leave (503, nothing recorded).
func TestTimestampAuditFails(t *testing.T) {
	disk := &fullDisk{}
	f := &fakeStamper{}
	e := newEnv(t, withStamper(f), func(h *csc.Handler) { disk.Store = h.Store; h.Store = disk })
	bearer := e.accessToken("alice", "rp1")
	disk.full.Store(true)
	r := e.call("signatures/timestamp", bearer, timestampBody(digest("x"), "2.16.840.1.101.3.4.2.1", ""))
	if r.status != http.StatusServiceUnavailable || strings.Contains(string(r.raw), "timestamp\"") {
		t.Errorf("timestamp with a failing audit commit: %d %s", r.status, r.raw)
	}
	if n := len(e.auditEntries()); n != 0 {
		t.Errorf("%d audit entries", n)
	}
}

// TestTimestampNotEnrolled: no TSA key is a server_error with a clear
// description; an HSM outage is 503.
func TestTimestampNotEnrolled(t *testing.T) {
	f := &fakeStamper{err: fmt.Errorf("%w: no certificate", csc.ErrTimeStampNotEnrolled)}
	e := newEnv(t, withStamper(f))
	bearer := e.accessToken("alice", "rp1")
	r := e.call("signatures/timestamp", bearer, timestampBody(digest("x"), "2.16.840.1.101.3.4.2.1", ""))
	wantError(t, r, http.StatusInternalServerError, oauth.CodeServerError, "The time-stamping authority has no usable key and certificate")

	f.err = fmt.Errorf("device error: %w", hsm.ErrTokenUnavailable) // answers Unavailable
	r = e.call("signatures/timestamp", bearer, timestampBody(digest("x"), "2.16.840.1.101.3.4.2.1", ""))
	if r.status != http.StatusServiceUnavailable {
		t.Errorf("HSM outage: %d %s", r.status, r.raw)
	}
	if n := len(e.auditEntries()); n != 0 {
		t.Errorf("%d audit entries for no token", n)
	}
}

// TestTimestampDisabled: without a TimeStamper the method is 501 and info
// does not list it; with one, info does.
func TestTimestampDisabled(t *testing.T) {
	e := newEnv(t)
	bearer := e.accessToken("alice", "rp1")
	r := e.call("signatures/timestamp", bearer, timestampBody(digest("x"), "2.16.840.1.101.3.4.2.1", ""))
	if r.status != http.StatusNotImplemented || r.str("error") != "not_implemented" {
		t.Errorf("disabled: %d %s", r.status, r.raw)
	}
	if strings.Contains(string(e.call("info", "", `{}`).raw), "signatures/timestamp") {
		t.Error("info lists signatures/timestamp while it is disabled")
	}
	on := newEnv(t, withStamper(&fakeStamper{}))
	if !strings.Contains(string(on.call("info", "", `{}`).raw), `"signatures/timestamp"`) {
		t.Error("info does not list signatures/timestamp while it is enabled")
	}
}
