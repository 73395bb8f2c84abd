package main

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pquerna/otp/totp"

	"github.com/signd/signd/oauth/oauthtest"
)

// authLoginConfig turns auth/login on, issuing to the journeys' client rp.
const authLoginConfig = `csc:
  auth_login: true
  auth_login_client: rp
`

// cscCall posts body to a CSC method with the given Authorization header
// ("" for none) and returns the status, headers and JSON body (nil when
// there is none).
func cscCall(t *testing.T, base, method, authorization, body string) (int, http.Header, map[string]any) {
	t.Helper()
	header := map[string]string{}
	if body != "" {
		header["Content-Type"] = "application/json"
	}
	if authorization != "" {
		header["Authorization"] = authorization
	}
	return rawPost(t, base+"/csc/v1/"+method, header, body)
}

func basic(user, password string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))
}

// wantCSCError checks a CSC error answer.
func wantCSCError(t *testing.T, what string, status int, m map[string]any, wantStatus int, code, desc string) {
	t.Helper()
	if status != wantStatus || m["error"] != code || m["error_description"] != desc {
		t.Errorf("%s: %d %v, want %d %s %q", what, status, m, wantStatus, code, desc)
	}
}

// TestAuthLoginLaverca replays what Laverca sends (reference/csc.md §3):
// auth/login with HTTP Basic, then credentials/list and credentials/info
// with the token, then the credential authorization (here the OAuth
// credential flow of the same client) and signHash, through the real
// router, SoftHSM2 token and bbolt file; the signature is verified. Then
// the refresh token rotates, its reuse revokes the login's tokens, and
// auth/revoke ends a token.
func TestAuthLoginLaverca(t *testing.T) {
	e := newEnv(t, authLoginConfig)
	cred, base, _ := startJourney(t, e)

	status, _, info := cscCall(t, base, "info", "", "{}")
	methods, _ := info["methods"].([]any)
	if status != 200 || !slices.Contains(methods, any("auth/login")) || !slices.Contains(methods, any("auth/revoke")) ||
		fmt.Sprint(info["authType"]) != "[basic oauth2code]" {
		t.Fatalf("info with auth_login: %d %v", status, info)
	}

	status, hdr, login := cscCall(t, base, "auth/login", basic("alice", journeyPassword), `{"rememberMe":true}`)
	access, _ := login["access_token"].(string)
	refresh, _ := login["refresh_token"].(string)
	if status != 200 || access == "" || refresh == "" || login["expires_in"] != float64(3600) || hdr.Get("Cache-Control") != "no-store" {
		t.Fatalf("auth/login: %d %v %v", status, hdr, login)
	}

	_, list := postJSON(t, base+"/csc/v1/credentials/list", access, `{}`)
	if ids, _ := list["credentialIDs"].([]any); len(ids) != 1 || ids[0] != cred {
		t.Fatalf("credentials/list: %v", list)
	}
	status, credInfo := postJSON(t, base+"/csc/v1/credentials/info", access, `{"credentialID":"`+cred+`","certificates":"chain","certInfo":true}`)
	certs, _ := credInfo["cert"].(map[string]any)["certificates"].([]any)
	if status != 200 || len(certs) != 2 {
		t.Fatalf("credentials/info: %d %v", status, credInfo)
	}
	leafDER, _ := base64.StdEncoding.DecodeString(certs[0].(string))

	// The SAD for one hash, through the credential flow of client rp.
	digest := sha256.Sum256([]byte("%PDF-1.7 signed after auth/login"))
	conf, ctx := journeyClient(base)
	code := loginFlow(t, oauthtest.NewBrowser(nil), conf, mustLogin, "credential", "st", oneSignature(cred, digest[:])...)
	sad, err := conf.Exchange(ctx, code)
	if err != nil {
		t.Fatal(err)
	}
	status, res := postJSON(t, base+"/csc/v1/signatures/signHash", access, signHashBody(cred, sad.AccessToken, digest[:]))
	verifyRSA(t, leafDER, digest[:], signaturesOf(t, status, res, 1)[0])

	// Refresh: a new pair; the used refresh token again revokes the login.
	status, _, next := cscCall(t, base, "auth/login", "", `{"refresh_token":"`+refresh+`"}`)
	next2, _ := next["refresh_token"].(string)
	if status != 200 || next["access_token"] == "" || next2 == "" || next2 == refresh {
		t.Fatalf("refresh: %d %v", status, next)
	}
	status, _, m := cscCall(t, base, "auth/login", "", `{"refresh_token":"`+refresh+`"}`)
	wantCSCError(t, "reuse of the refresh token", status, m, 400, "invalid_request", "Invalid parameter refresh_token")
	for name, tok := range map[string]any{"first access token": access, "refreshed access token": next["access_token"]} {
		if status, m := postJSON(t, base+"/csc/v1/credentials/list", tok.(string), `{}`); status != 401 {
			t.Errorf("%s after the reuse: %d %v", name, status, m)
		}
	}
	status, _, m = cscCall(t, base, "auth/login", "", `{"refresh_token":"`+next2+`"}`)
	wantCSCError(t, "refresh of the revoked family", status, m, 400, "invalid_request", "Invalid parameter refresh_token")

	// auth/revoke: a login's own access token; another user's is left alone.
	e.must("bob's long password\n", "user", "add", "bob", "--password-file", "-")
	_, _, bobLogin := cscCall(t, base, "auth/login", basic("bob", "bob's long password"), "")
	_, _, aliceLogin := cscCall(t, base, "auth/login", basic("alice", journeyPassword), `{"rememberMe":false}`)
	bobToken, aliceToken := bobLogin["access_token"].(string), aliceLogin["access_token"].(string)
	if _, ok := aliceLogin["refresh_token"]; ok {
		t.Error("a refresh token without rememberMe")
	}
	status, _, m = cscCall(t, base, "auth/revoke", "Bearer "+aliceToken, `{"token":"`+bobToken+`","token_type_hint":"access_token"}`)
	if status != 204 || m != nil {
		t.Errorf("revoke of another user's token: %d %v, want 204 like any", status, m)
	}
	if status, _ := postJSON(t, base+"/csc/v1/credentials/list", bobToken, `{}`); status != 200 {
		t.Errorf("bob's token after alice revoked it: %d", status)
	}
	status, _, _ = cscCall(t, base, "auth/revoke", "Bearer "+aliceToken, `{"token":"no-such-token"}`)
	if status != 204 {
		t.Errorf("revoke of an unknown token: %d", status)
	}
	status, _, _ = cscCall(t, base, "auth/revoke", "Bearer "+bobToken, `{"token":"`+bobToken+`"}`)
	if status != 204 {
		t.Errorf("revoke of the own token: %d", status)
	}
	if status, _ := postJSON(t, base+"/csc/v1/credentials/list", bobToken, `{}`); status != 401 {
		t.Errorf("bob's token after he revoked it: %d", status)
	}
}

