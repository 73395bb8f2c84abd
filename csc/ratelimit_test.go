package csc_test

import (
	"encoding/base64"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/signd/signd/csc"
	"github.com/signd/signd/oauth/ratelimit"
	"github.com/signd/signd/store/storetest"
)

// withLimit sets one of the handler's rate limits on its clock.
func withLimit(t *testing.T, set func(h *csc.Handler, l *ratelimit.Limiter), name string, rate float64, burst int) envOption {
	return func(h *csc.Handler) {
		l, err := ratelimit.New(ratelimit.Config{Name: name, Rate: rate, Burst: burst, Now: h.Now})
		if err != nil {
			t.Fatal(err)
		}
		set(h, l)
	}
}

// wantTooMany checks a CSC 429: CSC v1 §10 JSON with Retry-After.
func wantTooMany(t *testing.T, r response, retryAfter string) {
	t.Helper()
	wantError(t, r, http.StatusTooManyRequests, "temporarily_unavailable", "Too many requests, try again later")
	if got := r.header.Get("Retry-After"); got != retryAfter {
		t.Errorf("Retry-After %q, want %q", got, retryAfter)
	}
}

// TestTimestampRateLimit: signatures/timestamp is limited per client (the
// bearer's, whichever user): past the burst a client gets 429 with
// Retry-After, and neither the TimeStamper nor the audit log sees the
// request; another client is unaffected; the clock refills the bucket;
// parallel requests get no more than the burst.
func TestTimestampRateLimit(t *testing.T) {
	f := &fakeStamper{}
	e := newEnv(t, withStamper(f), withLimit(t, func(h *csc.Handler, l *ratelimit.Limiter) { h.TimestampLimit = l }, "timestamp", 0.5, 3))
	alice, bobSameClient, bobOther := e.accessToken("alice", "rp1"), e.accessToken("bob", "rp1"), e.accessToken("bob", "rp2")
	body := timestampBody(digest("a signature value"), "2.16.840.1.101.3.4.2.1", "")
	for i, bearer := range []string{alice, bobSameClient, alice} {
		if r := e.call("signatures/timestamp", bearer, body); r.status != http.StatusOK {
			t.Fatalf("request %d of the burst: %d %s", i+1, r.status, r.raw)
		}
	}
	wantTooMany(t, e.call("signatures/timestamp", bobSameClient, body), "2")
	if r := e.call("signatures/timestamp", bobOther, body); r.status != http.StatusOK {
		t.Errorf("another client: %d %s", r.status, r.raw)
	}
	if n, entries := f.calls.Load(), len(e.auditEntries()); n != 4 || entries != 4 {
		t.Errorf("%d time-stamps made, %d audit entries; want 4 and 4 (the refusal neither)", n, entries)
	}
	e.clock.Advance(time.Second)
	wantTooMany(t, e.call("signatures/timestamp", alice, body), "1")
	e.clock.Advance(time.Second)
	if r := e.call("signatures/timestamp", alice, body); r.status != http.StatusOK {
		t.Errorf("after 2s: %d %s", r.status, r.raw)
	}

	e.clock.Advance(time.Minute) // full again: 3
	var ok, refused atomic.Int32
	storetest.AtOnce(24, func(int) {
		switch r := e.call("signatures/timestamp", alice, body); r.status {
		case http.StatusOK:
			ok.Add(1)
		case http.StatusTooManyRequests:
			refused.Add(1)
		default:
			t.Errorf("parallel: %d %s", r.status, r.raw)
		}
	})
	if ok.Load() != 3 || refused.Load() != 21 {
		t.Errorf("24 parallel time-stamps: %d granted, %d refused; want the burst, 3, and 21", ok.Load(), refused.Load())
	}
}

// TestAuthLoginRateLimit: auth/login is limited per remote address,
// before the credentials are read: past the burst the password is not
// checked at all; another address is unaffected; the clock refills.
func TestAuthLoginRateLimit(t *testing.T) {
	fl := &fakeLogin{}
	e := newEnv(t, withLogin(fl), withLimit(t, func(h *csc.Handler, l *ratelimit.Limiter) { h.AuthLoginLimit = l }, "auth_login", 1, 2))
	login := func(from, password string) response {
		t.Helper()
		return e.do(http.MethodPost, "auth/login", "", map[string]string{
			"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte("alice:"+password)), "X-Forwarded-For": from,
		})
	}
	if r := login("203.0.113.5", "wrong"); r.status != http.StatusUnauthorized {
		t.Fatalf("first guess: %d %s", r.status, r.raw)
	}
	if r := login("203.0.113.5", "pw"); r.status != http.StatusOK {
		t.Fatalf("right password: %d %s", r.status, r.raw)
	}
	wantTooMany(t, login("203.0.113.5", "pw"), "1")
	fl.mu.Lock()
	checked := len(fl.calls)
	fl.mu.Unlock()
	if checked != 2 {
		t.Errorf("%d logins checked, want 2: the refused one must not reach the password check", checked)
	}
	if r := login("203.0.113.6", "pw"); r.status != http.StatusOK {
		t.Errorf("another address: %d %s", r.status, r.raw)
	}
	if r := login("2001:db8:1:2::7", "pw"); r.status != http.StatusOK {
		t.Errorf("an IPv6 address: %d %s", r.status, r.raw)
	}
	login("2001:db8:1:2::8", "pw")
	wantTooMany(t, login("2001:db8:1:2:ffff::9", "pw"), "1") // the same /64
	e.clock.Advance(time.Second)
	if r := login("203.0.113.5", "pw"); r.status != http.StatusOK {
		t.Errorf("after 1s: %d %s", r.status, r.raw)
	}
}
