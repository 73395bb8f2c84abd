package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/routers"

	"github.com/signd/signd/admin"
	"github.com/signd/signd/cmd/signd/adminapi"
	"github.com/signd/signd/csc/certstatus/certstatustest"
)

// provisioning is a daemon with the provisioning API on, and the client
// certificates of its CA.
type provisioning struct {
	t     *testing.T
	e     *env
	base  string // the public API
	api   string // https://host:port of the provisioning API
	roots *x509.CertPool
	// serverCA is the PEM file of the API's (self-signed) certificate.
	serverCA string
	ca       *certstatustest.CA
	router   routers.Router
	logs     *syncBuffer   // the daemon's log
	hup      chan struct{} // the daemon's SIGHUP
	stop     func()        // stops the daemon (startDaemonWith's)
}

// apiCert is a client certificate with its key.
type apiCert struct {
	cert *x509.Certificate
	tls  tls.Certificate
}

// clientCertOf makes a client certificate for CN=cn,O=Example from ca.
func clientCertOf(t *testing.T, ca *certstatustest.CA, cn string) apiCert {
	t.Helper()
	return clientCertWith(t, ca, cn, time.Time{}, time.Time{})
}

// clientCertWith is clientCertOf valid from notBefore to notAfter (zero:
// certstatustest's default validity).
func clientCertWith(t *testing.T, ca *certstatustest.CA, cn string, notBefore, notAfter time.Time) apiCert {
	t.Helper()
	c := ca.ClientCert(t, cn, notBefore, notAfter)
	return apiCert{c.Leaf, c}
}

// startProvisioning starts a daemon whose provisioning API grants
// CN=onboarding,O=Example the administrator and security officer roles,
// and the key of auditor the auditor role.
func startProvisioning(t *testing.T, auditor apiCert, ca *certstatustest.CA) *provisioning {
	t.Helper()
	return startProvisioningWith(t, auditor, ca, nil)
}

