package main

import (
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/oauth2"

	"github.com/signd/signd/oauth/oauthtest"
	softhsmtest "github.com/signd/signd/softhsm-test"
)

// enrollExplicit enrolls a credential of user with extra create flags
// (--multisign, --auth-mode) and a chain from a throwaway CA.
func enrollExplicit(t *testing.T, e *env, user, subject string, flags ...string) string {
	t.Helper()
	csr := e.must("", append([]string{"credential", "create", "--user", user, "--subject", subject, "--csr-out", "-"}, flags...)...)
	lines := strings.Split(strings.TrimSpace(csr), "\n")
	cred := lines[len(lines)-1]
	chainFile := filepath.Join(e.dir, cred+"-chain.pem")
	if err := os.WriteFile(chainFile, []byte(newTestCA(t, "Batch CA").issue(t, csr)), 0o600); err != nil {
		t.Fatal(err)
	}
	e.must("", "credential", "import-cert", cred, "--chain", chainFile)
	return cred
}

// serviceToken runs the service-scope code flow for alice and returns the
// Bearer access token.
func serviceToken(t *testing.T, base string) string {
	t.Helper()
	conf, ctx := journeyClient(base)
	conf.Scopes = []string{"service"}
	browser := oauthtest.NewBrowser(nil)
	s, err := browser.Get(conf.AuthCodeURL("state-service", oauth2.SetAuthURLParam("lang", "en")))
	if err != nil || s.Form == nil {
		t.Fatalf("login page: %v", err)
	}
	if s, err = browser.Submit(s.Form, map[string]string{"username": "alice", "password": journeyPassword}, "approve"); err != nil || s.Form == nil {
		t.Fatalf("consent page: %v", err)
	}
	if s, err = browser.Submit(s.Form, nil, "approve"); err != nil {
		t.Fatal(err)
	}
	tok, err := conf.Exchange(ctx, s.Query().Get("code"))
	if err != nil {
		t.Fatal(err)
	}
	return tok.AccessToken
}

