package principal

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/signd/signd/csc/certstatus/certstatustest"
)

// selfSigned is a certificate for a fresh P-256 key with subject name.
func selfSigned(t *testing.T, name pkix.Name) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: name,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	return certstatustest.Create(t, tmpl, tmpl, key.Public(), key)
}

func TestCertRoleMap(t *testing.T) {
	onboarding := selfSigned(t, pkix.Name{CommonName: "onboarding", Organization: []string{"Example"}})
	officer := selfSigned(t, pkix.Name{CommonName: "officer", Organization: []string{"Example"}})
	stranger := selfSigned(t, pkix.Name{CommonName: "onboarding", Organization: []string{"Elsewhere"}})
	fp := SPKIFingerprint(officer)
	m, err := CertRoleMap(map[string][]string{
		"administrator":    {"CN=onboarding,O=Example"},
		"security_officer": {"SHA256:" + strings.ToUpper(fp)},
		"auditor":          {"sha256:" + fp, "CN=onboarding,O=Example"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !m.Configured() {
		t.Error("a RoleMap with certificates is not Configured")
	}
	tests := []struct {
		cert *x509.Certificate
		want []Role
	}{
		{onboarding, []Role{RoleAdministrator, RoleAuditor}},
		// By the key, in any case of the hex digits; each role once.
		{officer, []Role{RoleSecurityOfficer, RoleAuditor}},
		// Another O is another subject.
		{stranger, nil},
	}
	for _, tt := range tests {
		if got := m.CertRoles(tt.cert); !slices.Equal(got, tt.want) {
			t.Errorf("CertRoles(%s) = %v, want %v", tt.cert.Subject, got, tt.want)
		}
	}
	p := CertPrincipal(officer, m.CertRoles(officer))
	if want := "cert:CN=officer,O=Example sha256:" + fp[:16]; p.Actor != want {
		t.Errorf("Actor = %q, want %q", p.Actor, want)
	}
	if p.Party != "cert-subject:CN=officer,O=Example" || !p.Has(RoleSecurityOfficer) || p.Has(RoleAdministrator) {
		t.Errorf("principal %+v", p)
	}
	// The party is the subject, not the key: another key of the subject
	// is the same operator, another subject another one; a certificate
	// without a subject is named by its key.
	if again := selfSigned(t, officer.Subject); CertParty(again) != p.Party || CertParty(onboarding) == p.Party {
		t.Errorf("parties %q, %q, %q", CertParty(again), CertParty(onboarding), p.Party)
	}
	if nameless := selfSigned(t, pkix.Name{}); CertParty(nameless) != "cert-sha256:"+SPKIFingerprint(nameless) {
		t.Errorf("the party of a certificate without a subject: %q", CertParty(nameless))
	}
	// A group map grants no certificate anything, and the other way round.
	g, _ := GroupRoleMap(map[string][]uint32{"auditor": {10}})
	if got := g.CertRoles(onboarding); got != nil {
		t.Errorf("a group map grants a certificate %v", got)
	}
	if got := m.GroupRoles([]uint32{10}); got != nil {
		t.Errorf("a certificate map grants a group %v", got)
	}
}

func TestCertRoleMapRefuses(t *testing.T) {
	tests := []struct {
		byRole map[string][]string
		want   string
	}{
		{map[string][]string{"root": {"CN=x"}}, `admin.api_roles: unknown role "root"`},
		{map[string][]string{"auditor": {""}}, "admin.api_roles.auditor: an empty entry"},
		{map[string][]string{"auditor": {"sha256:abcd"}}, `"sha256:abcd" is not sha256: and the 64 hex digits`},
		{map[string][]string{"auditor": {"sha256:" + strings.Repeat("g", 64)}}, "is not sha256: and the 64 hex digits"},
		{map[string][]string{"auditor": {"onboarding"}}, `"onboarding" is neither sha256:<hex> nor a distinguished name`},
		{map[string][]string{"auditor": {"CN=a\nCN=b"}}, "is neither sha256:<hex> nor a distinguished name"},
		{map[string][]string{"auditor": {"CN=" + strings.Repeat("a", 1000)}}, "a subject of 1003 bytes; at most 800"},
	}
	for _, tt := range tests {
		if _, err := CertRoleMap(tt.byRole); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("CertRoleMap(%q) = %v, want %q", tt.byRole, err, tt.want)
		}
	}
}
