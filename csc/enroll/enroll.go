package enroll

import (
	"context"
	"crypto"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"

	"github.com/signd/signd/hsm"
)

// Keys is what enrollment needs of the token.
type Keys interface {
	// GenerateKey generates an RSA key pair of bits inside the token
	// under label and returns the new key's ID (CKA_ID) and its modulus
	// size.
	GenerateKey(ctx context.Context, label string, bits int) (id []byte, size int, err error)
	// Signer returns the private key with id; it signs inside the token.
	Signer(ctx context.Context, id []byte) (crypto.Signer, error)
}

// DefaultAlgorithm is the key algorithm of a Request that names none.
const DefaultAlgorithm = "rsa-2048"

// algorithmBits are the key algorithms a credential may have, by their
// names in the store and on the command line.
var algorithmBits = map[string]int{"rsa-2048": 2048, "rsa-3072": 3072, "rsa-4096": 4096}

// Request is what an operator asks for when creating a credential.
type Request struct {
	Owner     string // username; the subject is CN=<Owner> when Subject is ""
	Algorithm string // rsa-2048 (the default), rsa-3072 or rsa-4096
	Subject   string // RFC 4514 distinguished name of the CSR, see ParseDN
}

// Spec is a checked Request: the key pair to generate and the subject of
// its certificate request.
type Spec struct {
	Algorithm string
	Bits      int
	Subject   pkix.Name
}

// Check checks r before anything is generated, so that a typo costs no key
// pair.
func (r Request) Check() (*Spec, error) {
	algo := r.Algorithm
	if algo == "" {
		algo = DefaultAlgorithm
	}
	bits, ok := algorithmBits[algo]
	if !ok {
		return nil, fmt.Errorf("algorithm %q is not supported (rsa-2048, rsa-3072, rsa-4096)", algo)
	}
	subject := r.Subject
	if subject == "" {
		subject = "CN=" + escapeDNValue(r.Owner)
	}
	name, err := ParseDN(subject)
	if err != nil {
		return nil, fmt.Errorf("subject: %w", err)
	}
	return &Spec{Algorithm: algo, Bits: bits, Subject: name}, nil
}

// Key is a key pair generated in the token for a credential.
type Key struct {
	ID   []byte // CKA_ID
	Bits int    // modulus size
}

// Generate generates s's key pair in the token under label and a DER
// PKCS#10 request for s.Subject signed by it. The key is returned whenever
// it was generated, also together with an error: the caller then destroys
// it, or reports that it is left in the token.
func Generate(ctx context.Context, keys Keys, label string, s *Spec) (*Key, []byte, error) {
	id, size, err := keys.GenerateKey(ctx, label, s.Bits)
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
