package config

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// apiCA writes a CA certificate (PEM), a CRL it signs (PEM and DER), a
// CRL another key signs, and a leaf certificate, into dir.
// misnamedCRL is signed with the CA's key under another issuer name.
func apiCA(t *testing.T, dir string) (ca, crlPEM, crlDER, foreignCRL, misnamedCRL, leaf string) {
	t.Helper()
	mk := func(cn string, isCA bool, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: cn},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			IsCA: isCA, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign}
		if parent == nil {
			parent, parentKey = tmpl, key
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, key.Public(), parentKey)
		if err != nil {
			t.Fatal(err)
		}
		cert, _ := x509.ParseCertificate(der)
		return cert, key
	}
	caCert, caKey := mk("api CA", true, nil, nil)
	other, otherKey := mk("api CA", true, nil, nil) // the same name, another key
	leafCert, _ := mk("onboarding", false, caCert, caKey)
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	crl := func(issuer *x509.Certificate, key *ecdsa.PrivateKey) []byte {
		der, err := x509.CreateRevocationList(rand.Reader, &x509.RevocationList{Number: big.NewInt(1),
			ThisUpdate: time.Now(), NextUpdate: time.Now().Add(time.Hour)}, issuer, key)
		if err != nil {
			t.Fatal(err)
		}
		return der
	}
	certPEM := func(c *x509.Certificate) []byte {
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
	}
	der := crl(caCert, caKey)
	misnamed := &x509.Certificate{Subject: pkix.Name{CommonName: "another CA"}, SubjectKeyId: caCert.SubjectKeyId, KeyUsage: x509.KeyUsageCRLSign}
	return write("ca.pem", certPEM(caCert)), write("crl.pem", pem.EncodeToMemory(&pem.Block{Type: "X509 CRL", Bytes: der})),
		write("crl.der", der), write("foreign.crl", crl(other, otherKey)), write("misnamed.crl", crl(misnamed, caKey)), write("leaf.pem", certPEM(leafCert))
}

