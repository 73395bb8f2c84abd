package tsa

import (
	"context"
	"crypto"
	"crypto/x509"
	"encoding/asn1"
	"errors"
	"fmt"
	"io"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/digitorus/timestamp"
)

// ErrNotEnrolled means that no time-stamping key with a certificate is in
// the token: `signd tsa enroll` and `signd tsa import-cert` make one.
var ErrNotEnrolled = errors.New("tsa: no time-stamping certificate in the token (signd tsa enroll, signd tsa import-cert)")

// MaxNonceLen is the largest nonce, in bytes, a request may carry. RFC 3161
// sets no bound; CSC v1 §11.10 asks for at least 32 bytes. 64 leaves room
// and keeps the token small.
const MaxNonceLen = 64

// oidExtKeyUsage is the extended key usage extension (RFC 5280 §4.2.1.12).
var oidExtKeyUsage = asn1.ObjectIdentifier{2, 5, 29, 37}

// Source gives the current time-stamping key and its certificate.
type Source interface {
	// Current returns the key and certificate that sign the next token,
	// ErrNotEnrolled when there is none.
	Current(ctx context.Context) (crypto.Signer, *x509.Certificate, error)
}

// Authority makes time-stamp tokens. Fill the fields; it is safe for
// concurrent use.
type Authority struct {
	Source Source                // required
	Policy asn1.ObjectIdentifier // TSA policy (csc.timestamp.policy), required
	// Accuracy is the accuracy the tokens claim (csc.timestamp.accuracy);
	// 0 omits the field. genTime is in whole seconds, so a true claim is
	// at least a second (the configuration refuses less).
	Accuracy time.Duration
	Now      func() time.Time // nil = time.Now
}

// Request is one time-stamp request: a digest of Hash and an optional
// nonce, which the token repeats.
type Request struct {
	Hash   crypto.Hash // SHA-256, SHA-384 or SHA-512
	Digest []byte
	Nonce  *big.Int // nil = none
}

// Issued is a time-stamp token and what the audit log records of it.
type Issued struct {
	DER    []byte   // TimeStampToken: CMS ContentInfo with SignedData (RFC 3161 §2.4.2)
	Serial *big.Int // the token's serialNumber
	Time   time.Time
	Signer *x509.Certificate
}

// Stamp makes a token for r. The token's signature is checked against the
// certificate before it is returned (a token the HSM signed wrongly never
// leaves).
func (a *Authority) Stamp(ctx context.Context, r Request) (*Issued, error) {
	switch r.Hash {
	case crypto.SHA256, crypto.SHA384, crypto.SHA512:
	default:
		return nil, fmt.Errorf("tsa: unsupported hash %v", r.Hash)
	}
	if len(r.Digest) != r.Hash.Size() {
		return nil, fmt.Errorf("tsa: digest of %d bytes for %v", len(r.Digest), r.Hash)
	}
	if r.Nonce != nil && (r.Nonce.Sign() < 0 || len(r.Nonce.Bytes()) > MaxNonceLen) {
		return nil, fmt.Errorf("tsa: nonce out of range")
	}
	signer, cert, err := a.Source.Current(ctx)
	if err != nil {
		return nil, err
	}
	now := time.Now
	if a.Now != nil {
		now = a.Now
	}
	ts := timestamp.Timestamp{
		HashAlgorithm:     r.Hash,
		HashedMessage:     r.Digest,
		Time:              now().UTC().Truncate(time.Second), // GeneralizedTime without fractions
		Accuracy:          a.Accuracy,
		Policy:            a.Policy,
		Nonce:             r.Nonce,
		AddTSACertificate: true,
	}
	// The serial number is 160 random bits chosen by the library: unique
	// without shared state, which suits any number of daemons on one
	// store (RFC 3161 §2.4.2 allows integers up to 160 bits).
	resp, err := ts.CreateResponseWithOpts(cert, ctxSigner{ctx, signer}, crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("tsa: sign token: %w", err)
	}
	// ParseResponse verifies the CMS signature with the certificate the
	// token carries; the certificate must be ours.
	got, err := timestamp.ParseResponse(resp)
	if err != nil {
		return nil, fmt.Errorf("tsa: token does not verify: %w", err)
	}
	if len(got.Certificates) == 0 || !got.Certificates[0].Equal(cert) {
		return nil, errors.New("tsa: token does not carry the TSA certificate")
	}
	return &Issued{DER: got.RawToken, Serial: got.SerialNumber, Time: got.Time, Signer: cert}, nil
}