// TestExplicitBatchJourney replays pyHanko's default path (reference/csc.md
// §3) against the real daemon, a real SoftHSM2 key and the bbolt file:
// service token → credentials/info (authMode explicit, multisign 10) →
// credentials/authorize with the PIN for a batch of 5 hashes → one
// signHash with all 5; every signature verifies with crypto/rsa and
// openssl. Then the hostile cases: reuse, a second batch for other
// hashes, numSignatures over multisign, the oauth2code credential, the
// admin lowering multisign, and a flood of wrong PINs against the lockout.
func TestExplicitBatchJourney(t *testing.T) {
	e := newEnv(t, "")
	seedCred, base, _ := startJourney(t, e)
	cred := enrollExplicit(t, e, "alice", "CN=Alice Jansen,O=Example BV,C=NL", "--multisign", "10", "--auth-mode", "explicit")
	if out := e.must("", "credential", "show", cred); !strings.Contains(out, "auth mode:  explicit (multisign 10)") {
		t.Errorf("credential show: %s", out)
	}
	bearer := serviceToken(t, base)
	call := func(method, body string) (int, map[string]any) {
		t.Helper()
		return postJSON(t, base+"/csc/v1/"+method, bearer, body)
	}

	status, info := call("credentials/info", `{"credentialID":"`+cred+`","certificates":"chain","authInfo":true}`)
	if status != 200 || info["authMode"] != "explicit" || info["multisign"] != float64(10) || info["PIN"] == nil {
		t.Fatalf("credentials/info: %d %v", status, info)
	}
	leafDER, _ := base64.StdEncoding.DecodeString(info["cert"].(map[string]any)["certificates"].([]any)[0].(string))
	leaf, err := x509.ParseCertificate(leafDER)
	if err != nil {
		t.Fatal(err)
	}
	if _, m := call("info", `{}`); !strings.Contains(fmt.Sprint(m["methods"]), "credentials/authorize") {
		t.Errorf("info methods: %v", m["methods"])
	}

	hashes := make([]string, 5)
	digests := make([][]byte, 5)
	for i := range digests {
		d := sha256.Sum256([]byte(fmt.Sprintf("%%PDF-1.7 signed attributes of document %d", i)))
		digests[i], hashes[i] = d[:], base64.StdEncoding.EncodeToString(d[:])
	}
	authorize := func(credID string, num int, pin string, hs []string) (int, map[string]any) {
		t.Helper()
		b, _ := json.Marshal(map[string]any{"credentialID": credID, "numSignatures": num, "hash": hs, "PIN": pin})
		return call("credentials/authorize", string(b))
	}
	status, res := authorize(cred, 5, journeyPIN, hashes)
	sad, _ := res["SAD"].(string)
	if status != 200 || sad == "" || res["expiresIn"] == nil {
		t.Fatalf("credentials/authorize: %d %v", status, res)
	}
	signBody := func(sad string, hs []string) string {
		b, _ := json.Marshal(map[string]any{"credentialID": cred, "SAD": sad, "hash": hs,
			"hashAlgo": "2.16.840.1.101.3.4.2.1", "signAlgo": "1.2.840.113549.1.1.1"})
		return string(b)
	}
	status, res = call("signatures/signHash", signBody(sad, hashes))
	sigs, _ := res["signatures"].([]any)
	if status != 200 || len(sigs) != 5 {
		t.Fatalf("signHash: %d %v", status, res)
	}
	for i, s := range sigs {
		sig, err := base64.StdEncoding.DecodeString(s.(string))
		if err != nil {
			t.Fatal(err)
		}
		if err := rsa.VerifyPKCS1v15(leaf.PublicKey.(*rsa.PublicKey), crypto.SHA256, digests[i], sig); err != nil {
			t.Errorf("signature %d: crypto/rsa: %v", i, err)
		}
		softhsmtest.VerifyWithOpenSSL(t, leafDER, digests[i], sig)
	}

	// Hostile: reuse, other hashes, too many, the wrong door.
	wantCSC := func(what string, status int, res map[string]any, desc string) {
		t.Helper()
		if status != 400 || res["error_description"] != desc {
			t.Errorf("%s: %d %v, want 400 %q", what, status, res, desc)
		}
	}
	status, res = call("signatures/signHash", signBody(sad, hashes))
	wantCSC("reused SAD", status, res, "Invalid parameter SAD")
	_, res = authorize(cred, 5, journeyPIN, hashes)
	status, res = call("signatures/signHash", signBody(res["SAD"].(string), []string{hashes[0], hashes[0], hashes[1], hashes[2], hashes[3]}))
	wantCSC("SAD for other hashes", status, res, "Hash is not authorized by the SAD.")
	many := make([]string, 11)
	for i := range many {
		many[i] = hashes[i%5]
	}
	status, res = authorize(cred, 11, journeyPIN, many)
	wantCSC("numSignatures over multisign", status, res, "Numbers of signatures is too high")
	status, res = authorize(seedCred, 1, journeyPIN, hashes[:1])
	wantCSC("oauth2code credential", status, res, "The credential's authMode is oauth2code: obtain the SAD with the OAuth 2.0 scope credential")

	// The admin lowers multisign: outstanding SADs are revoked, a batch of
	// 5 no longer fits.
	_, res = authorize(cred, 5, journeyPIN, hashes)
	pending := res["SAD"].(string)
	e.must("", "credential", "set-auth", cred, "--multisign", "2")
	status, res = call("signatures/signHash", signBody(pending, hashes))
	wantCSC("SAD issued before set-auth", status, res, "Invalid parameter SAD")
	status, res = authorize(cred, 5, journeyPIN, hashes)
	wantCSC("batch of 5 at multisign 2", status, res, "Numbers of signatures is too high")

	// A flood of wrong PINs at once: the PIN locks, the right one is
	// refused afterwards.
	var wg sync.WaitGroup
	start := make(chan struct{})
	answers := make([]string, 16)
	for i := range answers {
		wg.Go(func() {
			<-start
			_, res := authorize(cred, 1, "000000", hashes[:1])
			answers[i], _ = res["error_description"].(string)
		})
	}
	close(start)
	wg.Wait()
	invalid := 0
	for _, a := range answers {
		switch a {
		case "The PIN is invalid":
			invalid++
		case "PIN locked":
		default:
			t.Errorf("wrong PIN answered %q", a)
		}
	}
	if invalid >= 5 { // oauth.max_failures: the fifth wrong PIN locks
		t.Errorf("%d wrong PINs answered invalid_pin, want fewer than max_failures 5", invalid)
	}
	status, res = authorize(cred, 1, journeyPIN, hashes[:1])
	wantCSC("right PIN after the flood", status, res, "PIN locked")

	if out := e.must("", "audit", "verify"); !strings.HasPrefix(out, "audit log intact: ") {
		t.Errorf("audit verify: %q", out)
	}
}
