package clientca

import (
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"encoding/asn1"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/signd/signd/config/rules"
	"github.com/signd/signd/internal/crlscope"
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

// ReadCRL reads admin.api_client_crl (PEM or DER) at now and checks its
// signature by one of cas whose subject is the CRL's issuer, byte for
// byte (RFC 5280 §6.3.3 (b): x509.RevocationList.CheckSignatureFrom
// checks the key alone, so a CRL signed with a CA's key under another
// name would pass it). The CRL must be a complete CRL for the client
// certificates (internal/crlscope, as on the signing path): a delta CRL,
// a partition for some reasons, for attribute or CA certificates only,
// an indirect CRL or one with an unknown critical extension would drop
// the revocations only the full CRL lists. Its thisUpdate must not be
// in the future (beyond crlscope.Skew): Replaces would then refuse
// every correct CRL as older until a restart.
func ReadCRL(path string, cas []*x509.Certificate, now time.Time) (*x509.RevocationList, error) {
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
	if err := complete(crl); err != nil {
		return nil, fmt.Errorf("%s is not the full CRL of the CA that issues the client certificates: %v", path, err)
	}
	if crlscope.Future(crl.ThisUpdate, now) {
		return nil, fmt.Errorf("%s: its thisUpdate %s is in the future (now %s): a CRL from a wrong clock would make every later CRL look older",
			path, crl.ThisUpdate.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	if Signer(crl, cas) != nil {
		return crl, nil
	}
	if !slices.ContainsFunc(cas, func(ca *x509.Certificate) bool { return bytes.Equal(crl.RawIssuer, ca.RawSubject) }) {
		return nil, fmt.Errorf("%s (issuer %s) is not issued by a certificate of admin.api_client_ca: no CA there has that subject", path, crl.Issuer)
	}
	return nil, fmt.Errorf("%s (issuer %s) is not signed by a certificate of admin.api_client_ca", path, crl.Issuer)
}

// Signer is the certificate of cas that signed crl under its own
// subject (ReadCRL's check), nil when none did.
func Signer(crl *x509.RevocationList, cas []*x509.Certificate) *x509.Certificate {
	for _, ca := range cas {
		if bytes.Equal(crl.RawIssuer, ca.RawSubject) && crl.CheckSignatureFrom(ca) == nil {
			return ca
		}
	}
	return nil
}

// complete says why crl is not a complete CRL of every client
// certificate its issuer issued.
func complete(crl *x509.RevocationList) error {
	for _, ext := range crl.Extensions {
		if ext.Id.Equal(oidDeltaCRL) {
			return errors.New("a delta CRL (deltaCRLIndicator) cannot stand alone; give the full CRL")
		}
	}
	scope, err := crlscope.Read(crl)
	if err != nil {
		return err
	}
	if scope.OnlyCA() {
		return errors.New("issuingDistributionPoint: the CRL covers only CA certificates (onlyContainsCACerts), not the client certificates; give the full CRL")
	}
	return nil
}

// oidDeltaCRL is the deltaCRLIndicator CRL extension (RFC 5280 §5.2.4).
var oidDeltaCRL = asn1.ObjectIdentifier{2, 5, 29, 27}

// Replaces says why crl (nil: admin.api_client_crl now empty) may not
// replace old, the CRL in force (nil: none), on a reload at now; nil when
// it may. Both were read by ReadCRL with cas. A reload never weakens the
// revocation check: the CRL is not removed (adding one is fine), its
// issuer does not change (the certificate of cas that signed it: a CA
// re-keyed under the same name is another issuer, with or without an
// authority key identifier), it does not go back (a lower cRLNumber or
// an earlier thisUpdate than the CRL in force would make revoked
// certificates good again; cRLNumbers are compared when both CRLs carry
// one, and an equal one must be the same CRL: RFC 5280 §5.2.3, a CA
// numbers each CRL anew),
// and it is not out of date already (it would refuse every certificate).
// Each of these needs a restart, which reads the file as it is.
func Replaces(old, crl *x509.RevocationList, cas []*x509.Certificate, now time.Time) error {
	if crl == nil {
		if old != nil {
			return errors.New("removing the CRL would turn the revocation check off; restart signd to run without one")
		}
		return nil
	}
	if !crl.NextUpdate.IsZero() && !now.Before(crl.NextUpdate) {
		return fmt.Errorf("the CRL is out of date since %s (nextUpdate): it would refuse every certificate", crl.NextUpdate.UTC().Format(time.RFC3339))
	}
	if old == nil {
		return nil
	}
	if by, was := Signer(crl, cas), Signer(old, cas); by == nil || was == nil || !by.Equal(was) ||
		!bytes.Equal(crl.RawIssuer, old.RawIssuer) ||
		len(crl.AuthorityKeyId) > 0 && len(old.AuthorityKeyId) > 0 && !bytes.Equal(crl.AuthorityKeyId, old.AuthorityKeyId) {
		return fmt.Errorf("the CRL is issued by %s (key %x), the CRL in force by %s (key %x): a change of issuer needs a restart",
			crl.Issuer, crl.AuthorityKeyId, old.Issuer, old.AuthorityKeyId)
	}
	return RecordOf(old).back(crl, "the CRL in force")
}

// Record is what the audit log keeps of a CRL put in force
// (config_loaded's admin.api_client_crl.* fields): enough to tell
// whether another CRL goes back from it (Rollback).
type Record struct {
	// Issuer is the CRL's issuer name as x509 spells it
	// (pkix.Name.String); "" when the entry does not record it.
	Issuer string
	// Number is its cRLNumber; nil when it has none.
	Number *big.Int
	// SHA256 is the digest of its DER.
	SHA256 [sha256.Size]byte
	// ThisUpdate is its thisUpdate, to the second (as recorded).
	ThisUpdate time.Time
}

// RecordOf is what the audit log records of crl.
func RecordOf(crl *x509.RevocationList) Record {
	return Record{Issuer: issuerName(crl), Number: crl.Number, SHA256: sha256.Sum256(crl.Raw),
		ThisUpdate: crl.ThisUpdate.Truncate(time.Second)}
}

// issuerName is the issuer name of crl a Record keeps (valid UTF-8, as
// an audit entry holds it).
func issuerName(crl *x509.RevocationList) string {
	return strings.ToValidUTF8(crl.Issuer.String(), "\uFFFD")
}

// back says why crl goes back from the CRL r records, called what (in
// the message), nil when it does not: a lower cRLNumber, or an equal one
// with other bytes, when both carry one; an earlier thisUpdate. Replaces
// and Rollback both ask it.
func (r Record) back(crl *x509.RevocationList, what string) error {
	switch {
	case r.Number != nil && crl.Number != nil && crl.Number.Cmp(r.Number) < 0:
		return fmt.Errorf("the CRL's cRLNumber %s is lower than %s of %s: an older CRL would make revoked certificates good again", crl.Number, r.Number, what)
	case r.Number != nil && crl.Number != nil && crl.Number.Cmp(r.Number) == 0 && sha256.Sum256(crl.Raw) != r.SHA256:
		return fmt.Errorf("the CRL's cRLNumber %s is that of %s, with another content: a CA numbers each CRL it issues anew (RFC 5280 §5.2.3)", crl.Number, what)
	case crl.ThisUpdate.Truncate(time.Second).Before(r.ThisUpdate):
		return fmt.Errorf("the CRL's thisUpdate %s is before %s of %s: an older CRL would make revoked certificates good again",
			crl.ThisUpdate.UTC().Format(time.RFC3339), r.ThisUpdate.UTC().Format(time.RFC3339), what)
	}
	return nil
}

// Rollback says why crl, read at start (nil: admin.api_client_crl
// empty), goes back from last, the CRL last in force as the audit log
// records it (nil: the log records none), nil when it does not: Replaces'
// rules on what a record keeps (the number, the digest, thisUpdate), so
// that a restart does not put back a CRL a reload would refuse. A
// restart may still remove the CRL (crl nil: recorded as such) or change
// its issuer (a CRL under another issuer name than the recorded one is
// not compared, a record without a name is: the caller looks up the last
// record of crl's issuer, daemonaudit.LastCRL).
func Rollback(last *Record, crl *x509.RevocationList) error {
	if last == nil || crl == nil || last.Issuer != "" && last.Issuer != issuerName(crl) {
		return nil
	}
	return last.back(crl, "the CRL last in force")
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
	if _, err := ReadCRL(path, cas, time.Now()); err != nil {
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
