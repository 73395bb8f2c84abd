package config

import (
	"fmt"

	"github.com/signd/signd/config/clientca"
	"github.com/signd/signd/config/rules"
)

// AdminAPIConfig is admin.api_*: the provisioning API, a listener of its
// own that serves the admin operations over HTTPS to holders of client
// certificates (docs/API.md, "Provisioning API"). What reads and checks
// its client CA, CRL and role entries is package config/clientca's. Its server certificate
// is its own: the API is for the onboarding system's network, not the
// users', and its certificate comes from the PKI of that network.
type AdminAPIConfig struct {
	// APIListen is the host:port of the provisioning API; "" = off.
	APIListen string `mapstructure:"api_listen"`
	// APICertFile and APIKeyFile are the API's server certificate
	// (chain) and key, PEM; required with APIListen.
	APICertFile string `mapstructure:"api_cert_file"`
	APIKeyFile  string `mapstructure:"api_key_file"`
	// APIClientCA is the PEM file of the CA certificates that issue the
	// client certificates; required with APIListen.
	APIClientCA string `mapstructure:"api_client_ca"`
	// APIClientCRL is a CRL (PEM or DER) of that CA: a revoked client
	// certificate is refused; "" = none.
	APIClientCRL string `mapstructure:"api_client_crl"`
	// APIRoles grants roles to client certificates.
	APIRoles APIRolesConfig `mapstructure:"api_roles"`
}

// APIRolesConfig is admin.api_roles.*: for each trusted role, the client
// certificates that hold it, by subject ("CN=onboarding,O=Example") or by
// the SHA-256 fingerprint of their key ("sha256:<64 hex>").
type APIRolesConfig struct {
	SecurityOfficer []string `mapstructure:"security_officer"`
	Administrator   []string `mapstructure:"administrator"`
	Auditor         []string `mapstructure:"auditor"`
}

// ByRole returns the certificate entries of each role, keyed by the
// role's name, in the order of the key table.
func (r APIRolesConfig) ByRole() []RoleGroups {
	return []RoleGroups{
		{"security_officer", r.SecurityOfficer},
		{"administrator", r.Administrator},
		{"auditor", r.Auditor},
	}
}

// Map returns the entries by role name, as admin.CertRoleMap takes them.
func (r APIRolesConfig) Map() map[string][]string {
	out := map[string][]string{}
	for _, rg := range r.ByRole() {
		if len(rg.Groups) > 0 {
			out[rg.Role] = rg.Groups
		}
	}
	return out
}

// MaxAPIRoleEntries caps the certificate entries of one role
// (clientca.MaxEntries).
const MaxAPIRoleEntries = clientca.MaxEntries

