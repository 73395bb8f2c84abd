package tsa

import (
	"bytes"
	"context"
	"crypto"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/signd/signd/csc/certstatus"
	"github.com/signd/signd/hsm"
	"github.com/signd/signd/store"
)

// DefaultLabel is the CKA_LABEL of the TSA certificate on the token when
// csc.timestamp.label is not set; the key pairs are labelled
// "<label>-<id>".
const DefaultLabel = "signd-tsa"

// Token is what Source needs of the HSM; *hsm.Token satisfies it.
type Token interface {
	Certificates(ctx context.Context, label string) ([]hsm.Certificate, error)
	Key(ctx context.Context, id []byte) (*hsm.Key, error)
}

// Revocation answers for a certificate chain's revocation status;
// *certstatus.Checker is one.
type Revocation interface {
	// Status returns the chain's last known status and whether it is
	// current (certstatus.Checker.Status).
	Status(chain [][]byte) (certstatus.Status, bool)
}

// cacheTTL is how long Source keeps what it found: a newly imported
// certificate signs within a minute, and a token costs no PKCS#11 find.
const cacheTTL = time.Minute

// HSMSource finds the TSA key and certificate on the token: of the
// certificates labelled Label whose key pair is on the token, is a
// time-stamping key (keys.go: labelled "<Label>-<id>", held by no record
// of the store) and that pass CheckCertificate now, the one issued last.
type HSMSource struct {
	Token Token // required
	// Records reads the store's records that hold keys (KeyHolder):
	// required, a key one of them holds never signs a token.
	Records store.Viewer[KeyRecords]
	Label   string           // "" = DefaultLabel
	Now     func() time.Time // nil = time.Now
	// Revocation, when set (csc.cert_status.enabled), has the chain of a
	// certificate that signs Valid and current, checked on every token
	// (a cache read); list Chains to it.
	Revocation Revocation

	mu      sync.Mutex
	key     *hsm.Key
	cert    *x509.Certificate
	chain   [][]byte // of cert
	fetched time.Time
	// free holds the key IDs KeyHolder found held by no record. A
	// record's key ID is that of a key generated for it (a new random
	// CKA_ID) and never changes, so a key free once stays free.
	free map[string]bool
}

var _ Source = (*HSMSource)(nil)

