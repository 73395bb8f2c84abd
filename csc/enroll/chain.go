package enroll

import (
	"bytes"
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"time"
)

// Limits of a chain as an operator hands it in.
const (
	MaxChainPEM   = 1 << 20
	MaxChainCerts = 10
)

// ErrLeafKey means the leaf certificate does not certify the credential's
// key.
var ErrLeafKey = errors.New("the leaf certificate's public key is not the credential's key")

// ParseChainPEM parses PEM certificates, leaf first.
func ParseChainPEM(data []byte) ([]*x509.Certificate, error) {
	if len(data) > MaxChainPEM {
		return nil, fmt.Errorf("chain is larger than %d bytes", MaxChainPEM)
	}
	var certs []*x509.Certificate
	rest := data
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("PEM block %d is %q, want CERTIFICATE", len(certs)+1, b.Type)
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certificate %d: %v", len(certs)+1, err)
		}
		certs = append(certs, c)
		if len(certs) > MaxChainCerts {
			return nil, fmt.Errorf("chain has more than %d certificates", MaxChainCerts)
		}
	}
	if len(certs) == 0 {
		return nil, errors.New("no PEM certificate found")
	}
	if len(bytes.TrimSpace(rest)) != 0 {
		return nil, errors.New("chain has trailing data that is not PEM")
	}
	return certs, nil
}

// CheckChain checks a chain (leaf first) for the credential key pub at now:
// the leaf certifies pub (ErrLeafKey otherwise) and the chain verifies
// (VerifyChain).
func CheckChain(chain []*x509.Certificate, pub crypto.PublicKey, now time.Time) error {
	leafKey, ok := chain[0].PublicKey.(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !leafKey.Equal(pub) {
		return ErrLeafKey
	}
	return VerifyChain(chain, now)
}

// VerifyChain checks that chain (leaf first) ends in a self-signed root and
// verifies at now.
func VerifyChain(chain []*x509.Certificate, now time.Time) error {
	root := chain[len(chain)-1]
	if !bytes.Equal(root.RawIssuer, root.RawSubject) || root.CheckSignatureFrom(root) != nil {
		return fmt.Errorf("the last certificate (%s) is not a self-signed root: give the whole chain, leaf first, root last", root.Subject)
	}
	roots, inter := x509.NewCertPool(), x509.NewCertPool()
	roots.AddCert(root)
	if len(chain) > 2 { // a lone self-signed certificate has no intermediates
		for _, c := range chain[1 : len(chain)-1] {
			inter.AddCert(c)
		}
	}
	_, err := chain[0].Verify(x509.VerifyOptions{
		Roots: roots, Intermediates: inter, CurrentTime: now,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny},
	})
	if err != nil {
		return fmt.Errorf("chain does not verify: %v", err)
	}
	for i := 0; i+1 < len(chain); i++ {
		if err := chain[i].CheckSignatureFrom(chain[i+1]); err != nil {
			return fmt.Errorf("certificate %d is not signed by certificate %d: %v", i+1, i+2, err)
		}
	}
	return nil
}
