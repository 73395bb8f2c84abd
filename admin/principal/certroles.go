package principal

import (
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/signd/signd/admin/input"
)

// A client certificate of the provisioning API is a principal the way a
// socket peer is: the RoleMap grants it roles by what identifies it, a
// certificate entry of admin.api_roles.
//
//   - "sha256:<64 hex>" names the SHA-256 digest of the certificate's
//     SubjectPublicKeyInfo: that key, whatever certificate carries it;
//   - anything else names a subject distinguished name, as RFC 4514
//     writes it and Go's pkix.Name.String prints it
//     ("CN=onboarding,O=Example"; openssl x509 -subject -nameopt RFC2253):
//     every certificate with that subject from the client CA.

// certPrefix starts a fingerprint entry and the fingerprint in an Actor.
const certPrefix = "sha256:"

// SPKIFingerprint is the lowercase hex SHA-256 digest of cert's
// SubjectPublicKeyInfo: what a "sha256:" entry of admin.api_roles names,
// and the Party of a certificate with an empty subject (CertParty).
func SPKIFingerprint(cert *x509.Certificate) string {
	sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
	return hex.EncodeToString(sum[:])
}

// SameKey reports whether the leaves of two certificate chains (DER, leaf
// first; Principal.Certs) certify one key: for dual control they are the
// same operator whatever their subjects, since a "sha256:" entry of
// admin.api_roles grants a role to the key under any subject. A chain
// that is empty or does not parse shares no key.
func SameKey(a, b [][]byte) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	ca, err := x509.ParseCertificate(a[0])
	if err != nil {
		return false
	}
	cb, err := x509.ParseCertificate(b[0])
	return err == nil && bytes.Equal(ca.RawSubjectPublicKeyInfo, cb.RawSubjectPublicKeyInfo)
}

// CertEntry checks one certificate entry of admin.api_roles and returns it
// in the form the RoleMap compares: a fingerprint in lowercase.
func CertEntry(entry string) (string, error) {
	switch {
	case len(entry) > len(certPrefix) && strings.EqualFold(entry[:len(certPrefix)], certPrefix):
		fp := strings.ToLower(entry[len(certPrefix):])
		if b, err := hex.DecodeString(fp); err != nil || len(b) != sha256.Size {
			return "", fmt.Errorf("%q is not sha256: and the 64 hex digits of a SubjectPublicKeyInfo's SHA-256 digest", entry)
		}
		return certPrefix + fp, nil
	case entry == "":
		return "", fmt.Errorf("an empty entry: name a subject (CN=…,O=…) or a key (sha256:…)")
	case len(entry) > input.MaxNameLen*4:
		return "", fmt.Errorf("a subject of %d bytes; at most %d", len(entry), input.MaxNameLen*4)
	case !input.Printable(entry) || !strings.Contains(entry, "="):
		return "", fmt.Errorf("%q is neither sha256:<hex> nor a distinguished name (CN=onboarding,O=Example)", entry)
	}
	return entry, nil
}

// GrantCert gives role r to the certificates entry names (CertEntry).
func (m *RoleMap) GrantCert(r Role, entry string) error {
	e, err := CertEntry(entry)
	if err != nil {
		return err
	}
	if m.certs == nil {
		m.certs = map[string][]Role{}
	}
	if !slices.Contains(m.certs[e], r) {
		m.certs[e] = append(m.certs[e], r)
	}
	return nil
}

// CertRoleMap builds the RoleMap of admin.api_roles: role name → the
// certificate entries whose certificates hold it. An unknown role or a
// malformed entry is an error naming the key.
func CertRoleMap(byRole map[string][]string) (RoleMap, error) {
	var m RoleMap
	for name, entries := range byRole {
		r, err := ParseRole(name)
		if err != nil {
			return RoleMap{}, fmt.Errorf("admin.api_roles: %w", err)
		}
		for _, e := range entries {
			if err := m.GrantCert(r, e); err != nil {
				return RoleMap{}, fmt.Errorf("admin.api_roles.%s: %w", name, err)
			}
		}
	}
	return m, nil
}

// CertRoles returns the roles held by cert, through its key's fingerprint
// or its subject, in the order of Roles, each once.
func (m RoleMap) CertRoles(cert *x509.Certificate) []Role {
	fp := m.certs[certPrefix+SPKIFingerprint(cert)]
	subj := m.certs[cert.Subject.String()]
	var out []Role
	for _, r := range Roles() {
		if slices.Contains(fp, r) || slices.Contains(subj, r) {
			out = append(out, r)
		}
	}
	return out
}

// CertPrincipal names the holder of the client certificate cert with
// roles: Actor "cert:<subject> sha256:<first 16 hex digits of the key's
// fingerprint>", Party CertParty(cert).
func CertPrincipal(cert *x509.Certificate, roles []Role) Principal {
	return Principal{Actor: CertActor(cert), Party: CertParty(cert), Roles: roles}
}

// CertParty is the operator behind cert for dual control: the identity
// the certificate names, its subject ("cert-subject:CN=officer,O=Example"),
// not its key. Every certificate the client CA issues with a subject
// holds what admin.api_roles grants that subject, so a holder who enrols
// a second key (an EST or ACME renewal) is still one operator and cannot
// approve their own request with it. A certificate with an empty subject
// (its name only in subjectAltName) is named by its key
// ("cert-sha256:<the whole fingerprint>"): admin.api_roles can grant it
// roles only by that key.
func CertParty(cert *x509.Certificate) string {
	if subj := cert.Subject.String(); subj != "" {
		return CertSubjectParty + subj
	}
	return "cert-sha256:" + SPKIFingerprint(cert)
}

// CertSubjectParty starts the Party of a certificate with a subject
// (CertParty).
const CertSubjectParty = "cert-subject:"

// CertActor is how the audit log names the holder of cert (CertPrincipal),
// also when the certificate is refused.
func CertActor(cert *x509.Certificate) string {
	return fmt.Sprintf("cert:%s %s%s", cert.Subject.String(), certPrefix, SPKIFingerprint(cert)[:16])
}
