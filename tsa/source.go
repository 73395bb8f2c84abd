package tsa

import (
	"context"
	"crypto"
	"crypto/x509"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/signd/signd/hsm"
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

// cacheTTL is how long Source keeps what it found: a newly imported
// certificate signs within a minute, and a token costs no PKCS#11 find.
const cacheTTL = time.Minute

// HSMSource finds the TSA key and certificate on the token: of the
// certificates labelled Label whose key pair is on the token and that
// pass CheckCertificate now, the one issued last.
type HSMSource struct {
	Token Token            // required
	Label string           // "" = DefaultLabel
	Now   func() time.Time // nil = time.Now

	mu      sync.Mutex
	key     *hsm.Key
	cert    *x509.Certificate
	fetched time.Time
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
	if s.key != nil && now.Sub(s.fetched) < cacheTTL && now.Before(s.cert.NotAfter) {
		return s.key, s.cert, nil
	}
	label := s.Label
	if label == "" {
		label = DefaultLabel
	}
	certs, err := s.Token.Certificates(ctx, label)
	if err != nil {
		return nil, nil, err
	}
	var best *hsm.Certificate
	var bestKey *hsm.Key
	var why error
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
		if err := CheckCertificate(c.Cert, key.Public(), now); err != nil {
			why = fmt.Errorf("certificate %q: %w", c.Cert.Subject, err)
			continue
		}
		if best == nil || c.Cert.NotBefore.After(best.Cert.NotBefore) {
			best, bestKey = c, key
		}
	}
	if best == nil {
		if why != nil {
			return nil, nil, fmt.Errorf("%w: %w", ErrNotEnrolled, why)
		}
		return nil, nil, ErrNotEnrolled
	}
	s.key, s.cert, s.fetched = bestKey, best.Cert, now
	return s.key, s.cert, nil
}
