package certstatus

import (
	"crypto/sha256"
	"crypto/x509"
	"fmt"
	"math/big"
	"time"
)

// answer is what one verified OCSP response or CRL says of one
// certificate.
type answer struct {
	status Status
	// this is the answer's thisUpdate; until is when it stops being
	// current.
	this, until time.Time
	// open is an OCSP response without nextUpdate, current for as long
	// as the Settings allow (OCSPMaxAge, Refresh) after this and after
	// fetched, when it was fetched.
	open    bool
	fetched time.Time
	// number is a CRL's cRLNumber (nil: none, or OCSP).
	number *big.Int
}

// history is what the checker has taken about one certificate, kept
// across refreshes as long as a listed chain holds the certificate, so
// that an older answer (a replayed OCSP response, an old CRL still before
// its nextUpdate) never replaces a newer one (RFC 6960 §3.2, RFC 5280
// §5.2.3).
type history struct {
	// ocsp and crl are the thisUpdate of the newest answer taken from
	// each kind of source; crlNumber the cRLNumber of the newest CRL.
	// Each kind is compared with itself only: a CRL is published less
	// often than an OCSP responder answers, and is still taken when the
	// responder is down.
	ocsp, crl time.Time
	crlNumber *big.Int
	// revoked is final: only certificateHold is ever lifted (RFC 5280
	// §5.3.1).
	revoked bool
	// held is the thisUpdate of the newest answer that put the
	// certificate on hold; zero when no hold stands. Only an answer
	// newer than it lifts the hold, whatever its source.
	held time.Time
}

// certKey identifies a certificate (its DER).
func certKey(cert *x509.Certificate) [32]byte { return sha256.Sum256(cert.Raw) }

// take settles a verified answer of kind ("ocsp" or "crl") about the
// certificate k against what was taken before, records it, and returns
// the status it leaves: a revocation is taken whatever its age and stays
// (every later answer then says revoked); any other answer older than the last one of its kind (a lower cRLNumber
// for a CRL), or a "good" one not newer than the hold it would lift, is
// refused.
func (c *Checker) take(k [32]byte, kind string, a answer) (Status, error) {
	c.hmu.Lock()
	defer c.hmu.Unlock()
	h := c.history[k]
	if h == nil {
		h = &history{}
	}
	last := &h.ocsp
	if kind == "crl" {
		last = &h.crl
	}
	if a.status != Revoked && !h.revoked {
		switch {
		case a.this.Before(*last):
			return "", fmt.Errorf("older than the last answer taken: thisUpdate %s, before %s",
				a.this.UTC().Format(time.RFC3339), last.UTC().Format(time.RFC3339))
		case kind == "crl" && a.number != nil && h.crlNumber != nil && a.number.Cmp(h.crlNumber) < 0:
			return "", fmt.Errorf("older than the last CRL taken: cRLNumber %s, below %s", a.number, h.crlNumber)
		case a.status == Valid && !h.held.IsZero() && !a.this.After(h.held):
			return "", fmt.Errorf("not newer than the answer that put the certificate on hold (thisUpdate %s)",
				h.held.UTC().Format(time.RFC3339))
		}
	}
	if a.this.After(*last) {
		*last = a.this
	}
	if kind == "crl" && a.number != nil && (h.crlNumber == nil || a.number.Cmp(h.crlNumber) > 0) {
		h.crlNumber = a.number
	}
	switch a.status {
	case Revoked:
		h.revoked = true
	case Suspended:
		if a.this.After(h.held) {
			h.held = a.this
		}
	case Valid:
		h.held = time.Time{}
	}
	if len(c.history) < maxEntries || c.history[k] != nil {
		c.history[k] = h
	}
	if h.revoked {
		return Revoked, nil
	}
	return a.status, nil
}

// standing is the worst status the history of chain's certificates
// holds: Revoked when one was taken revoked, Suspended when a hold on one
// stands, else Valid.
func (c *Checker) standing(chain [][]byte) Status {
	c.hmu.Lock()
	defer c.hmu.Unlock()
	s := Valid
	for _, der := range chain {
		h := c.history[sha256.Sum256(der)]
		switch {
		case h == nil:
		case h.revoked:
			return Revoked
		case !h.held.IsZero():
			s = Suspended
		}
	}
	return s
}

// forget drops the history of every certificate not in keep.
func (c *Checker) forget(keep map[[32]byte]bool) {
	c.hmu.Lock()
	defer c.hmu.Unlock()
	for k := range c.history {
		if !keep[k] {
			delete(c.history, k)
		}
	}
}