// Current implements Source.
func (s *HSMSource) Current(ctx context.Context) (crypto.Signer, *x509.Certificate, error) {
	now := time.Now()
	if s.Now != nil {
		now = s.Now()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.key != nil && now.Sub(s.fetched) < cacheTTL && now.Before(s.cert.NotAfter) && s.standing(s.chain) == nil {
		return s.key, s.cert, nil
	}
	s.key, s.cert, s.chain = nil, nil, nil
	cands, why, err := s.candidates(ctx, now)
	if err != nil {
		return nil, nil, err
	}
	var best *candidate
	for i := range cands {
		c := &cands[i]
		if err := s.standing(c.chain); err != nil {
			why = fmt.Errorf("certificate %q: %w", c.cert.Subject, err)
			continue
		}
		if best == nil || c.cert.NotBefore.After(best.cert.NotBefore) {
			best = c
		}
	}
	if best == nil {
		if why != nil {
			return nil, nil, fmt.Errorf("%w: %w", ErrNotEnrolled, why)
		}
		return nil, nil, ErrNotEnrolled
	}
	s.key, s.cert, s.chain, s.fetched = best.key, best.cert, best.chain, now
	return s.key, s.cert, nil
}

// Chains returns the chains (DER, leaf first) of the certificates that
// could sign now but for their revocation status: what the certificate
// status checker must keep answers for (Revocation).
func (s *HSMSource) Chains(ctx context.Context) ([][][]byte, error) {
	now := time.Now()
	if s.Now != nil {
		now = s.Now()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cands, _, err := s.candidates(ctx, now)
	if err != nil {
		return nil, err
	}
	chains := make([][][]byte, len(cands))
	for i, c := range cands {
		chains[i] = c.chain
	}
	return chains, nil
}

// candidate is a certificate under the label that may sign, with its key
// and its chain.
type candidate struct {
	key   *hsm.Key
	cert  *x509.Certificate
	chain [][]byte // DER, leaf first
}

// candidates returns the certificates under the label whose key is a
// time-stamping key and that pass CheckCertificate at now, and why the
// last one refused was (nil if none was). An error means the token or the
// store cannot answer now. The caller holds s.mu.
func (s *HSMSource) candidates(ctx context.Context, now time.Time) (_ []candidate, why, _ error) {
	label := s.Label
	if label == "" {
		label = DefaultLabel
	}
	certs, err := s.Token.Certificates(ctx, label)
	if err != nil {
		return nil, nil, err
	}
	issuers, err := s.Token.Certificates(ctx, IssuerLabel(label))
	if err != nil {
		return nil, nil, err
	}
	var out []candidate
	for i := range certs {
		c := &certs[i]
		key, err := s.Token.Key(ctx, c.ID)
		if err != nil && !errors.Is(err, hsm.ErrKeyNotFound) && !errors.Is(err, hsm.ErrAmbiguousKey) && !errors.Is(err, hsm.ErrKeyPolicy) {
			return nil, nil, err // the token cannot answer now
		}
		if err != nil {
			why = fmt.Errorf("certificate %q: key: %w", c.Cert.Subject, err)
			continue
		}
		if !IsKeyLabel(label, key.Label()) {
			why = fmt.Errorf("certificate %q: key %x, labelled %q, is not a time-stamping key (%s-<id>, made by signd tsa enroll)", c.Cert.Subject, c.ID, key.Label(), label)
			continue
		}
		if err := CheckCertificate(c.Cert, key.Public(), now); err != nil {
			why = fmt.Errorf("certificate %q: %w", c.Cert.Subject, err)
			continue
		}
		if err := s.checkFree(ctx, c.ID); err != nil {
			var held heldError
			if !errors.As(err, &held) {
				return nil, nil, err // the store cannot answer now
			}
			why = fmt.Errorf("certificate %q: %w", c.Cert.Subject, err)
			continue
		}
		out = append(out, candidate{key: key, cert: c.Cert, chain: chainOf(c, issuers)})
	}
	return out, why, nil
}

// IssuerLabel is the label under which the issuers' certificates of the
// TSA certificates are kept, with the CKA_ID of the key they certify
// (hsm.Token.StoreCertificates): "<label>/issuer". No key is so labelled
// (csc.timestamp.label has no '/').
func IssuerLabel(label string) string {
	if label == "" {
		label = DefaultLabel
	}
	return label + "/issuer"
}

// chainOf is c's certificate and, in order, those of issuers stored for
// its key that certify it and each other: its chain as far as the token
// holds it.
func chainOf(c *hsm.Certificate, issuers []hsm.Certificate) [][]byte {
	chain := [][]byte{c.Cert.Raw}
	cur := c.Cert
	for len(chain) <= len(issuers) {
		var next *x509.Certificate
		for _, is := range issuers {
			if bytes.Equal(is.ID, c.ID) && !is.Cert.Equal(cur) && bytes.Equal(is.Cert.RawSubject, cur.RawIssuer) &&
				cur.CheckSignatureFrom(is.Cert) == nil {
				next = is.Cert
				break
			}
		}
		if next == nil {
			break
		}
		chain = append(chain, next.Raw)
		cur = next
	}
	return chain
}

// standing is nil when chain may sign as far as its revocation status
// goes: Revocation is nil, or its answer is Valid and current — the rule
// credentials' certificates sign under (csc.cert_status: a revoked,
// suspended or unverifiable certificate does not sign).
func (s *HSMSource) standing(chain [][]byte) error {
	if s.Revocation == nil {
		return nil
	}
	switch st, current := s.Revocation.Status(chain); {
	case st != certstatus.Valid:
		return fmt.Errorf("the certificate is %s (csc.cert_status)", st)
	case !current:
		return errors.New("the certificate's revocation status is not known now (csc.cert_status: no current OCSP or CRL answer)")
	}
	return nil
}

// heldError is checkFree's refusal of a key a record holds.
type heldError struct{ id, holder string }

func (e heldError) Error() string {
	return fmt.Sprintf("key %s is the key of %s, not a time-stamping key", e.id, e.holder)
}

// checkFree fails with a heldError when a record of the store holds the
// key with CKA_ID id (KeyHolder). The caller holds s.mu.
func (s *HSMSource) checkFree(ctx context.Context, id []byte) error {
	if s.free[string(id)] {
		return nil
	}
	if s.Records == nil {
		return errors.New("tsa: HSMSource without Records cannot tell a time-stamping key")
	}
	var holder string
	if err := s.Records.View(ctx, func(tx KeyRecords) (err error) {
		holder, err = KeyHolder(tx, id)
		return err
	}); err != nil {
		return fmt.Errorf("tsa: read the store: %w", err)
	}
	if holder != "" {
		return heldError{hex.EncodeToString(id), holder}
	}
	if s.free == nil {
		s.free = map[string]bool{}
	}
	s.free[string(id)] = true
	return nil
}
