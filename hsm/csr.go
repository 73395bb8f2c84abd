package hsm

import (
	"crypto"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
)

// CreateCSR returns a DER PKCS#10 request for subject, signed by signer
// (normally a *Key) with SHA-256 and RSA PKCS#1 v1.5. The random source
// handed to the signer always fails, so the signature cannot silently
// depend on local randomness. The request's signature is checked before
// it is returned.
func CreateCSR(signer crypto.Signer, subject pkix.Name) ([]byte, error) {
	if signer == nil {
		return nil, errors.New("hsm: create CSR: nil signer")
	}
	if _, ok := signer.Public().(*rsa.PublicKey); !ok {
		return nil, fmt.Errorf("hsm: create CSR: %w: %T key", ErrUnsupportedAlgorithm, signer.Public())
	}
	tmpl := &x509.CertificateRequest{
		Subject:            subject,
		SignatureAlgorithm: x509.SHA256WithRSA,
	}
	der, err := x509.CreateCertificateRequest(failingReader{}, tmpl, signer)
	if err != nil {
		return nil, fmt.Errorf("hsm: create CSR: %w", err)
	}
	csr, err := x509.ParseCertificateRequest(der)
	if err != nil {
		return nil, fmt.Errorf("hsm: create CSR: parse: %w", err)
	}
	if err := csr.CheckSignature(); err != nil {
		return nil, fmt.Errorf("hsm: create CSR: %w", err)
	}
	return der, nil
}

// failingReader is the rand for signing through the token.
type failingReader struct{}

func (failingReader) Read([]byte) (int, error) {
	return 0, errors.New("hsm: no randomness is used when signing through the token")
}