// TestAuthLoginHostile: malformed and hostile auth/login and auth/revoke
// requests get the CSC error with an exact description; TOTP users are
// refused; a flood of wrong passwords locks the account after exactly
// oauth.max_failures, for the login page too.
func TestAuthLoginHostile(t *testing.T) {
	e := newEnv(t, authLoginConfig+"oauth:\n  max_failures: 3\n")
	_, base, _ := startJourney(t, e)
	alice := basic("alice", journeyPassword)
	realm := `Basic realm="http://127.0.0.1:8443", charset="UTF-8"`

	for _, tc := range []struct {
		name, auth, body string
		status           int
		code, desc       string
	}{
		{"no credentials", "", "", 401, "authentication_error", "Missing HTTP Basic credentials or refresh_token"},
		{"malformed Basic", "Basic !!!", "", 400, "invalid_request", "Malformed HTTP Basic credentials"},
		{"Basic without colon", "Basic " + base64.StdEncoding.EncodeToString([]byte("alice")), "", 400, "invalid_request", "Malformed HTTP Basic credentials"},
		{"Bearer instead of Basic", "Bearer abc", "", 400, "invalid_request", "Malformed HTTP Basic credentials"},
		{"empty username", basic("", "x"), "", 400, "invalid_request", "Malformed HTTP Basic credentials"},
		{"oversized username", basic(strings.Repeat("a", 65), "x"), "", 400, "invalid_request", "Malformed HTTP Basic credentials"},
		{"oversized password", basic("alice", strings.Repeat("p", 1025)), "", 400, "invalid_request", "Malformed HTTP Basic credentials"},
		{"both Basic and refresh_token", alice, `{"refresh_token":"x"}`, 400, "invalid_request", "Send either HTTP Basic credentials or refresh_token, not both"},
		{"rememberMe not boolean", alice, `{"rememberMe":"yes"}`, 400, "invalid_request", "Missing (or invalid type) boolean parameter rememberMe"},
		{"refresh_token not a string", "", `{"refresh_token":7}`, 400, "invalid_request", "Missing (or invalid type) string parameter refresh_token"},
		{"empty refresh_token", "", `{"refresh_token":""}`, 400, "invalid_request", "Missing (or invalid type) string parameter refresh_token"},
		{"oversized refresh_token", "", `{"refresh_token":"` + strings.Repeat("r", 600) + `"}`, 400, "invalid_request", "Invalid parameter refresh_token"},
		{"unknown refresh_token", "", `{"refresh_token":"nope"}`, 400, "invalid_request", "Invalid parameter refresh_token"},
		{"duplicated member", alice, `{"rememberMe":true,"rememberMe":false}`, 400, "invalid_request", "Duplicate parameter rememberMe"},
		{"clientData not a string", alice, `{"clientData":1}`, 400, "invalid_request", "Invalid parameter clientData"},
		{"unknown user", basic("mallory", journeyPassword), "", 401, "authentication_error", "Invalid username or password"},
	} {
		status, hdr, m := cscCall(t, base, "auth/login", tc.auth, tc.body)
		wantCSCError(t, tc.name, status, m, tc.status, tc.code, tc.desc)
		if status == 401 && hdr.Get("WWW-Authenticate") != realm {
			t.Errorf("%s: WWW-Authenticate %q", tc.name, hdr.Get("WWW-Authenticate"))
		}
	}
	status, _, m := cscCall(t, base, "auth/login", alice, `{"a":{"b":1},"a":2}`)
	if status != 400 || m["error"] != "invalid_request" {
		t.Errorf("duplicated names: %d %v", status, m)
	}

	// auth/revoke.
	_, _, login := cscCall(t, base, "auth/login", alice, "")
	bearer := "Bearer " + login["access_token"].(string)
	for _, tc := range []struct{ name, auth, body, code, desc string }{
		{"missing token", bearer, `{}`, "invalid_request", "Missing (or invalid type) string parameter token"},
		{"token not a string", bearer, `{"token":1}`, "invalid_request", "Missing (or invalid type) string parameter token"},
		{"oversized token", bearer, `{"token":"` + strings.Repeat("t", 5000) + `"}`, "invalid_request", "Invalid parameter token"},
		{"unknown hint", bearer, `{"token":"x","token_type_hint":"id_token"}`, "invalid_request", "Invalid parameter token_type_hint"},
	} {
		status, _, m := cscCall(t, base, "auth/revoke", tc.auth, tc.body)
		wantCSCError(t, tc.name, status, m, 400, tc.code, tc.desc)
	}
	status, _, m = cscCall(t, base, "auth/revoke", "", `{"token":"x"}`)
	wantCSCError(t, "revoke without a bearer", status, m, 401, "invalid_token", "Missing access token")

	// A TOTP user: enrolled through the running daemon's admin socket.
	e.must("bob's long password\n", "user", "add", "bob", "--password-file", "-")
	var en struct{ Secret, URI string }
	if err := json.Unmarshal([]byte(e.must("", "--json", "user", "totp", "enroll", "bob")), &en); err != nil || en.Secret == "" {
		t.Fatalf("totp enroll --json: %v %+v", err, en)
	}
	status, _, m = cscCall(t, base, "auth/login", basic("bob", "bob's long password"), "")
	wantCSCError(t, "TOTP user", status, m, 401, "authentication_error", "Invalid username or password")
	status, _, m = cscCall(t, base, "auth/login", basic("bob", "wrong password"), "")
	wantCSCError(t, "TOTP user, wrong password", status, m, 401, "authentication_error", "Invalid username or password")

	// A flood of wrong passwords at once: exactly max_failures count.
	const n = 12
	var wg sync.WaitGroup
	statuses := make([]int, n)
	for i := range n {
		wg.Go(func() {
			statuses[i], _, _ = cscCall(t, base, "auth/login", basic("alice", fmt.Sprintf("wrong-%d", i)), "")
		})
	}
	wg.Wait()
	for i, st := range statuses {
		if st != 401 {
			t.Errorf("wrong password %d: %d", i, st)
		}
	}
	status, _, m = cscCall(t, base, "auth/login", alice, "")
	wantCSCError(t, "right password after the flood", status, m, 401, "authentication_error", "Invalid username or password")
	var u struct {
		FailedPasswords int  `json:"failed_passwords"`
		PasswordLocked  bool `json:"password_locked"`
	}
	if err := json.Unmarshal([]byte(e.must("", "--json", "user", "show", "alice")), &u); err != nil {
		t.Fatal(err)
	}
	if u.FailedPasswords != 3 || !u.PasswordLocked {
		t.Errorf("after %d wrong passwords at once: %d failures, locked %v; want 3, true", n, u.FailedPasswords, u.PasswordLocked)
	}
	// The lock holds for the login page too.
	conf, _ := journeyClient(base)
	conf.Scopes = []string{"service"}
	b := oauthtest.NewBrowser(nil)
	s, err := b.Get(conf.AuthCodeURL("st"))
	if err != nil || s.Form == nil {
		t.Fatal(err)
	}
	if s, err = b.Submit(s.Form, map[string]string{"username": "alice", "password": journeyPassword}, "approve"); err != nil ||
		s.Form == nil || !s.Form.Has("password") {
		t.Errorf("the login page after the auth/login lock let alice in")
	}
}

