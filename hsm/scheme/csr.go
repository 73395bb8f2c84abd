package scheme

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"

	"github.com/signd/signd/hsm/ckr"
)

// CreateCSR returns a DER PKCS#10 request for subject, signed by signer
// (normally an hsm.Key): RSA PKCS#1 v1.5 with SHA-256 for an RSA key, ECDSA
// with SHA-256 (P-256), SHA-384 (P-384) or SHA-512 (P-521) for an EC key. The random source
// handed to the signer always fails, so the signature cannot silently
// depend on local randomness. The request's signature is checked before
// it is returned.
func CreateCSR(signer crypto.Signer, subject pkix.Name) ([]byte, error) {
	if signer == nil {
		return nil, errors.New("hsm: create CSR: nil signer")
	}
	var alg x509.SignatureAlgorithm
	switch pub := signer.Public().(type) {
	case *rsa.PublicKey:
		alg = x509.SHA256WithRSA
	case *ecdsa.PublicKey:
		switch pub.Curve {
		case elliptic.P256():
			alg = x509.ECDSAWithSHA256
		case elliptic.P384():
			alg = x509.ECDSAWithSHA384
		case elliptic.P521():
			alg = x509.ECDSAWithSHA512
		default:
			return nil, fmt.Errorf("hsm: create CSR: %w: curve %s", ckr.ErrUnsupportedAlgorithm, pub.Curve.Params().Name)
		}
	default:
		return nil, fmt.Errorf("hsm: create CSR: %w: %T key", ckr.ErrUnsupportedAlgorithm, signer.Public())
	}
	tmpl := &x509.CertificateRequest{
		Subject:            subject,
		SignatureAlgorithm: alg,
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
