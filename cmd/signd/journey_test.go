package main

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/oauth2"
)

// TestCSCJourney is the whole CSC journey against the real daemon and a
// real SoftHSM2 key, driven the way a signing client and its user do:
// service authorize → login → consent → token → credentials/list →
// credentials/info → credential authorize (fresh login, signing PIN) →
// SAD → signHash. The signature verifies with crypto/rsa against the
// certificate credentials/info returned and with the openssl command line.
func TestCSCJourney(t *testing.T) {
	e := newEnv(t, "")
	cred, base, _ := startJourney(t, e)

	// flow runs one authorization code flow and returns the token.
	flow := oauthFlow(t, base)

	// Service authorization: a Bearer token.
	service := flow("service", "state-service")
	if service.Type() != "Bearer" {
		t.Fatalf("service token_type %q", service.Type())
	}
	status, list := postJSON(t, base+"/csc/v1/credentials/list", service.AccessToken, `{}`)
	if ids, _ := list["credentialIDs"].([]any); status != 200 || len(ids) != 1 || ids[0] != cred {
		t.Fatalf("credentials/list: %d %v", status, list)
	}
	status, info := postJSON(t, base+"/csc/v1/credentials/info", service.AccessToken,
		`{"credentialID":"`+cred+`","certificates":"chain","certInfo":true,"authInfo":true}`)
	if status != 200 {
		t.Fatalf("credentials/info: %d %v", status, info)
	}
	key := info["key"].(map[string]any)
	certs := info["cert"].(map[string]any)["certificates"].([]any)
	if key["status"] != "enabled" || info["SCAL"] != "2" || info["authMode"] != "oauth2code" || len(certs) != 2 {
		t.Fatalf("credentials/info: %v", info)
	}
	leafDER, _ := base64.StdEncoding.DecodeString(certs[0].(string))

	// Credential authorization for one document hash: a SAD.
	digest := sha256.Sum256([]byte("%PDF-1.7 the contract alice signs"))
	sad := flow("credential", "state-credential",
		oneSignature(cred, digest[:])...)
	if sad.Type() != "SAD" {
		t.Fatalf("credential token_type %q", sad.Type())
	}

	e.signsOnce(base, service.AccessToken, cred, sad.AccessToken, digest[:], leafDER)
}

// signsOnce: signHash at base with the SAD for one signature of digest
// signs it (the signature verifies with the certificate leafDER), the same
// SAD again is refused, and the audit log verifies.
func (e *env) signsOnce(base, bearer, cred, sad string, digest, leafDER []byte) {
	e.t.Helper()
	body := signHashBody(cred, sad, digest)
	status, res := postJSON(e.t, base+"/csc/v1/signatures/signHash", bearer, body)
	verifyRSA(e.t, leafDER, digest, signaturesOf(e.t, status, res, 1)[0])
	status, res = postJSON(e.t, base+"/csc/v1/signatures/signHash", bearer, body)
	if status != 400 || res["error_description"] != "Invalid parameter SAD" {
		e.t.Errorf("second signHash with the SAD: %d %v", status, res)
	}
	if out := e.must("", "audit", "verify"); !strings.HasPrefix(out, "audit log intact: ") {
		e.t.Errorf("audit verify: %q", out)
	}
}

// oneSignature is the oauth2/authorize parameters of a credential-scope
// flow for one signature of digest with cred, then more.
func oneSignature(cred string, digest []byte, more ...oauth2.AuthCodeOption) []oauth2.AuthCodeOption {
	return append([]oauth2.AuthCodeOption{oauth2.SetAuthURLParam("credentialID", cred), oauth2.SetAuthURLParam("numSignatures", "1"),
		oauth2.SetAuthURLParam("hash", base64.RawURLEncoding.EncodeToString(digest))}, more...)
}

// enrollKey creates a credential for user with subject and extra create
// flags (--key-type, --multisign, --auth-mode) and imports a chain from a
// throwaway CA; it returns the credential ID.
func enrollKey(t *testing.T, e *env, user, subject string, flags ...string) string {
	t.Helper()
	csr := e.must("", append([]string{"credential", "create", "--user", user, "--subject", subject, "--csr-out", "-"}, flags...)...)
	lines := strings.Split(strings.TrimSpace(csr), "\n")
	cred := lines[len(lines)-1]
	chainFile := filepath.Join(e.dir, cred+"-chain.pem")
	if err := os.WriteFile(chainFile, []byte(newTestCA(t, "Journey CA").issue(t, csr)), 0o600); err != nil {
		t.Fatal(err)
	}
	e.must("", "credential", "import-cert", cred, "--chain", chainFile)
	return cred
}

// The journeys' user and client: alice with a password, a signing PIN and
// one enrolled credential; client rp for the service and credential scopes.
const (
	journeyPassword = "alice's long password"
	journeyPIN      = "482913"
	journeySecret   = "rp-secret-0123456789abcdef0123456789abcdef"
)

// journeyAlice adds alice and client rp through the CLI and enrolls a key
// for alice; it returns the credential ID.
func journeyAlice(t *testing.T, e *env) string {
	t.Helper()
	pinFile, secretFile := filepath.Join(e.dir, "pin.txt"), filepath.Join(e.dir, "secret.txt")
	os.WriteFile(pinFile, []byte(journeyPIN+"\n"), 0o600)
	os.WriteFile(secretFile, []byte(journeySecret+"\n"), 0o600)
	e.must(journeyPassword+"\n", "user", "add", "alice", "--password-file", "-", "--pin-file", pinFile)
	e.must("", "client", "add", "rp", "--redirect-uri", "https://rp.example/cb", "--secret-file", secretFile,
		"--scope", "service", "--scope", "credential")
	return enrollKey(t, e, "alice", "CN=Alice Jansen,O=Example BV,C=NL")
}

// startJourney adds alice and rp (journeyAlice) and starts the daemon; it
// returns alice's credential, the daemon's URL and its stop.
func startJourney(t *testing.T, e *env) (cred, base string, stop func()) {
	t.Helper()
	cred = journeyAlice(t, e)
	addr, stop := e.startDaemon()
	return cred, "http://" + addr, stop
}

// journeyClient is client rp's x/oauth2 configuration against the daemon
// at base, and the context its exchanges run in.
func journeyClient(base string) (oauth2.Config, context.Context) {
	return oauth2.Config{
		ClientID: "rp", ClientSecret: journeySecret, RedirectURL: "https://rp.example/cb",
		Endpoint: oauth2.Endpoint{AuthURL: base + "/oauth2/authorize", TokenURL: base + "/oauth2/token", AuthStyle: oauth2.AuthStyleInHeader},
	}, context.WithValue(context.Background(), oauth2.HTTPClient, http.DefaultClient)
}
