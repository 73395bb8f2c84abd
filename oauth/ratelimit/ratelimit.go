package ratelimit

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"golang.org/x/time/rate"
)

// DefaultMaxKeys is Config.MaxKeys when it is not set.
const DefaultMaxKeys = 10000

// Metrics counts refusals; cmd adapts it to Prometheus. It must be safe
// for concurrent use and must not block.
type Metrics interface {
	// ObserveRateLimited is called once per refused request with the
	// limit's Config.Name.
	ObserveRateLimited(limit string)
}

// Config configures one limit.
type Config struct {
	// Name names the limit in the metric and in Refused ("timestamp",
	// "token", "auth_login", "forms").
	Name string
	// Rate is how many requests a second refill a key's bucket; 0 means
	// no limit (New returns a nil *Limiter, which allows everything).
	Rate float64
	// Burst is the size of a key's bucket: how many requests a key may
	// make at once after a quiet spell. At least 1 when Rate is set.
	Burst int
	// MaxKeys bounds the keys whose buckets are kept (DefaultMaxKeys when
	// 0); past it the least recently used key's bucket is dropped.
	MaxKeys int
	Now     func() time.Time // nil = time.Now
	Metrics Metrics          // nil = none
}

// Limiter is one limit over many keys. A nil *Limiter allows every
// request. It is safe for concurrent use.
type Limiter struct {
	name    string
	limit   rate.Limit
	burst   int
	now     func() time.Time
	metrics Metrics

	mu      sync.Mutex
	buckets *simplelru.LRU[string, *rate.Limiter]
}

// New builds the limit, or returns nil when cfg.Rate is 0 (no limit).
func New(cfg Config) (*Limiter, error) {
	switch {
	case cfg.Rate == 0:
		return nil, nil
	case cfg.Name == "":
		return nil, errors.New("ratelimit: Config.Name is required")
	case !(cfg.Rate > 0) || math.IsInf(cfg.Rate, 1):
		return nil, fmt.Errorf("ratelimit: %s: rate %v is not a positive number", cfg.Name, cfg.Rate)
	case cfg.Burst < 1:
		return nil, fmt.Errorf("ratelimit: %s: burst %d is less than 1", cfg.Name, cfg.Burst)
	case cfg.MaxKeys < 0:
		return nil, fmt.Errorf("ratelimit: %s: MaxKeys %d is negative", cfg.Name, cfg.MaxKeys)
	}
	if cfg.MaxKeys == 0 {
		cfg.MaxKeys = DefaultMaxKeys
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	buckets, err := simplelru.NewLRU[string, *rate.Limiter](cfg.MaxKeys, nil)
	if err != nil {
		return nil, fmt.Errorf("ratelimit: %s: %w", cfg.Name, err)
	}
	return &Limiter{name: cfg.Name, limit: rate.Limit(cfg.Rate), burst: cfg.Burst, now: cfg.Now,
		metrics: cfg.Metrics, buckets: buckets}, nil
}

// Allow takes one request from key's bucket at the clock's time. It
// returns nil, or a *Refused (counted in the metric) when the bucket is
// empty.
func (l *Limiter) Allow(key string) error {
	if l == nil {
		return nil
	}
	now := l.now()
	b := l.bucket(key)
	if b.AllowN(now, 1) {
		return nil
	}
	if l.metrics != nil {
		l.metrics.ObserveRateLimited(l.name)
	}
	// The bucket is short of one token by 1-tokens; it refills at limit.
	wait := time.Duration((1 - b.TokensAt(now)) / float64(l.limit) * float64(time.Second))
	return &Refused{Limit: l.name, RetryAfter: wait}
}

// bucket returns key's bucket, making a full one for a key it does not
// hold (a new key, or one dropped as least recently used).
func (l *Limiter) bucket(key string) *rate.Limiter {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets.Get(key)
	if !ok {
		b = rate.NewLimiter(l.limit, l.burst)
		l.buckets.Add(key, b)
	}
	return b
}

// Len returns how many keys' buckets are kept (at most MaxKeys).
func (l *Limiter) Len() int {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buckets.Len()
}

// Refused is the error of a request over its limit.
type Refused struct {
	Limit string // Config.Name
	// RetryAfter is how long until the key's bucket holds a request again.
	RetryAfter time.Duration
}

func (e *Refused) Error() string {
	return "ratelimit: too many requests (" + e.Limit + "), retry after " + e.Seconds() + "s"
}

// Seconds is the Retry-After value (RFC 9110 §10.2.3): RetryAfter in
// whole seconds, rounded up, at least 1.
func (e *Refused) Seconds() string {
	s := int64(math.Ceil(e.RetryAfter.Seconds()))
	return strconv.FormatInt(max(s, 1), 10)
}

// RemoteKey is the key of a remote address (echo.Context.RealIP, which
// believes forwarding headers only from server.trusted_proxies): an IPv4
// address as it is, an IPv6 address as its /64 (one host usually holds a
// whole /64, so per address it could pick a fresh bucket per request), an
// IPv4-mapped IPv6 address as the IPv4 one. Anything else (RealIP always
// gives an address) is kept as it is, cut to 64 bytes.
func RemoteKey(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		if len(ip) > 64 {
			ip = ip[:64]
		}
		return ip
	}
	a = a.Unmap().WithZone("")
	if a.Is4() {
		return a.String()
	}
	p, _ := a.Prefix(64)
	return p.String()
}
