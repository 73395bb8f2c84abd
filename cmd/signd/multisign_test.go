package main

import (
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/signd/signd/internal/logtest"
	"github.com/signd/signd/oauth/oauthtest"
	"github.com/signd/signd/store/storetest"
)

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
	cred := enrollKey(t, e, "alice", "CN=Alice Jansen,O=Example BV,C=NL", "--multisign", "10", "--auth-mode", "explicit")
	if out := e.must("", "credential", "show", cred); !strings.Contains(out, "auth mode:  explicit (multisign 10)") {
		t.Errorf("credential show: %s", out)
	}
	// Bad flags are refused before any key is generated.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"credential", "create", "--user", "alice", "--multisign", "0"}, "--multisign must be 1 to 1000"},
		{[]string{"credential", "create", "--user", "alice", "--multisign", "1001"}, "multisign must be 1 to 1000"},
		{[]string{"credential", "create", "--user", "alice", "--multisign", "-3"}, "--multisign must be 1 to 1000"},
		{[]string{"credential", "create", "--user", "alice", "--auth-mode", "implicit"}, "auth mode must be oauth2code or explicit"},
		{[]string{"credential", "set-auth", cred}, "nothing to change"},
		{[]string{"credential", "set-auth", cred, "--multisign", "0"}, "--multisign must be 1 to 1000"},
		{[]string{"credential", "set-auth", cred, "--auth-mode", "EXPLICIT"}, "auth mode must be oauth2code or explicit"},
		{[]string{"credential", "set-auth", "no-such-credential", "--multisign", "2"}, "no-such-credential"},
	} {
		out, errOut, err := e.run("", tc.args...)
		if err == nil || !strings.Contains(err.Error()+errOut, tc.want) {
			t.Errorf("%v: %v %q %q, want an error with %q", tc.args, err, out, errOut, tc.want)
		}
	}
	if out := e.must("", "credential", "list", "--user", "alice"); strings.Count(strings.TrimSpace(out), "\n") != 2 {
		t.Errorf("refused creates left credentials:\n%s", out)
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
	for i, sig := range signaturesOf(t, status, res, 5) {
		verifyRSA(t, leafDER, digests[i], sig)
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
	answers := make([]string, 16)
	storetest.AtOnce(len(answers), func(i int) {
		_, res := authorize(cred, 1, "000000", hashes[:1])
		answers[i], _ = res["error_description"].(string)
	})
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
	b, _ := json.Marshal(map[string]any{"credentialID": cred, "SAD": "no such SAD", "hash": hashes[:1]})
	status, res = call("credentials/extendTransaction", string(b))
	wantCSC("extendTransaction of an unknown SAD", status, res, "Invalid parameter SAD")

	// Each authorize and extendTransaction is counted by its result.
	counted := []string{
		`signd_csc_authorize_total{result="granted"} 3`,
		`signd_csc_authorize_total{result="refused"} 3`,
		fmt.Sprintf(`signd_csc_authorize_total{result="locked"} %d`, len(answers)-invalid+1),
		`signd_csc_extend_transaction_total{result="refused"} 1`,
	}
	if invalid > 0 {
		counted = append(counted, fmt.Sprintf(`signd_csc_authorize_total{result="wrong_pin"} %d`, invalid))
	}
	waitMetrics(t, e, counted...)

	// The lock is the consent page's too: the OAuth credential flow of the
	// other credential is refused with the right PIN.
	conf, _ := journeyClient(base)
	conf.Scopes = []string{"credential"}
	browser := oauthtest.NewBrowser(nil)
	s, err := browser.Get(conf.AuthCodeURL("state-locked", oauth2.SetAuthURLParam("credentialID", seedCred),
		oauth2.SetAuthURLParam("numSignatures", "1"), oauth2.SetAuthURLParam("hash", base64.RawURLEncoding.EncodeToString(digests[0]))))
	if err == nil && s.Form != nil {
		s, err = browser.Submit(s.Form, map[string]string{"username": "alice", "password": journeyPassword}, "approve")
	}
	if err == nil && s.Form != nil && s.Form.Has("pin") {
		s, err = browser.Submit(s.Form, map[string]string{"pin": journeyPIN}, "approve")
	}
	if err != nil || s.Query().Get("error") != "access_denied" {
		t.Errorf("consent after the flood: %v %d %v %s", err, s.Status, s.Location, oauthtest.Text(s.Body))
	}

	// One signHash entry lists the whole batch.
	batches := 0
	for _, ent := range logtest.Lines[struct {
		Kind, Outcome string
		Hashes        []string
	}](t, e.must("", "audit", "export")) {
		if ent.Kind == "signHash" && ent.Outcome == "granted" {
			batches++
			if len(ent.Hashes) != 5 {
				t.Errorf("signHash entry lists %d hashes, want 5", len(ent.Hashes))
			}
		}
	}
	if batches != 1 {
		t.Errorf("%d granted signHash entries, want 1", batches)
	}

	if out := e.must("", "audit", "verify"); !strings.HasPrefix(out, "audit log intact: ") {
		t.Errorf("audit verify: %q", out)
	}
}

// TestOAuthBatchJourney: the OAuth 2.0 credential scope with a batch, as
// SetaPDF and the Cleverbase SDK ask for it: numSignatures 3 and three
// comma-separated base64url hashes (one twice) on a credential the admin
// set to multisign 3; consent with the PIN; one signHash with the hashes
// in another order returns the signatures in that order, each verified.
func TestOAuthBatchJourney(t *testing.T) {
	e := newEnv(t, "")
	cred, base, _ := startJourney(t, e)
	e.must("", "credential", "set-auth", cred, "--multisign", "3")
	bearer := serviceToken(t, base)

	digests := make([][]byte, 3)
	for i := range 2 {
		d := sha256.Sum256([]byte(fmt.Sprintf("page %d", i)))
		digests[i] = d[:]
	}
	digests[2] = digests[0]
	var param []string
	for _, d := range digests {
		param = append(param, base64.RawURLEncoding.EncodeToString(d))
	}
	conf, ctx := journeyClient(base)
	conf.Scopes = []string{"credential"}
	browser := oauthtest.NewBrowser(nil)
	s, err := browser.Get(conf.AuthCodeURL("state-batch", oauth2.SetAuthURLParam("lang", "en"),
		oauth2.SetAuthURLParam("credentialID", cred), oauth2.SetAuthURLParam("numSignatures", "3"),
		oauth2.SetAuthURLParam("hash", strings.Join(param, ","))))
	if err != nil || s.Form == nil {
		t.Fatalf("login page: %v %d %s", err, s.Status, oauthtest.Text(s.Body))
	}
	if s, err = browser.Submit(s.Form, map[string]string{"username": "alice", "password": journeyPassword}, "approve"); err != nil || s.Form == nil {
		t.Fatalf("consent page: %v %d %s", err, s.Status, oauthtest.Text(s.Body))
	}
	if !strings.Contains(oauthtest.Text(s.Body), "3 signatures") {
		t.Errorf("the consent page does not say 3 signatures: %s", oauthtest.Text(s.Body))
	}
	if s, err = browser.Submit(s.Form, map[string]string{"pin": journeyPIN}, "approve"); err != nil {
		t.Fatal(err)
	}
	tok, err := conf.Exchange(ctx, s.Query().Get("code"))
	if err != nil {
		t.Fatalf("token: %v", err)
	}
	order := [][]byte{digests[1], digests[0], digests[2]}
	hs := make([]string, len(order))
	for i, d := range order {
		hs[i] = base64.StdEncoding.EncodeToString(d)
	}
	body, _ := json.Marshal(map[string]any{"credentialID": cred, "SAD": tok.AccessToken, "hash": hs,
		"signAlgo": "1.2.840.113549.1.1.11"})
	status, res := postJSON(t, base+"/csc/v1/signatures/signHash", bearer, string(body))
	sigs, _ := res["signatures"].([]any)
	if status != 200 || len(sigs) != 3 {
		t.Fatalf("signHash: %d %v", status, res)
	}
	_, info := postJSON(t, base+"/csc/v1/credentials/info", bearer, `{"credentialID":"`+cred+`"}`)
	if info["multisign"] != float64(3) || info["authMode"] != "oauth2code" {
		t.Errorf("credentials/info: %v", info)
	}
	leafDER, _ := base64.StdEncoding.DecodeString(info["cert"].(map[string]any)["certificates"].([]any)[0].(string))
	leaf, _ := x509.ParseCertificate(leafDER)
	for i, s := range sigs {
		sig, _ := base64.StdEncoding.DecodeString(s.(string))
		if err := rsa.VerifyPKCS1v15(leaf.PublicKey.(*rsa.PublicKey), crypto.SHA256, order[i], sig); err != nil {
			t.Errorf("signature %d: %v", i, err)
		}
	}
	// numSignatures 4 over multisign 3: refused after login, on the redirect.
	s, _ = browser.Get(conf.AuthCodeURL("state-4", oauth2.SetAuthURLParam("credentialID", cred),
		oauth2.SetAuthURLParam("numSignatures", "4"), oauth2.SetAuthURLParam("hash", strings.Join(append(param, param[0]), ","))))
	if s.Form != nil {
		s, _ = browser.Submit(s.Form, map[string]string{"username": "alice", "password": journeyPassword}, "approve")
	}
	if q := s.Query(); q.Get("error") != "invalid_request" || q.Get("error_description") != "Numbers of signatures is too high" {
		t.Errorf("numSignatures over multisign: %d %v", s.Status, s.Location)
	}
}