func adminAPIKeys() []Key {
	return []Key{
		{Name: "admin.api_listen", Default: "",
			Usage: "host:port of the provisioning API (HTTPS with client certificates); empty = off",
			Doc:   "host:port of the [provisioning API](API.md#provisioning-api): the admin operations over HTTPS, for an onboarding system without a shell on the box. Off when empty. Needs `admin.api_cert_file`/`api_key_file` (its server certificate), `admin.api_client_ca` and at least one `admin.api_roles` entry; must not use the port of `server.listen` or `server.metrics_listen`"},
		{Name: "admin.api_cert_file", Default: "", Reload: true,
			Usage: "PEM certificate chain of the provisioning API (its own, not server.tls.*)",
			Doc:   "PEM certificate chain the provisioning API presents (TLS 1.2+); its own, not `server.tls.*`: the API serves the onboarding system's network, so its certificate comes from that network's PKI. Read at start and on each reload (SIGHUP, `systemctl reload signd`): rotate it in place. Required with `admin.api_listen`"},
		{Name: "admin.api_key_file", Default: "", Reload: true,
			Usage: "PEM private key of admin.api_cert_file",
			Doc:   "PEM private key of `admin.api_cert_file` (no group or other permissions: `chmod 600`). Required with `admin.api_listen`"},
		{Name: "admin.api_client_ca", Default: "",
			Usage: "PEM file of the CA certificates that issue the provisioning API's client certificates",
			Doc:   "PEM file of the CA certificate(s) that issue the provisioning API's client certificates (TLS 1.2+, a client certificate is required and verified against it, with the clientAuth extended key usage when the certificate names any). Use a CA of its own for this API: every certificate it issues may connect, the roles decide what it may do. Required with `admin.api_listen`. Read at start only"},
		{Name: "admin.api_client_crl", Default: "", Reload: true,
			Usage: "CRL (PEM or DER) of admin.api_client_ca; a revoked client certificate is refused; empty = none",
			Doc:   "the full CRL (PEM or DER) of the CA that issues the client certificates, a certificate of `admin.api_client_ca` (its issuer name that certificate's subject, its signature by that key): a client certificate it lists, or an intermediate of the chain it lists, is refused at the handshake and at every request on an open connection, and the refusal audited. With a CRL set, a client certificate that CA did not issue (another CA of the bundle, or an intermediate's) cannot be checked and is refused. Refused at start and at reload: a delta CRL, a partitioned one (`issuingDistributionPoint` with `onlyContainsCACerts`, `onlyContainsAttributeCerts`, `onlySomeReasons`, `indirectCRL`), one with an unknown critical extension, one whose `thisUpdate` is more than 5 minutes ahead. Read at start and on each reload (SIGHUP, `systemctl reload signd`): replace the file and reload to update it (before its `nextUpdate`: an out-of-date CRL refuses every certificate). A reload refuses, and changes nothing, to remove the CRL, to change its issuer (the CA certificate that verifies it), to go back to a lower `cRLNumber` or an earlier `thisUpdate`, to another CRL with the same `cRLNumber`, or to a CRL already out of date; each needs a restart. A restart refuses a CRL of the same issuer name older than the one the audit log last recorded in force (a lower `cRLNumber`, the same number with other bytes, an earlier `thisUpdate`): put the newest CRL in place. Empty = no CRL"},
		{Name: "admin.api_roles.security_officer", Default: []string(nil),
			Usage: "client certificates holding the security officer role on the provisioning API: subjects (CN=…,O=…) or key fingerprints (sha256:<hex>)",
			Doc:   "client certificates that hold the security officer role on the provisioning API, a YAML list of subjects as RFC 4514 writes them (`CN=onboarding,O=Example`, what `openssl x509 -noout -subject -nameopt RFC2253` prints) or SHA-256 fingerprints of the certificate's SubjectPublicKeyInfo (`sha256:` and 64 hex digits, the digest of the DER of what `openssl x509 -noout -pubkey` prints; an entry by key survives a renewal for the same key). A certificate that no entry names is refused at the handshake"},
		{Name: "admin.api_roles.administrator", Default: []string(nil),
			Usage: "client certificates holding the administrator role on the provisioning API",
			Doc:   "the same for the administrator: users, clients, passwords"},
		{Name: "admin.api_roles.auditor", Default: []string(nil),
			Usage: "client certificates holding the auditor role on the provisioning API",
			Doc:   fmt.Sprintf("the same for the auditor: the audit log and the read-only listings. At most %d entries a role, none twice; an entry may be in several roles. Read at start only: a reload that changes a role is refused (see [OPERATIONS.md](OPERATIONS.md#running-the-daemon))", MaxAPIRoleEntries)},
	}
}

// adminAPIChecks checks admin.api_*; it needs server.* for the listener's
// port and its certificate.
func (c *Config) adminAPIChecks() []check {
	a, s := c.Admin.AdminAPIConfig, c.Server
	on := a.APIListen != ""
	checks := []check{
		{"admin.api_listen", apiListen(a.APIListen, s)},
		{"admin.api_cert_file", rules.RequiredWith(a.APICertFile, on, "admin.api_listen")},
		{"admin.api_cert_file", rules.PairedWith(a.APICertFile, a.APIKeyFile, "admin.api_key_file")},
		{"admin.api_cert_file", rules.ReadableFile(a.APICertFile)},
		{"admin.api_key_file", rules.RequiredWith(a.APIKeyFile, on, "admin.api_listen")},
		{"admin.api_key_file", rules.PairedWith(a.APIKeyFile, a.APICertFile, "admin.api_cert_file")},
		{"admin.api_key_file", rules.PrivateFile(a.APIKeyFile)},
		{"admin.api_client_ca", rules.RequiredWith(a.APIClientCA, on, "admin.api_listen")},
		{"admin.api_client_ca", clientca.CAFile(a.APIClientCA)},
		{"admin.api_client_crl", clientca.CRLFile(a.APIClientCRL, a.APIClientCA)},
	}
	any := false
	for _, rg := range a.APIRoles.ByRole() {
		checks = append(checks, check{"admin.api_roles." + rg.Role, clientca.Entries(rg.Groups)})
		any = any || len(rg.Groups) > 0
	}
	if on && !any {
		checks = append(checks, check{"admin.api_roles.security_officer",
			"admin.api_listen is set but admin.api_roles grants no certificate a role: every client would be refused; name the onboarding system's certificate in a role"})
	}
	return checks
}

// apiListen checks admin.api_listen: empty, or host:port on a port of its
// own.
func apiListen(addr string, s ServerConfig) string {
	if addr == "" {
		return ""
	}
	if msg := rules.HostPort(addr); msg != "" {
		return msg + "; empty turns the provisioning API off"
	}
	switch {
	case portConflict(addr, s.Listen):
		return fmt.Sprintf("%q uses the port of server.listen (%s); give the provisioning API a port of its own", addr, s.Listen)
	case s.MetricsListen != "" && portConflict(addr, s.MetricsListen):
		return fmt.Sprintf("%q uses the port of server.metrics_listen (%s); give the provisioning API a port of its own", addr, s.MetricsListen)
	}
	return ""
}