// admin.api_*: the provisioning API is off by default; on, it needs the
// server certificate, a client CA, roles, and a port of its own.
func TestAdminAPIConfig(t *testing.T) {
	dir := t.TempDir()
	ca, crlPEM, crlDER, foreignCRL, misnamedCRL, leaf := apiCA(t, dir)
	tlsCert, tlsKey := filepath.Join(dir, "tls.pem"), filepath.Join(dir, "tls.key")
	for _, p := range []string{tlsCert, tlsKey} {
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	garbage := filepath.Join(dir, "garbage")
	if err := os.WriteFile(garbage, []byte("not PEM"), 0o644); err != nil {
		t.Fatal(err)
	}
	keyPEM := filepath.Join(dir, "key.pem")
	if err := os.WriteFile(keyPEM, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte{1}}), 0o600); err != nil {
		t.Fatal(err)
	}
	fp := "sha256:" + strings.Repeat("ab", 32)
	on := func(c *Config) {
		c.Admin.APIListen = "127.0.0.1:8444"
		c.Admin.APICertFile, c.Admin.APIKeyFile = tlsCert, tlsKey
		c.Admin.APIClientCA = ca
		c.Admin.APIRoles.Administrator = []string{"CN=onboarding,O=Example"}
	}
	tests := []struct {
		name   string
		mutate func(c *Config)
		key    string // "" = valid
		msg    string
	}{
		{"off", func(c *Config) {}, "", ""},
		{"on", on, "", ""},
		{"on with a PEM CRL", func(c *Config) { on(c); c.Admin.APIClientCRL = crlPEM }, "", ""},
		{"on with a DER CRL", func(c *Config) { on(c); c.Admin.APIClientCRL = crlDER }, "", ""},
		{"by fingerprint, any case", func(c *Config) { on(c); c.Admin.APIRoles.Auditor = []string{strings.ToUpper(fp)} }, "", ""},
		{"one entry in two roles", func(c *Config) { on(c); c.Admin.APIRoles.Auditor = c.Admin.APIRoles.Administrator }, "", ""},

		{"listen no port", func(c *Config) { on(c); c.Admin.APIListen = "127.0.0.1" }, "admin.api_listen", `"127.0.0.1" is not host:port; empty turns the provisioning API off`},
		{"listen = server.listen", func(c *Config) { on(c); c.Admin.APIListen = "127.0.0.1:8443" }, "admin.api_listen", `"127.0.0.1:8443" uses the port of server.listen (127.0.0.1:8443)`},
		{"listen = metrics", func(c *Config) { on(c); c.Server.MetricsListen = "127.0.0.1:9464"; c.Admin.APIListen = ":9464" }, "admin.api_listen", `":9464" uses the port of server.metrics_listen (127.0.0.1:9464)`},
		{"listen without a certificate", func(c *Config) { on(c); c.Admin.APICertFile = "" }, "admin.api_cert_file", "required when admin.api_listen is set"},
		{"a certificate without its key", func(c *Config) { on(c); c.Admin.APIKeyFile = "" }, "admin.api_key_file", "required when admin.api_listen is set"},
		{"a key without its certificate", func(c *Config) { c.Admin.APIKeyFile = tlsKey }, "admin.api_cert_file", "required when admin.api_key_file is set"},
		{"a key others may read", func(c *Config) { on(c); c.Admin.APIKeyFile = garbage }, "admin.api_key_file", "garbage has mode 0644; it must not be readable or writable by group or others"},
		{"a certificate missing", func(c *Config) { on(c); c.Admin.APICertFile = filepath.Join(dir, "nope.crt") }, "admin.api_cert_file", "nope.crt: no such file"},
		{"listen without a CA", func(c *Config) { on(c); c.Admin.APIClientCA = "" }, "admin.api_client_ca", "required when admin.api_listen is set"},
		{"listen without roles", func(c *Config) { on(c); c.Admin.APIRoles = APIRolesConfig{} }, "admin.api_roles.security_officer", "admin.api_listen is set but admin.api_roles grants no certificate a role"},

		{"CA missing", func(c *Config) { on(c); c.Admin.APIClientCA = filepath.Join(dir, "nope.pem") }, "admin.api_client_ca", "nope.pem: no such file"},
		{"CA not PEM", func(c *Config) { on(c); c.Admin.APIClientCA = garbage }, "admin.api_client_ca", "garbage holds no PEM certificate"},
		{"CA a key", func(c *Config) { on(c); c.Admin.APIClientCA = keyPEM }, "admin.api_client_ca", `PEM block 1 is "PRIVATE KEY", not CERTIFICATE`},
		{"CA a leaf", func(c *Config) { on(c); c.Admin.APIClientCA = leaf }, "admin.api_client_ca", "certificate 1 (CN=onboarding) is not a CA certificate"},

		{"CRL missing", func(c *Config) { on(c); c.Admin.APIClientCRL = filepath.Join(dir, "nope.crl") }, "admin.api_client_crl", "nope.crl: no such file"},
		{"CRL garbage", func(c *Config) { on(c); c.Admin.APIClientCRL = garbage }, "admin.api_client_crl", "garbage is not a CRL"},
		{"CRL a certificate", func(c *Config) { on(c); c.Admin.APIClientCRL = ca }, "admin.api_client_crl", `PEM block is "CERTIFICATE", not X509 CRL`},
		{"CRL of another CA", func(c *Config) { on(c); c.Admin.APIClientCRL = foreignCRL }, "admin.api_client_crl", "(issuer CN=api CA) is not signed by a certificate of admin.api_client_ca"},
		{"CRL under another issuer name", func(c *Config) { on(c); c.Admin.APIClientCRL = misnamedCRL }, "admin.api_client_crl", "(issuer CN=another CA) is not issued by a certificate of admin.api_client_ca: no CA there has that subject"},
		{"CRL without a CA", func(c *Config) { c.Admin.APIClientCRL = crlPEM }, "admin.api_client_crl", "needs admin.api_client_ca"},

		{"role entry empty", func(c *Config) { on(c); c.Admin.APIRoles.Auditor = []string{""} }, "admin.api_roles.auditor", "entry 1 is empty"},
		{"role entry short fingerprint", func(c *Config) { on(c); c.Admin.APIRoles.Auditor = []string{"sha256:abcd"} }, "admin.api_roles.auditor", `entry 1: "sha256:abcd" is not sha256: and the 64 hex digits`},
		{"role entry a bare name", func(c *Config) { on(c); c.Admin.APIRoles.SecurityOfficer = []string{"onboarding"} }, "admin.api_roles.security_officer", `entry 1: "onboarding" is neither sha256:<hex> nor a distinguished name`},
		{"role entry control character", func(c *Config) { on(c); c.Admin.APIRoles.Auditor = []string{"CN=a\nO=b"} }, "admin.api_roles.auditor", "is neither sha256:<hex> nor a distinguished name"},
		{"role entry oversized", func(c *Config) { on(c); c.Admin.APIRoles.Auditor = []string{"CN=" + strings.Repeat("a", 800)} }, "admin.api_roles.auditor", "entry 1: a subject of 803 bytes; at most 800"},
		{"role entry twice", func(c *Config) { on(c); c.Admin.APIRoles.Auditor = []string{fp, strings.ToUpper(fp)} }, "admin.api_roles.auditor", "entries 1 and 2 name the same certificate"},
		{"role too many entries", func(c *Config) {
			on(c)
			for i := range MaxAPIRoleEntries + 1 {
				c.Admin.APIRoles.Auditor = append(c.Admin.APIRoles.Auditor, "CN=c"+strings.Repeat("x", i))
			}
		}, "admin.api_roles.auditor", "at most 256 entries, got 257"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantOneProblem(t, validated(t, tt.mutate), tt.key, tt.msg)
		})
	}
}

// The keys load from a file like every other key.
func TestAdminAPIFromFile(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	ca, crl, _, _, _, _ := apiCA(t, dir)
	tlsCert, tlsKey := filepath.Join(dir, "tls.pem"), filepath.Join(dir, "tls.key")
	for _, p := range []string{tlsCert, tlsKey} {
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	yaml := "server:\n  base_url: https://x.org\npkcs11:\n  pin: \"1\"\nadmin:\n  api_listen: 127.0.0.1:0\n  api_cert_file: " + tlsCert +
		"\n  api_key_file: " + tlsKey + "\n  api_client_ca: " + ca + "\n  api_client_crl: " + crl +
		"\n  api_roles:\n    administrator: [\"CN=onboarding,O=Example\"]\n    auditor: [\"sha256:" + strings.Repeat("0", 64) + "\"]\n"
	_, c, err := loadYAML(t, yaml)
	if err != nil {
		t.Fatal(err)
	}
	a := c.Admin.AdminAPIConfig
	if a.APIListen != "127.0.0.1:0" || a.APIClientCA != ca || a.APIClientCRL != crl ||
		len(a.APIRoles.Administrator) != 1 || a.APIRoles.Administrator[0] != "CN=onboarding,O=Example" || len(a.APIRoles.Auditor) != 1 {
		t.Errorf("loaded %+v", a)
	}
	if _, _, err := loadYAML(t, yaml+"    auditors: [\"CN=x\"]\n"); err == nil || !strings.Contains(err.Error(), `unknown key "admin.api_roles.auditors"`) {
		t.Errorf("misspelt role: %v", err)
	}
}
