package ratelimit_test

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/signd/signd/oauth/ratelimit"
	"github.com/signd/signd/store/storetest"
)

type countMetrics struct {
	mu sync.Mutex
	n  map[string]int
}

func (m *countMetrics) ObserveRateLimited(limit string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.n == nil {
		m.n = map[string]int{}
	}
	m.n[limit]++
}

func newLimiter(t *testing.T, cfg ratelimit.Config) *ratelimit.Limiter {
	t.Helper()
	l, err := ratelimit.New(cfg)
	if err != nil || l == nil {
		t.Fatalf("New(%+v) = %v, %v", cfg, l, err)
	}
	return l
}

func refused(t *testing.T, err error) *ratelimit.Refused {
	t.Helper()
	var r *ratelimit.Refused
	if !errors.As(err, &r) {
		t.Fatalf("got %v, want a *Refused", err)
	}
	return r
}

// TestBurstRefillAndOtherKeys: a key gets Burst requests at once, then is
// refused with the wait until its next token; another key is unaffected;
// the clock, not a sleep, refills the bucket.
func TestBurstRefillAndOtherKeys(t *testing.T) {
	clock := storetest.NewClock(time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC))
	m := &countMetrics{}
	l := newLimiter(t, ratelimit.Config{Name: "token", Rate: 0.5, Burst: 3, Now: clock.Now, Metrics: m})
	for i := range 3 {
		if err := l.Allow("rp"); err != nil {
			t.Fatalf("request %d of the burst: %v", i+1, err)
		}
	}
	r := refused(t, l.Allow("rp"))
	if r.Limit != "token" || r.RetryAfter != 2*time.Second || r.Seconds() != "2" {
		t.Errorf("refusal %+v (Retry-After %s), want token, 2s", r, r.Seconds())
	}
	if err := l.Allow("other-rp"); err != nil {
		t.Errorf("another key was refused: %v", err)
	}
	clock.Advance(1500 * time.Millisecond)
	if r := refused(t, l.Allow("rp")); r.RetryAfter != 500*time.Millisecond || r.Seconds() != "1" {
		t.Errorf("after 1.5s: %+v (Retry-After %s), want 0.5s, 1", r, r.Seconds())
	}
	clock.Advance(500 * time.Millisecond)
	if err := l.Allow("rp"); err != nil {
		t.Errorf("after 2s the bucket holds one request: %v", err)
	}
	refused(t, l.Allow("rp"))
	if m.n["token"] != 3 {
		t.Errorf("metric counted %v, want token 3", m.n)
	}
}

// TestConcurrentRequestsCannotExceedBurst: 64 requests of one key at once
// on a frozen clock: exactly Burst pass.
func TestConcurrentRequestsCannotExceedBurst(t *testing.T) {
	clock := storetest.NewClock(time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC))
	for round := range 20 {
		l := newLimiter(t, ratelimit.Config{Name: "forms", Rate: 1, Burst: 10, Now: clock.Now})
		var passed atomic.Int32
		storetest.AtOnce(64, func(int) {
			if l.Allow("203.0.113.9") == nil {
				passed.Add(1)
			}
		})
		if n := passed.Load(); n != 10 {
			t.Fatalf("round %d: %d of 64 concurrent requests passed, want the burst, 10", round, n)
		}
	}
}

