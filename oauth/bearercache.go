package oauth

import (
	"sync"
	"time"
)

// DefaultBearerCacheSize is how many accepted access tokens RequireBearer
// remembers when BearerConfig.CacheSize is 0.
const DefaultBearerCacheSize = 4096

// bearerCache remembers the access tokens RequireBearer accepted, keyed by
// the token's fingerprint (never the token), each with the revocation
// generation (store.RevocationReader) of the transaction that read it. An
// entry stands only while the store's generation still has that value: any
// committed write that could refuse a token — by this process, by the
// admin CLI on the same file, or by another node of a shared store — raises
// it, and the next request reads the records again. Only verdicts that
// accept are kept; unknown and refused tokens always go to the store.
//
// It is bounded: when full, an entry chosen at random (Go's map order)
// makes room, so the cost of a miss is what the store lookup costs today.
type bearerCache struct {
	max int
	mu  sync.Mutex
	m   map[[32]byte]bearerEntry
}

// bearerEntry is an accepted token: what its Grant says, and the
// generation the lookup saw.
type bearerEntry struct {
	gen   uint64
	grant Grant
}

func newBearerCache(size int) *bearerCache {
	switch {
	case size < 0:
		return nil
	case size == 0:
		size = DefaultBearerCacheSize
	}
	return &bearerCache{max: size, m: make(map[[32]byte]bearerEntry, min(size, 1024))}
}

// get returns the entry of key if it was stored at generation gen and the
// token has not expired at now. A nil cache has no entries.
func (c *bearerCache) get(key [32]byte, gen uint64, now time.Time) (bearerEntry, bool) {
	if c == nil {
		return bearerEntry{}, false
	}
	c.mu.Lock()
	e, ok := c.m[key]
	c.mu.Unlock()
	if !ok || e.gen != gen || !now.Before(e.grant.ExpiresAt) {
		return bearerEntry{}, false
	}
	return e, true
}

// put stores e under key, evicting a random entry when full.
func (c *bearerCache) put(key [32]byte, e bearerEntry) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[key]; !ok && len(c.m) >= c.max {
		for k := range c.m {
			delete(c.m, k)
			break
		}
	}
	c.m[key] = e
}
