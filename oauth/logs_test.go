package oauth_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestNoSecretsInLogs captures the log of full flows, failures included,
// and searches it for every secret that crossed the server.
func TestNoSecretsInLogs(t *testing.T) {
	ev := newEnv(t)
	const wrongPassword, wrongPIN = "Wr0ng-Secret-Passw0rd", "424242"
	secrets := map[string]string{
		"password": alicePassword, "wrong password": wrongPassword, "PIN": alicePIN,
		"wrong PIN": wrongPIN, "client secret": rpSecret, "other client secret": rp2Secret,
	}

	// Service flow with a wrong password first.
	b := ev.browser()
	s := page(t, ev.must(b.Get(ev.authorizeURL(serviceParams()))))
	secrets["request handle"] = s.Form.Fields.Get("request")
	secrets["CSRF token"] = s.Form.Fields.Get("csrf_token")
	s = ev.must(b.Submit(s.Form, map[string]string{"username": "alice", "password": wrongPassword}, "approve"))
	s = ev.login(b, s, "alice", alicePassword)
	for _, ck := range b.HTTP.Jar.Cookies(mustURL(ev.ts.URL + "/oauth2/")) {
		secrets["cookie "+ck.Name] = ck.Value // the session and the browser binding
	}
	for _, name := range []string{"signd_session", "signd_flow"} {
		if secrets["cookie "+name] == "" {
			t.Fatalf("the browser holds no %s cookie", name)
		}
	}
	// Refused posts log warnings: from another browser, from another site.
	other := ev.browser()
	refusedPage := page(t, ev.must(b.Get(ev.authorizeURL(serviceParams()))))
	ev.must(other.Submit(refusedPage.Form, map[string]string{"username": "alice", "password": alicePassword}, "approve"))
	ev.submitWith(b, refusedPage.Form, map[string]string{"username": "alice", "password": alicePassword}, "approve", chromiumCrossSite())
	code := ev.codeOf(ev.approve(b, s, ""), rpRedirect, "state-123")
	secrets["code"] = code
	_, body := ev.tokenRequest(tokenForm(code), "rp", rpSecret)
	secrets["access token"] = body["access_token"].(string)
	ev.tokenRequest(tokenForm(code), "rp", rpSecret) // reuse: revokes
	ev.tokenRequest(tokenForm(code), "rp2", rp2Secret)

	// Credential flow with a wrong PIN first.
	b = ev.browser()
	s = ev.login(b, page(t, ev.must(b.Get(ev.authorizeURL(credentialParams(credAlice))))), "alice", alicePassword)
	s = page(t, ev.approve(b, s, wrongPIN))
	code = ev.codeOf(ev.approve(b, s, alicePIN), rpRedirect, "state-123")
	secrets["credential code"] = code
	_, body = ev.tokenRequest(tokenForm(code, "client_id", "rp", "client_secret", rpSecret), "", "")
	secrets["SAD"] = body["access_token"].(string)
	ev.post("/oauth2/revoke", url.Values{"token": {secrets["SAD"]}}, "rp", rpSecret)
	// Wrong client secrets.
	ev.tokenRequest(tokenForm("x"), "rp", rp2Secret)
	ev.tokenRequest(tokenForm("x", "client_id", "rp", "client_secret", rp2Secret), "", "")

	logs := ev.logs.String()
	if !strings.Contains(logs, "token issued") || !strings.Contains(logs, "login failed") ||
		!strings.Contains(logs, "not the browser the request is bound to") || !strings.Contains(logs, "posted from another site") {
		t.Fatalf("the log does not show the flows:\n%s", logs)
	}
	for what, secret := range secrets {
		if secret == "" {
			t.Errorf("no %s captured", what)
			continue
		}
		if strings.Contains(logs, secret) {
			t.Errorf("the log contains the %s", what)
		}
	}
	if resp, _ := ev.tokenRequest(tokenForm("x"), "rp", rpSecret); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("status %d", resp.StatusCode)
	}
}

func mustURL(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic(err)
	}
	return u
}
