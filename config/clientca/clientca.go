package clientca

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"os"
	"strings"

	"github.com/signd/signd/config/rules"
)

// MaxEntries caps the certificate entries of one role.
const MaxEntries = 256

// maxSubjectLen caps a subject entry (admin.CertEntry).
const maxSubjectLen = 800

// ReadCAs reads admin.api_client_ca: its CA certificates, at least one.
func ReadCAs(path string) ([]*x509.Certificate, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []*x509.Certificate
	for n := 1; ; n++ {
		var b *pem.Block
		b, raw = pem.Decode(raw)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("%s: PEM block %d is %q, not CERTIFICATE", path, n, b.Type)
		}
		cert, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%s: certificate %d: %v", path, n, err)
		}
		if !cert.IsCA {
			return nil, fmt.Errorf("%s: certificate %d (%s) is not a CA certificate (basicConstraints cA)", path, n, cert.Subject)
		}
		out = append(out, cert)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s holds no PEM certificate", path)
	}
	return out, nil
}

// CAFile checks admin.api_client_ca: empty, or a file ReadCAs reads.
func CAFile(path string) string {
	if msg := rules.ReadableFile(path); msg != "" || path == "" {
		return msg
	}
	if _, err := ReadCAs(path); err != nil {
		return err.Error()
	}
	return ""
}

// ReadCRL reads admin.api_client_crl (PEM or DER) and checks its
// signature by one of cas.
func ReadCRL(path string, cas []*x509.Certificate) (*x509.RevocationList, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if b, _ := pem.Decode(raw); b != nil {
		if b.Type != "X509 CRL" {
			return nil, fmt.Errorf("%s: PEM block is %q, not X509 CRL", path, b.Type)
		}
		raw = b.Bytes
	}
	crl, err := x509.ParseRevocationList(raw)
	if err != nil {
		return nil, fmt.Errorf("%s is not a CRL: %v", path, err)
	}
	for _, ca := range cas {
		if crl.CheckSignatureFrom(ca) == nil {
			return crl, nil
		}
	}
	return nil, fmt.Errorf("%s (issuer %s) is not signed by a certificate of admin.api_client_ca", path, crl.Issuer)
}

// CRLFile checks admin.api_client_crl: empty, or a CRL that ReadCRL reads
// with the CAs of caPath (admin.api_client_ca). A CA file that does not
// read is left to CAFile's message.
func CRLFile(path, caPath string) string {
	if msg := rules.ReadableFile(path); msg != "" || path == "" {
		return msg
	}
	if caPath == "" {
		return "needs admin.api_client_ca, the CA that signs it"
	}
	cas, err := ReadCAs(caPath)
	if err != nil {
		return "" // admin.api_client_ca says what is wrong
	}
	if _, err := ReadCRL(path, cas); err != nil {
		return err.Error()
	}
	return ""
}

// Entries checks one role's certificate entries: each a subject or a
// key fingerprint (admin.CertEntry says the same), none twice.
func Entries(entries []string) string {
	if len(entries) > MaxEntries {
		return fmt.Sprintf("at most %d entries, got %d", MaxEntries, len(entries))
	}
	seen := map[string]int{}
	for i, e := range entries {
		norm := e
		switch {
		case len(e) > 7 && strings.EqualFold(e[:7], "sha256:"):
			norm = "sha256:" + strings.ToLower(e[7:])
			if b, err := hex.DecodeString(norm[7:]); err != nil || len(b) != sha256.Size {
				return fmt.Sprintf("entry %d: %q is not sha256: and the 64 hex digits of a SubjectPublicKeyInfo's SHA-256 digest", i+1, e)
			}
		case e == "":
			return fmt.Sprintf("entry %d is empty: name a subject (CN=…,O=…) or a key (sha256:…)", i+1)
		case len(e) > maxSubjectLen:
			return fmt.Sprintf("entry %d: a subject of %d bytes; at most %d", i+1, len(e), maxSubjectLen)
		case !strings.Contains(e, "=") || strings.ContainsFunc(e, func(r rune) bool { return r < 0x20 || r == 0x7f || r == 0xfffd }):
			return fmt.Sprintf("entry %d: %q is neither sha256:<hex> nor a distinguished name (CN=onboarding,O=Example)", i+1, e)
		}
		if first, ok := seen[norm]; ok {
			return fmt.Sprintf("entries %d and %d name the same certificate (%s)", first, i+1, e)
		}
		seen[norm] = i + 1
	}
	return ""
}