// ctxSigner passes the request's context to signers that take one (an
// hsm.Key bounds its wait for a session by it).
type ctxSigner struct {
	ctx context.Context
	crypto.Signer
}

type digestSigner interface {
	SignDigest(ctx context.Context, hash crypto.Hash, digest []byte) ([]byte, error)
}

func (s ctxSigner) Sign(rand io.Reader, digest []byte, opts crypto.SignerOpts) ([]byte, error) {
	if ds, ok := s.Signer.(digestSigner); ok && opts != nil {
		if _, plain := opts.(crypto.Hash); plain {
			return ds.SignDigest(s.ctx, opts.HashFunc(), digest)
		}
	}
	return s.Signer.Sign(rand, digest, opts)
}

// CheckCertificate checks that cert may sign time-stamp tokens (RFC 3161
// §2.3): exactly one extended key usage, id-kp-timeStamping, in a critical
// extension, valid at now, and its public key is pub.
func CheckCertificate(cert *x509.Certificate, pub crypto.PublicKey, now time.Time) error {
	var eku int
	for _, e := range cert.Extensions {
		if !e.Id.Equal(oidExtKeyUsage) {
			continue
		}
		eku++
		if !e.Critical {
			return errors.New("the extended key usage extension must be critical (RFC 3161 §2.3)")
		}
	}
	switch {
	case eku == 0:
		return errors.New("the certificate has no extended key usage; a TSA certificate needs a critical id-kp-timeStamping (RFC 3161 §2.3)")
	case eku > 1:
		return errors.New("the certificate has more than one extended key usage extension")
	case len(cert.UnknownExtKeyUsage) != 0 || len(cert.ExtKeyUsage) != 1 || cert.ExtKeyUsage[0] != x509.ExtKeyUsageTimeStamping:
		return errors.New("the extended key usage must be id-kp-timeStamping only (RFC 3161 §2.3)")
	case now.Before(cert.NotBefore) || now.After(cert.NotAfter):
		return fmt.Errorf("the certificate is not valid now (valid %s to %s)",
			cert.NotBefore.UTC().Format(time.RFC3339), cert.NotAfter.UTC().Format(time.RFC3339))
	}
	if k, ok := cert.PublicKey.(interface{ Equal(crypto.PublicKey) bool }); !ok || !k.Equal(pub) {
		return errors.New("the certificate's public key is not the time-stamping key")
	}
	return nil
}

// ParsePolicy parses a dotted object identifier such as 1.3.6.1.4.1.99999.1
// (at least two arcs, the first 0, 1 or 2; X.660).
func ParsePolicy(s string) (asn1.ObjectIdentifier, error) {
	parts := strings.Split(s, ".")
	if len(s) > 200 || len(parts) < 2 {
		return nil, fmt.Errorf("policy %q is not a dotted object identifier", s)
	}
	oid := make(asn1.ObjectIdentifier, len(parts))
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || p != strconv.Itoa(n) {
			return nil, fmt.Errorf("policy %q is not a dotted object identifier", s)
		}
		oid[i] = n
	}
	if oid[0] > 2 || oid[0] < 2 && oid[1] > 39 {
		return nil, fmt.Errorf("policy %q is not a valid object identifier", s)
	}
	if _, err := asn1.Marshal(oid); err != nil {
		return nil, fmt.Errorf("policy %q: %w", s, err)
	}
	return oid, nil
}