// TestKeysBounded: a flood of distinct keys (a client of many addresses)
// keeps at most MaxKeys buckets, and the heap stays flat; a dropped key
// comes back with a full bucket.
func TestKeysBounded(t *testing.T) {
	clock := storetest.NewClock(time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC))
	const maxKeys, flood = 1000, 200000
	l := newLimiter(t, ratelimit.Config{Name: "forms", Rate: 1, Burst: 2, MaxKeys: maxKeys, Now: clock.Now})
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	for i := range maxKeys {
		_ = l.Allow(fmt.Sprintf("2001:db8:%x::/64", i))
	}
	before := heap()
	for i := range flood {
		_ = l.Allow(fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255))
	}
	after := heap()
	if n := l.Len(); n != maxKeys {
		t.Errorf("%d buckets after %d distinct keys, want MaxKeys %d", n, flood, maxKeys)
	}
	// 200 000 buckets would take tens of MiB; 1000 take about 200 KiB.
	if after > before && after-before > 4<<20 {
		t.Errorf("heap grew by %d KiB over %d distinct keys", (after-before)>>10, flood)
	}
	// The first keys were dropped: they start again with a full bucket.
	for range 2 {
		if err := l.Allow("2001:db8:0::/64"); err != nil {
			t.Errorf("a dropped key: %v", err)
		}
	}
	refused(t, l.Allow("2001:db8:0::/64"))
}

func TestNew(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  ratelimit.Config
		ok   bool
	}{
		{"rate 0 is no limit", ratelimit.Config{Name: "x", Rate: 0}, true},
		{"rate and burst", ratelimit.Config{Name: "x", Rate: 0.01, Burst: 1}, true},
		{"no name", ratelimit.Config{Rate: 1, Burst: 1}, false},
		{"negative rate", ratelimit.Config{Name: "x", Rate: -1, Burst: 1}, false},
		{"NaN rate", ratelimit.Config{Name: "x", Rate: math.NaN(), Burst: 1}, false},
		{"infinite rate", ratelimit.Config{Name: "x", Rate: math.Inf(1), Burst: 1}, false},
		{"burst 0", ratelimit.Config{Name: "x", Rate: 1, Burst: 0}, false},
		{"negative MaxKeys", ratelimit.Config{Name: "x", Rate: 1, Burst: 1, MaxKeys: -1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := ratelimit.New(tc.cfg)
			if (err == nil) != tc.ok {
				t.Fatalf("New: %v, want ok %v", err, tc.ok)
			}
			if tc.ok && tc.cfg.Rate == 0 {
				if l != nil {
					t.Fatal("rate 0 built a limiter")
				}
				for range 1000 {
					if err := l.Allow("k"); err != nil {
						t.Fatalf("the nil limiter refused: %v", err)
					}
				}
			}
		})
	}
}

func TestRefusedSeconds(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "1"}, {time.Nanosecond, "1"}, {time.Second, "1"}, {time.Second + time.Millisecond, "2"}, {90 * time.Second, "90"},
	} {
		if got := (&ratelimit.Refused{RetryAfter: tc.d}).Seconds(); got != tc.want {
			t.Errorf("Seconds(%v) = %s, want %s", tc.d, got, tc.want)
		}
	}
}

func TestRemoteKey(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"203.0.113.9", "203.0.113.9"},
		{"::ffff:203.0.113.9", "203.0.113.9"},
		{"2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"},
		{"2001:db8:1:2:ffff::1", "2001:db8:1:2::/64"},
		{"fe80::1%eth0", "fe80::/64"},
		{"not an address", "not an address"},
	} {
		if got := ratelimit.RemoteKey(tc.in); got != tc.want {
			t.Errorf("RemoteKey(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// BenchmarkAllow: the cost a limited request pays, one key and 10 000
// keys in turn (the LRU full and churning).
func BenchmarkAllow(b *testing.B) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	l, err := ratelimit.New(ratelimit.Config{Name: "bench", Rate: 1e6, Burst: 1000000, MaxKeys: 1000, Now: func() time.Time { return now }})
	if err != nil {
		b.Fatal(err)
	}
	keys := make([]string, 10000)
	for i := range keys {
		keys[i] = fmt.Sprintf("10.0.%d.%d", i>>8, i&255)
	}
	b.Run("one key", func(b *testing.B) {
		for b.Loop() {
			_ = l.Allow("203.0.113.9")
		}
	})
	b.Run("churning keys", func(b *testing.B) {
		i := 0
		for b.Loop() {
			_ = l.Allow(keys[i%len(keys)])
			i++
		}
	})
}
