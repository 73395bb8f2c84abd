package enroll

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"strings"
	"testing"
	"time"
)

// TestVerifyChainLoneSelfSigned: a chain of one self-signed certificate (a
// credential certified by itself) is its own root. VerifyChain used to
// slice its intermediates as chain[1:0] and panicked (found by
// FuzzParseChainPEM); a lone certificate that is not self-signed is
// refused.
func TestVerifyChainLoneSelfSigned(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	self := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "self"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, self, self, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	if err := VerifyChain([]*x509.Certificate{cert}, now); err != nil {
		t.Fatalf("lone self-signed certificate: %v", err)
	}
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leafTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "leaf"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour)}
	der, _ = x509.CreateCertificate(rand.Reader, leafTmpl, cert, other.Public(), key)
	leaf, _ := x509.ParseCertificate(der)
	if err := VerifyChain([]*x509.Certificate{leaf}, now); err == nil || !strings.Contains(err.Error(), "not a self-signed root") {
		t.Fatalf("lone leaf: %v", err)
	}
}