// startProvisioningWith is startProvisioning with setup (nil = none) run
// on the environment before the daemon starts.
func startProvisioningWith(t *testing.T, auditor apiCert, ca *certstatustest.CA, setup func(e *env)) *provisioning {
	t.Helper()
	e := newEnv(t, "")
	if setup != nil {
		setup(e)
	}
	certFile, keyFile, roots := selfSigned(t, e.dir)
	caFile := filepath.Join(e.dir, "api-ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	e.setConfig("oidc:\n", fmt.Sprintf(`admin:
  api_listen: 127.0.0.1:0
  api_cert_file: %s
  api_key_file: %s
  api_client_ca: %s
  api_roles:
    administrator: ["CN=onboarding,O=Example"]
    security_officer: ["CN=onboarding,O=Example"]
    auditor: ["sha256:%s"]
oidc:
`, certFile, keyFile, caFile, admin.SPKIFingerprint(auditor.cert)))
	apiAddr := make(chan string, 1)
	logs, hup := &syncBuffer{}, make(chan struct{})
	addr, stop := e.startDaemonWith(func(a *app) { a.apiReady = func(addr string) { apiAddr <- addr }; a.stderr = logs; a.hup = hup })
	return &provisioning{t: t, e: e, base: "http://" + addr, api: "https://" + <-apiAddr, roots: roots, serverCA: certFile, ca: ca,
		router: openAPIRouterOf(t, "../../docs/admin-openapi.yaml"), logs: logs, hup: hup, stop: stop}
}

// client is an HTTPS client of the API presenting cert (nil: none).
func (p *provisioning) client(cert *apiCert) *http.Client {
	conf := &tls.Config{RootCAs: p.roots}
	if cert != nil {
		conf.Certificates = []tls.Certificate{cert.tls}
	}
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: conf, DisableKeepAlives: true}}
}

// call sends method path (under adminapi.Prefix) with the JSON body ("" =
// none) as cert, checks the answer against docs/admin-openapi.yaml, and
// returns its status and body.
func (p *provisioning) call(cert *apiCert, method, path, body string) (int, []byte) {
	p.t.Helper()
	st, hdr, raw := p.send(cert, method, path, body)
	checkOpenAPI(p.t, p.router, method, adminapi.Prefix+path, http.Header{"Content-Type": {"application/json"}}, body, st, hdr, raw)
	return st, raw
}

// send is call without the check: for what the document does not name.
func (p *provisioning) send(cert *apiCert, method, path, body string) (int, http.Header, []byte) {
	p.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, p.api+adminapi.Prefix+path, rd)
	if err != nil {
		p.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := p.client(cert).Do(req)
	if err != nil {
		p.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, raw
}

// must is call for a request that must answer 200; it decodes the answer
// into out (nil: not decoded).
func (p *provisioning) must(cert *apiCert, method, path, body string, out any) {
	p.t.Helper()
	st, raw := p.call(cert, method, path, body)
	if st != http.StatusOK {
		p.t.Fatalf("%s %s: %d %s", method, path, st, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			p.t.Fatalf("%s %s: %v in %s", method, path, err, raw)
		}
	}
}

// TestProvisioningJourney: an onboarding system with a client certificate
// creates a user with her password and PIN, a client, a credential; signs
// the CSR with its CA and imports the chain, all through the provisioning
// API; the user then signs through CSC and the signature verifies; the
// auditor's export names the certificate as the actor of each act.
func TestProvisioningJourney(t *testing.T) {
	ca := certstatustest.New(t, "Onboarding CA", nil)
	onboarding, auditor := clientCertOf(t, ca, "onboarding"), clientCertOf(t, ca, "auditor")
	p := startProvisioning(t, auditor, ca)

	var who admin.Identity
	p.must(&onboarding, "GET", "/whoami", "", &who)
	if who.Actor != admin.CertActor(onboarding.cert) || len(who.Roles) != 2 {
		t.Fatalf("whoami: %+v", who)
	}
	p.must(&onboarding, "POST", "/users", fmt.Sprintf(`{"username":"alice","password":%q,"email":"alice@example.org"}`, journeyPassword), nil)
	p.must(&onboarding, "PUT", "/users/alice/pin", fmt.Sprintf(`{"secret":%q}`, journeyPIN), nil)
	p.signsOnboarded(&onboarding, &auditor, "%PDF-1.7 the contract alice signs, onboarded remotely",
		"AddUser user_added user:alice ok", "SetPIN user_pin_set user:alice ok")
	p.must(&auditor, "GET", "/audit/verify", "", nil)
}

// signsOnboarded registers the client rp as cert, gives alice a credential
// and signs doc with it (the signature verified); the auditor's export
// then holds, with cert as their actor, userActs (what cert did to alice
// before) and the acts of the client's and the credential's creation. It
// returns the credential's ID.
func (p *provisioning) signsOnboarded(cert, auditor *apiCert, doc string, userActs ...string) string {
	p.t.Helper()
	p.must(cert, "POST", "/clients", fmt.Sprintf(`{"id":"rp","secret":%q,"redirect_uris":["https://rp.example/cb"],"scopes":["service","credential"]}`, journeySecret), nil)
	cred, chain := p.credentialOf(cert, "alice")
	signsAndVerifies(p.t, p.base, cred, chain, doc)

	// The auditor's export: each act, with the certificate as its actor.
	actor := admin.CertActor(cert.cert)
	want := append(userActs, "AddClient client_added client:rp ok",
		"CreateCredential credential_enrolled credential:"+cred+" pending",
		"ImportCertificate credential_enrolled credential:"+cred+" enabled")
	if got := p.actsOf(auditor, actor); strings.Join(got, "\n") != strings.Join(want, "\n") {
		p.t.Errorf("the acts of %s:\n%s\nwant:\n%s", actor, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	return cred
}

// credentialOf creates a credential for user as cert, signs its CSR with
// a test CA and imports the chain; it returns the credential's ID and the
// chain (PEM, the leaf first).
func (p *provisioning) credentialOf(cert *apiCert, user string) (cred, chain string) {
	t := p.t
	t.Helper()
	var created admin.CreateCredentialResult
	p.must(cert, "POST", "/credentials", fmt.Sprintf(`{"user":%q,"subject":"CN=Alice Jansen,O=Example BV,C=NL"}`, user), &created)
	cred = created.Credential.ID
	if cred == "" || !strings.HasPrefix(created.CSRPEM, "-----BEGIN CERTIFICATE REQUEST-----") {
		t.Fatalf("POST /credentials: %+v", created)
	}
	chain = newTestCA(t, "Journey CA").issue(t, created.CSRPEM)
	body, _ := json.Marshal(map[string]string{"chain_pem": chain})
	var view admin.CredentialView
	p.must(cert, "POST", "/credentials/"+cred+"/chain", string(body), &view)
	if view.Status != "enabled" {
		t.Fatalf("after the chain: %+v", view)
	}
	return cred, chain
}

// signsAndVerifies: alice (journeyPassword, journeyPIN) signs the digest
// of text with cred through CSC at base (the OAuth client rp), and the
// signature verifies with the chain's leaf (crypto/rsa and OpenSSL).
func signsAndVerifies(t *testing.T, base, cred, chain, text string) {
	t.Helper()
	flow := oauthFlow(t, base)
	service := flow("service", "state-service")
	digest := sha256.Sum256([]byte(text))
	sad := flow("credential", "state-credential", oneSignature(cred, digest[:])...)
	status, res := postJSON(t, base+"/csc/v1/signatures/signHash", service.AccessToken, signHashBody(cred, sad.AccessToken, digest[:]))
	b, _ := pem.Decode([]byte(chain))
	if b == nil {
		t.Fatalf("the chain is not PEM: %q", chain)
	}
	verifyRSA(t, b.Bytes, digest[:], signaturesOf(t, status, res, 1)[0])
}

// actsOf is the auditor's export of the acts of actor, one "op kind
// target outcome" a line.
func (p *provisioning) actsOf(auditor *apiCert, actor string) []string {
	t := p.t
	t.Helper()
	st, raw := p.call(auditor, "GET", "/audit/export?actor="+url.QueryEscape(actor), "")
	if st != 200 {
		t.Fatalf("export: %d %s", st, raw)
	}
	var kinds []string
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		var line struct {
			Kind, Actor, Outcome, Target string
			Fields                       map[string]string
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("export line %q: %v", sc.Text(), err)
		}
		if line.Actor != actor {
			t.Errorf("export by actor holds %+v", line)
		}
		kinds = append(kinds, line.Fields["op"]+" "+line.Kind+" "+line.Target+" "+line.Outcome)
	}
	return kinds
}

// TestProvisioningRefusals: against the real daemon, whoever may not call
// — no certificate, one of another CA, an expired one, one the CRL of
// admin.api_client_crl revokes, each with a subject admin.api_roles names
// — is refused at the handshake and audited; whoever may not do an act,
// and every malformed request, gets the one error shape, checked against
// docs/admin-openapi.yaml.
func TestProvisioningRefusals(t *testing.T) {
	ca := certstatustest.New(t, "Onboarding CA", nil)
	onboarding, auditor := clientCertOf(t, ca, "onboarding"), clientCertOf(t, ca, "auditor")
	rogue := clientCertOf(t, certstatustest.New(t, "Onboarding CA", nil), "onboarding")
	expired := clientCertWith(t, ca, "onboarding", time.Now().Add(-48*time.Hour), time.Now().Add(-time.Hour))
	revoked := clientCertOf(t, ca, "onboarding")
	ca.Revoke(revoked.cert.SerialNumber, 1)
	res, err := http.Get(ca.URL + "/crl")
	if err != nil {
		t.Fatal(err)
	}
	crl, _ := io.ReadAll(res.Body)
	res.Body.Close()
	crlFile := filepath.Join(t.TempDir(), "api-ca.crl")
	if err := os.WriteFile(crlFile, crl, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SIGND_ADMIN_API_CLIENT_CRL", crlFile)
	p := startProvisioning(t, auditor, ca)

	// No certificate, one of another CA, expired or revoked: no HTTP at all.
	for _, c := range []*apiCert{nil, &rogue, &expired, &revoked} {
		res, err := p.client(c).Get(p.api + adminapi.Prefix + "/users")
		if err == nil {
			res.Body.Close()
			t.Errorf("GET /users with certificate %v: %s", c != nil, res.Status)
		}
	}
	// The refusals are audited (the server writes them after the client
	// has heard of them: wait for all, bounded).
	want := []string{
		"client didn't provide a certificate",
		admin.CertActor(rogue.cert) + ": the client certificate does not verify against admin.api_client_ca: x509: certificate signed by unknown authority",
		admin.CertActor(expired.cert) + ": the client certificate does not verify against admin.api_client_ca: x509: certificate has expired or is not yet valid",
		admin.CertActor(revoked.cert) + fmt.Sprintf(": the client certificate (serial %s) is revoked (admin.api_client_crl, since ", revoked.cert.SerialNumber),
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		var got []string
		st, raw := p.call(&auditor, "GET", "/audit/export?kind=admin_refused", "")
		if st != 200 {
			t.Fatalf("export: %d %s", st, raw)
		}
		for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
			var e struct {
				Actor, Reason string
				Fields        map[string]string
			}
			if json.Unmarshal([]byte(l), &e) == nil && e.Fields["op"] == "tls_handshake" {
				got = append(got, e.Actor+": "+e.Reason)
			}
		}
		joined := strings.Join(got, "\n")
		if !slices.ContainsFunc(want, func(w string) bool { return !strings.Contains(joined, w) }) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("refused handshakes audited as:\n%s", joined)
		}
		time.Sleep(20 * time.Millisecond)
	}

	big := `{"user":"alice","description":"` + strings.Repeat("x", adminapi.MaxBody) + `"}`
	tests := []struct {
		name         string
		as           *apiCert
		method, path string
		body         string
		status       int
		msg          string
		unnamed      bool // a route docs/admin-openapi.yaml does not name
	}{
		{"a role that may not", &auditor, "POST", "/credentials", `{"user":"alice"}`, 403, "CreateCredential requires the role security_officer; " + admin.CertActor(auditor.cert) + " holds the role auditor", false},
		{"an unknown field", &onboarding, "POST", "/credentials", `{"user":"alice","owner":"bob"}`, 400, `malformed admin request: unknown field "owner"`, false},
		{"malformed", &onboarding, "POST", "/users", `{"username":"bob",`, 400, "malformed admin request: the JSON value is cut off", false},
		{"oversized", &onboarding, "POST", "/credentials", big, 400, "the request body is larger than 16777216 bytes", false},
		{"an unknown route", &onboarding, "GET", "/keys", "", 404, "Not Found", true},
		{"an unknown method", &onboarding, "PATCH", "/users/alice", `{}`, 405, "Method Not Allowed", true},
		{"an unknown user", &onboarding, "GET", "/users/nobody", "", 404, "not found", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var st int
			var raw []byte
			if tt.unnamed {
				st, _, raw = p.send(tt.as, tt.method, tt.path, tt.body)
			} else {
				st, raw = p.call(tt.as, tt.method, tt.path, tt.body)
			}
			var e admin.Error
			if err := json.Unmarshal(raw, &e); err != nil || st != tt.status || !strings.Contains(e.Message, tt.msg) {
				t.Errorf("%d %s, want %d ...%s...", st, raw, tt.status, tt.msg)
			}
		})
	}
}

// writePEM writes blocks to a new file in dir, mode 0600.
func writePEM(t *testing.T, dir, name string, blocks ...*pem.Block) string {
	t.Helper()
	var b bytes.Buffer
	for _, bl := range blocks {
		pem.Encode(&b, bl)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestProvisionScript runs scripts/provision.sh, the curl sequence of
// docs/API.md, against the daemon: the user and her credential come out
// enabled with the chain the script's CA made. With a certificate no role
// names it stops at the first request, saying so.
func TestProvisionScript(t *testing.T) {
	ca := certstatustest.New(t, "Onboarding CA", nil)
	onboarding, auditor := clientCertOf(t, ca, "onboarding"), clientCertOf(t, ca, "auditor")
	p := startProvisioning(t, auditor, ca)
	dir := p.e.dir
	keyPEM := func(c apiCert) *pem.Block {
		der, err := x509.MarshalPKCS8PrivateKey(c.tls.PrivateKey)
		if err != nil {
			t.Fatal(err)
		}
		return &pem.Block{Type: "PRIVATE KEY", Bytes: der}
	}
	stranger := clientCertOf(t, ca, "stranger")
	signing := newTestCA(t, "Onboarding signing CA")
	caKey, _ := x509.MarshalPKCS8PrivateKey(signing.key)
	files := map[string]string{
		"cert":         writePEM(t, dir, "onboarding.pem", &pem.Block{Type: "CERTIFICATE", Bytes: onboarding.cert.Raw}),
		"key":          writePEM(t, dir, "onboarding.key", keyPEM(onboarding)),
		"stranger":     writePEM(t, dir, "stranger.pem", &pem.Block{Type: "CERTIFICATE", Bytes: stranger.cert.Raw}),
		"stranger-key": writePEM(t, dir, "stranger.key", keyPEM(stranger)),
		"ca-cert":      writePEM(t, dir, "signing-ca.pem", &pem.Block{Type: "CERTIFICATE", Bytes: signing.cert.Raw}),
		"ca-key":       writePEM(t, dir, "signing-ca.key", &pem.Block{Type: "PRIVATE KEY", Bytes: caKey}),
	}
	pinFile := filepath.Join(dir, "bob.pin")
	if err := os.WriteFile(pinFile, []byte("739155\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	script, _ := filepath.Abs("../../scripts/provision.sh")
	run := func(user, cert, key string) (string, string, error) {
		var out, errb bytes.Buffer
		cmd := exec.Command("bash", script, "--api", p.api, "--cert", cert, "--key", key, "--cacert", p.serverCA,
			"--user", user, "--password-file", "-", "--pin-file", pinFile, "--email", user+"@example.org",
			"--subject", "CN=Bob de Vries,O=Example BV,C=NL", "--ca-cert", files["ca-cert"], "--ca-key", files["ca-key"])
		cmd.Stdin = strings.NewReader("bob's own long password\n")
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		return out.String(), errb.String(), err
	}
	out, errOut, err := run("bob", files["cert"], files["key"])
	if err != nil {
		t.Fatalf("provision.sh: %v\n%s", err, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	id := lines[len(lines)-1]
	var v admin.CredentialView
	p.must(&auditor, "GET", "/credentials/"+id, "", &v)
	if v.Status != "enabled" || v.Owner != "bob" || v.Subject != "CN=Bob de Vries,O=Example BV,C=NL" || v.ChainLength != 2 {
		t.Errorf("credential after provision.sh: %+v", v)
	}
	var u admin.UserView
	p.must(&auditor, "GET", "/users/bob", "", &u)
	if !u.HasPIN || u.Email != "bob@example.org" {
		t.Errorf("bob after provision.sh: %+v", u)
	}
	if strings.Contains(out+errOut, "bob's own long password") || strings.Contains(out+errOut, "739155") {
		t.Errorf("provision.sh printed a secret:\n%s\n%s", out, errOut)
	}

	// The same user again: the API's refusal, word for word.
	if _, errOut, err := run("bob", files["cert"], files["key"]); err == nil ||
		!strings.Contains(errOut, `provision.sh: POST /users: 409 already_exists: `) {
		t.Errorf("bob twice: %v\n%s", err, errOut)
	}
	// A certificate of the CA that no role names: refused at the
	// handshake, no user.
	if _, errOut, err := run("carol", files["stranger"], files["stranger-key"]); err == nil ||
		!strings.Contains(errOut, "provision.sh: POST /users: the API could not be reached, or refused this client's certificate") {
		t.Errorf("a mismatched certificate: %v\n%s", err, errOut)
	}
	if st, _ := p.call(&auditor, "GET", "/users/carol", ""); st != http.StatusNotFound {
		t.Errorf("carol exists after a refused run: %d", st)
	}
}
