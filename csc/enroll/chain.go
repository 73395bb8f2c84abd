package enroll

import (
	"bytes"
	"crypto"
	"crypto/x509"
	"encoding/asn1"
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
// the leaf certifies pub (ErrLeafKey otherwise), is a signing certificate
// (SigningLeaf) and the chain verifies (VerifyChain).
func CheckChain(chain []*x509.Certificate, pub crypto.PublicKey, now time.Time) error {
	leafKey, ok := chain[0].PublicKey.(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !leafKey.Equal(pub) {
		return ErrLeafKey
	}
	if err := SigningLeaf(chain); err != nil {
		return err
	}
	return VerifyChain(chain, now)
}

// Extended key usages that allow signing documents, besides any and
// emailProtection (RFC 5280 §4.2.1.12).
var (
	ekuDocumentSigning   = asn1.ObjectIdentifier{1, 3, 6, 1, 5, 5, 7, 3, 36}       // RFC 9336
	ekuMSDocumentSigning = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 311, 10, 3, 12} // Microsoft
	ekuAdobeAuthentic    = asn1.ObjectIdentifier{1, 2, 840, 113583, 1, 1, 5}       // Adobe Authentic Documents Trust
)

// SigningLeaf checks that chain's leaf certifies a key for signing what
// signHash signs (RFC 5280 §4.2.1.3, §4.2.1.9, §4.2.1.12): with a key
// usage, digitalSignature or nonRepudiation (contentCommitment) among it;
// not a CA certificate issued by another (a CA's certificate would make
// signHash sign certificates; a lone self-signed certificate, the
// credential certifying itself, may say cA as openssl req -x509 does);
// with an extended key usage, one that allows signing documents: any,
// emailProtection, documentSigning (RFC 9336), Microsoft's document
// signing or Adobe's Authentic Documents Trust. A certificate for TLS
// servers or clients alone is refused.
func SigningLeaf(chain []*x509.Certificate) error {
	leaf := chain[0]
	if leaf.KeyUsage != 0 && leaf.KeyUsage&(x509.KeyUsageDigitalSignature|x509.KeyUsageContentCommitment) == 0 {
		return errors.New("the leaf certificate's key usage has neither digitalSignature nor nonRepudiation: it does not certify a signing key")
	}
	if leaf.IsCA && len(chain) > 1 {
		return errors.New("the leaf certificate is a CA certificate (basicConstraints cA): a credential's certificate is an end entity's")
	}
	if len(leaf.ExtKeyUsage) == 0 && len(leaf.UnknownExtKeyUsage) == 0 {
		return nil
	}
	for _, u := range leaf.ExtKeyUsage {
		if u == x509.ExtKeyUsageAny || u == x509.ExtKeyUsageEmailProtection {
			return nil
		}
	}
	for _, u := range leaf.UnknownExtKeyUsage {
		if u.Equal(ekuDocumentSigning) || u.Equal(ekuMSDocumentSigning) || u.Equal(ekuAdobeAuthentic) {
			return nil
		}
	}
	return errors.New("the leaf certificate's extended key usage does not allow signing documents: give one with none, or with emailProtection, documentSigning (RFC 9336) or anyExtendedKeyUsage")
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
