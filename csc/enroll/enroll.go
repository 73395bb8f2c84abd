package enroll

import (
	"context"
	"crypto"
	"crypto/elliptic"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"strings"

	"github.com/signd/signd/hsm"
	"github.com/signd/signd/store"
)

// Keys is what enrollment needs of the token.
type Keys interface {
	// GenerateKey generates an RSA key pair of bits inside the token
	// under label and returns the new key's ID (CKA_ID) and its modulus
	// size.
	GenerateKey(ctx context.Context, label string, bits int) (id []byte, size int, err error)
	// GenerateECKey generates an ECDSA key pair on curve inside the
	// token under label and returns the new key's ID and the curve size.
	GenerateECKey(ctx context.Context, label string, curve elliptic.Curve) (id []byte, size int, err error)
	// Signer returns the private key with id; it signs inside the token.
	Signer(ctx context.Context, id []byte) (crypto.Signer, error)
}

// DefaultAlgorithm is the key algorithm of a Request that names none.
const DefaultAlgorithm = store.AlgRSA2048

// curveOf returns the curve of an EC credential algorithm, nil for RSA.
func curveOf(algo string) elliptic.Curve {
	switch algo {
	case store.AlgECP256:
		return elliptic.P256()
	case store.AlgECP384:
		return elliptic.P384()
	case store.AlgECP521:
		return elliptic.P521()
	}
	return nil
}

// Request is what an operator asks for when creating a credential.
type Request struct {
	Owner     string // username; the subject is CN=<Owner> when Subject is ""
	Algorithm string // a store credential algorithm: rsa-2048 (the default), rsa-3072, rsa-4096, ec-p256, ec-p384 or ec-p521
	Subject   string // RFC 4514 distinguished name of the CSR, see ParseDN
}

// Spec is a checked Request: the key pair to generate and the subject of
// its certificate request.
type Spec struct {
	Algorithm string
	Bits      int            // RSA modulus or EC curve size
	Curve     elliptic.Curve // the EC curve; nil for RSA
	Subject   pkix.Name
}

// Check checks r before anything is generated, so that a typo costs no key
// pair.
func (r Request) Check() (*Spec, error) {
	algo := r.Algorithm
	if algo == "" {
		algo = DefaultAlgorithm
	}
	bits := store.AlgorithmKeyBits(algo)
	if bits == 0 {
		return nil, fmt.Errorf("algorithm %q is not supported (%s)", algo, strings.Join(store.Algorithms(), ", "))
	}
	subject := r.Subject
	if subject == "" {
		subject = "CN=" + escapeDNValue(r.Owner)
	}
	name, err := ParseDN(subject)
	if err != nil {
		return nil, fmt.Errorf("subject: %w", err)
	}
	return &Spec{Algorithm: algo, Bits: bits, Curve: curveOf(algo), Subject: name}, nil
}

// Key is a key pair generated in the token for a credential.
type Key struct {
	ID   []byte // CKA_ID
	Bits int    // RSA modulus or EC curve size
}

// Generate generates s's key pair in the token under label and a DER
// PKCS#10 request for s.Subject signed by it. The key is returned whenever
// it was generated, also together with an error: the caller then destroys
// it, or reports that it is left in the token.
func Generate(ctx context.Context, keys Keys, label string, s *Spec) (*Key, []byte, error) {
	var id []byte
	var size int
	var err error
	if s.Curve != nil {
		id, size, err = keys.GenerateECKey(ctx, label, s.Curve)
	} else {
		id, size, err = keys.GenerateKey(ctx, label, s.Bits)
	}
	if err != nil {
		return nil, nil, err
	}
	key := &Key{ID: id, Bits: size}
	signer, err := keys.Signer(ctx, id)
	if err != nil {
		return key, nil, err
	}
	csr, err := hsm.CreateCSR(signer, s.Subject)
	if err != nil {
		return key, nil, err
	}
	return key, csr, nil
}

// CSRPEM encodes a DER certificate request as PEM.
func CSRPEM(der []byte) string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}))
}