// TestAuthLoginOff: by default auth/login answers 501 and info lists
// neither it nor authType basic; auth/revoke is served.
func TestAuthLoginOff(t *testing.T) {
	e := newEnv(t, "")
	_, base, _ := startJourney(t, e)
	status, _, m := cscCall(t, base, "auth/login", basic("alice", journeyPassword), `{"rememberMe":true}`)
	wantCSCError(t, "auth/login off", status, m, 501, "not_implemented", "Method auth/login is not implemented by this service (see info methods)")
	_, _, info := cscCall(t, base, "info", "", "{}")
	if fmt.Sprint(info["methods"]) != "[info credentials/list credentials/info credentials/authorize credentials/extendTransaction credentials/sendOTP signatures/signHash auth/revoke]" ||
		fmt.Sprint(info["authType"]) != "[oauth2code]" {
		t.Errorf("info with auth_login off: %v", info)
	}
}

// TestTOTPEnrollCLI: `signd user totp enroll` prints an otpauth URI and a
// QR code, stores the secret (the login page then asks for the code, and
// a code is accepted once), refuses a second enrollment, and `totp remove`
// removes it.
func TestTOTPEnrollCLI(t *testing.T) {
	e := newEnv(t, "")
	e.must("a long password\n", "user", "add", "carol", "--password-file", "-")
	out := e.must("", "user", "totp", "enroll", "carol", "--issuer", "Example Sign")
	if !strings.Contains(out, "otpauth://totp/Example%20Sign:carol?") || !strings.Contains(out, "█") {
		t.Fatalf("enroll output has no URI or QR code:\n%s", out)
	}
	var secret string
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, "secret:   "); ok {
			secret = v
		}
	}
	code, err := totp.GenerateCode(secret, time.Now())
	if err != nil || secret == "" {
		t.Fatalf("secret %q: %v", secret, err)
	}
	if _, errOut, err := e.run("", "user", "totp", "enroll", "carol"); err == nil || !strings.Contains(err.Error()+errOut, `user "carol" has TOTP already`) {
		t.Errorf("second enroll: %v %s", err, errOut)
	}
	for _, bad := range []string{"a:b", strings.Repeat("x", 65)} {
		if _, errOut, err := e.run("", "user", "totp", "enroll", "carol", "--issuer", bad); err == nil || !strings.Contains(err.Error()+errOut, "issuer") {
			t.Errorf("issuer %q: %v %s", bad, err, errOut)
		}
	}
	if _, errOut, err := e.run("", "user", "totp", "enroll", "nobody"); err == nil || !strings.Contains(err.Error()+errOut, "not found") {
		t.Errorf("enroll of an unknown user: %v %s", err, errOut)
	}
	if out := e.must("", "user", "show", "carol"); !strings.Contains(out, "TOTP:            yes") {
		t.Errorf("user show after enroll:\n%s", out)
	}

	// The login page asks for it; a code works once.
	clientSecret := filepath.Join(e.dir, "s.txt")
	os.WriteFile(clientSecret, []byte(journeySecret+"\n"), 0o600)
	e.must("", "client", "add", "rp", "--redirect-uri", "https://rp.example/cb", "--secret-file", clientSecret, "--scope", "service")
	addr, _ := e.startDaemon()
	conf, _ := journeyClient("http://" + addr)
	conf.Scopes = []string{"service"}
	login := func(otp string) bool {
		b := oauthtest.NewBrowser(nil)
		s, err := b.Get(conf.AuthCodeURL("st"))
		if err != nil || s.Form == nil {
			t.Fatal(err)
		}
		s, err = b.Submit(s.Form, map[string]string{"username": "carol", "password": "a long password", "otp": otp}, "approve")
		if err != nil {
			t.Fatal(err)
		}
		return s.Form != nil && !s.Form.Has("password")
	}
	if !login(code) {
		t.Fatal("the enrolled code was refused")
	}
	if login(code) {
		t.Error("the same code was accepted twice")
	}

	e.must("", "user", "totp", "remove", "carol")
	if login("") != true {
		t.Error("after totp remove the password alone does not log in")
	}
	if _, errOut, err := e.run("", "user", "totp", "remove", "carol"); err == nil || !strings.Contains(err.Error()+errOut, "has no TOTP") {
		t.Errorf("second remove: %v %s", err, errOut)
	}
}

// TestAuthLoginClientMissing: a csc.auth_login_client that is not
// registered is warned about at startup, and auth/login answers
// server_error (a configuration fault, not the caller's) without issuing
// anything.
func TestAuthLoginClientMissing(t *testing.T) {
	e := newEnv(t, "csc:\n  auth_login: true\n  auth_login_client: nobody\n")
	e.must("a long password\n", "user", "add", "alice", "--password-file", "-")
	addr, logs := e.daemon()
	status, _, m := cscCall(t, "http://"+addr, "auth/login", basic("alice", "a long password"), "")
	wantCSCError(t, "missing client", status, m, 500, "server_error", "Internal error")
	if !strings.Contains(logs.String(), "csc.auth_login_client cannot receive tokens") {
		t.Errorf("no startup warning in the log:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), "a long password") {
		t.Error("the log holds the password")
	}
}
