package protocol

import (
	"crypto/x509"
	"sync"
)

// leafCache keeps parsed leaf certificates by their DER, so the signHash
// path does not parse the same certificate on every request. A stored
// credential's chain changes only by import (new DER, new entry); the
// cache is cleared when it reaches maxLeaves, so it never grows unbounded.
type leafCache struct {
	mu sync.Mutex
	m  map[string]*x509.Certificate
}

const maxLeaves = 4096

// parse returns the parsed certificate for der. The result is shared:
// callers must not modify it.
func (c *leafCache) parse(der []byte) (*x509.Certificate, error) {
	c.mu.Lock()
	cert, ok := c.m[string(der)]
	c.mu.Unlock()
	if ok {
		return cert, nil
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxLeaves {
		c.m = make(map[string]*x509.Certificate)
	}
	c.m[string(der)] = cert
	c.mu.Unlock()
	return cert, nil
}
