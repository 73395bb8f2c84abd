package tsa

import (
	"context"
	"crypto"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

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

	mu      sync.Mutex
	key     *hsm.Key
	cert    *x509.Certificate
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
