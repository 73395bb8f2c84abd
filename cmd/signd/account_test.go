package main

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/signd/signd/oauth/oauthtest"
	"github.com/signd/signd/store"
)

// browserHeaders are what Chromium sends with signd's own form (the
// origin of server.base_url, which newEnv sets to http://127.0.0.1:8443).
func browserHeaders() http.Header {
	return http.Header{
		"Origin":         {"http://127.0.0.1:8443"},
		"Sec-Fetch-Site": {"same-origin"},
		"Sec-Fetch-Mode": {"navigate"},
		"Sec-Fetch-Dest": {"document"},
		"Sec-Fetch-User": {"?1"},
	}
}

func crossSiteHeaders() http.Header {
	h := browserHeaders()
	h.Set("Origin", "https://evil.example")
	h.Set("Sec-Fetch-Site", "cross-site")
	return h
}

func postPage(t *testing.T, b *oauthtest.Browser, u string, v url.Values, h http.Header) *oauthtest.Step {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(v.Encode()))
	for k, vs := range h {
		req.Header[k] = vs
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	s, err := b.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestAccountPageDaemon: alice disables her credential on the account
// page of the real daemon (real router, bbolt file, SoftHSM2 key) after
// forged posts failed; signHash then refuses with the CSC error and the
// SAD issued before is gone. The admin enables it again with the CLI and
// it signs; after the admin disables it, the page cannot enable it.
func TestAccountPageDaemon(t *testing.T) {
	e := newEnv(t, "")
	cred := journeyAlice(t, e)
	d := sha256.Sum256([]byte("account page"))
	bearer := e.mint(store.TokenAccess, "alice", "rp", "")
	sad1 := e.mint(store.TokenSAD, "alice", "rp", cred, d[:])
	addr, _ := e.startDaemon()
	base := "http://" + addr
	sign := func(sad string) (int, map[string]any) {
		return postJSON(t, base+"/csc/v1/signatures/signHash", bearer, `{"credentialID":"`+cred+`","SAD":"`+sad+
			`","hash":["`+base64.StdEncoding.EncodeToString(d[:])+`"],"signAlgo":"1.2.840.113549.1.1.11"}`)
	}

	b := oauthtest.NewBrowser(nil)
	s, err := b.Get(base + "/oauth2/account?lang=en")
	if err != nil || s.Form == nil || s.Form.Action.Path != "/oauth2/account/login" {
		t.Fatalf("account login page: %v %+v", err, s)
	}
	s = postPage(t, b, s.Form.Action.String(), s.Form.Values(map[string]string{"username": "alice", "password": journeyPassword}), browserHeaders())
	if s.Status != http.StatusSeeOther {
		t.Fatalf("login: %d %s", s.Status, oauthtest.Text(s.Body))
	}
	page := func() *oauthtest.Step {
		s, err := b.Get(base + "/oauth2/account?lang=en")
		if err != nil || s.Status != 200 {
			t.Fatalf("account page: %v %+v", err, s)
		}
		return s
	}
	s = page()
	if text := oauthtest.Text(s.Body); !strings.Contains(text, cred) || !strings.Contains(text, "CN=Alice Jansen") || !strings.Contains(text, "Disable") {
		t.Fatalf("account page: %s", text)
	}
	csrf := s.Form.Fields.Get("csrf_token")
	form := func(decision string) url.Values {
		return url.Values{"csrf_token": {csrf}, "credential": {cred}, "decision": {decision}, "lang": {"en"}}
	}

	// Forged posts change nothing.
	if s := postPage(t, b, base+"/oauth2/account", form("disable"), crossSiteHeaders()); s.Status != http.StatusForbidden {
		t.Errorf("cross-site post: %d", s.Status)
	}
	noToken := form("disable")
	noToken.Del("csrf_token")
	if s := postPage(t, b, base+"/oauth2/account", noToken, browserHeaders()); s.Status != http.StatusBadRequest {
		t.Errorf("post without CSRF token: %d", s.Status)
	}
	if k, _ := keyAndCert(t, base+"/csc/v1/", bearer, cred); k != "enabled" {
		t.Fatalf("a forged post disabled the key: %s", k)
	}

	// The owner disables it.
	if s := postPage(t, b, base+"/oauth2/account", form("disable"), browserHeaders()); s.Status != http.StatusSeeOther {
		t.Fatalf("disable: %d %s", s.Status, oauthtest.Text(s.Body))
	}
	if k, c := keyAndCert(t, base+"/csc/v1/", bearer, cred); k != "disabled" || c != "valid" {
		t.Errorf("credentials/info after disable: key %s cert %s", k, c)
	}
	if status, res := sign(sad1); status != 400 || res["error_description"] != "The credential identified by credentialID is disabled" {
		t.Errorf("signHash on the disabled key: %d %v", status, res)
	}
	wantDisabledBy(t, e, cred, "owner")

	// The admin enables it; the SAD issued before the disable was revoked.
	e.must("", "credential", "enable", cred)
	if k, _ := keyAndCert(t, base+"/csc/v1/", bearer, cred); k != "enabled" {
		t.Errorf("after the admin's enable: key %s", k)
	}
	wantDisabledBy(t, e, cred, "")
	if status, res := sign(sad1); status != 400 || res["error_description"] != "Invalid parameter SAD" {
		t.Errorf("the SAD from before the disable: %d %v", status, res)
	}

	// What the admin disabled, the owner cannot enable.
	e.must("", "credential", "disable", cred)
	wantDisabledBy(t, e, cred, "admin")
	s = page()
	if text := oauthtest.Text(s.Body); !strings.Contains(text, "disabled by the administrator") || strings.Contains(text, "Re-enable") {
		t.Errorf("page after the admin's disable: %s", text)
	}
	if s := postPage(t, b, base+"/oauth2/account", form("enable"), browserHeaders()); s.Status != 200 || !strings.Contains(oauthtest.Text(s.Body), "This key cannot be changed by you.") {
		t.Errorf("owner enabling the admin's disable: %d %s", s.Status, oauthtest.Text(s.Body))
	}
	if k, _ := keyAndCert(t, base+"/csc/v1/", bearer, cred); k != "disabled" {
		t.Errorf("key %s after the refused enable", k)
	}
}

// wantDisabledBy checks who `signd credential show` (text and --json)
// says disabled cred: "admin", "owner", or "" for a credential that is
// not disabled.
func wantDisabledBy(t *testing.T, e *env, cred, by string) {
	t.Helper()
	line := ""
	if by != "" {
		line = "disabled:   by " + by + "\n"
	}
	text := e.must("", "credential", "show", cred)
	if got := regexp.MustCompile(`(?m)^disabled:.*\n`).FindString(text); got != line || !strings.Contains(text, "auth mode:  oauth2code (multisign 1)\n") {
		t.Errorf("credential show:\n%s\nwant the line %q", text, line)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(e.must("", "--json", "credential", "show", cred)), &v); err != nil {
		t.Fatal(err)
	}
	if got, has := v["disabled_by"]; by == "" && has || by != "" && got != by || v["multisign"] != 1.0 || v["auth_mode"] != "oauth2code" {
		t.Errorf("credential show --json: %v, want disabled_by %q", v, by)
	}
}

// TestAccountLogoutDaemon: on the real daemon (router, bbolt file), a GET
// and a cross-site post do not sign alice out; her page's Sign out does:
// the cookie is expired, and the cookie copied before opens neither the
// account page nor an authorization request without the login form.
func TestAccountLogoutDaemon(t *testing.T) {
	e := newEnv(t, "")
	journeyAlice(t, e)
	addr, _ := e.startDaemon()
	base := "http://" + addr

	b := oauthtest.NewBrowser(nil)
	s, err := b.Get(base + "/oauth2/account?lang=nl")
	if err != nil || s.Form == nil || s.Form.Action.Path != "/oauth2/account/login" {
		t.Fatalf("account login page: %v %+v", err, s)
	}
	s = postPage(t, b, s.Form.Action.String(), s.Form.Values(map[string]string{"username": "alice", "password": journeyPassword}), browserHeaders())
	if s.Status != http.StatusSeeOther {
		t.Fatalf("login: %d %s", s.Status, oauthtest.Text(s.Body))
	}
	u, _ := url.Parse(base + "/oauth2/")
	var session *http.Cookie
	for _, ck := range b.HTTP.Jar.Cookies(u) {
		if ck.Name == "signd_session" {
			session = ck
		}
	}
	if session == nil {
		t.Fatal("no session cookie after the login")
	}
	page := func(b *oauthtest.Browser) *oauthtest.Step {
		t.Helper()
		s, err := b.Get(base + "/oauth2/account?lang=nl")
		if err != nil || s.Status != http.StatusOK || s.Form == nil {
			t.Fatalf("account page: %v %+v", err, s)
		}
		return s
	}
	s = page(b)
	if s.Form.Action.Path != "/oauth2/account/logout" || !strings.Contains(oauthtest.Text(s.Body), "Uitloggen") {
		t.Fatalf("the signed-in page has no logout form: %s", oauthtest.Text(s.Body))
	}
	logout := s.Form

	// A GET is not a logout (405, as the daemon answers a wrong method);
	// nor is a post from another site.
	if s, err := b.Get(base + "/oauth2/account/logout?lang=nl&csrf_token=" + url.QueryEscape(logout.Fields.Get("csrf_token"))); err != nil || s.Status != http.StatusMethodNotAllowed {
		t.Errorf("GET logout: %v %+v", err, s)
	}
	if s := postPage(t, b, logout.Action.String(), logout.Values(nil), crossSiteHeaders()); s.Status != http.StatusForbidden {
		t.Errorf("cross-site logout: %d", s.Status)
	}
	if s := page(b); s.Form.Action.Path != "/oauth2/account/logout" {
		t.Fatalf("signed out by a refused logout: %s", oauthtest.Text(s.Body))
	}

	s = postPage(t, b, logout.Action.String(), logout.Values(nil), browserHeaders())
	if s.Status != http.StatusSeeOther || s.Location.Path != "/oauth2/account" || s.Location.Query().Get("lang") != "nl" {
		t.Fatalf("logout: %d %v %s", s.Status, s.Location, oauthtest.Text(s.Body))
	}
	if got := strings.Join(s.Header.Values("Set-Cookie"), "\n"); !strings.Contains(got, "signd_session=; Path=/oauth2/; Max-Age=0; HttpOnly; SameSite=Lax") {
		t.Errorf("logout's Set-Cookie %q", got)
	}
	for _, b := range []*oauthtest.Browser{b, replay(u, session)} {
		if s := page(b); s.Form.Action.Path != "/oauth2/account/login" || !s.Form.Has("password") {
			t.Errorf("account page after the logout: %s", oauthtest.Text(s.Body))
		}
	}
	conf, _ := journeyClient(base)
	conf.Scopes = []string{"service"}
	s, err = replay(u, session).Get(conf.AuthCodeURL("st"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Redirected() || s.Form == nil || !s.Form.Has("password") {
		t.Errorf("authorize with the old session cookie: %d %v %.300s", s.Status, s.Location, oauthtest.Text(s.Body))
	}
}

// replay is a fresh browser holding only cookie ck for u.
func replay(u *url.URL, ck *http.Cookie) *oauthtest.Browser {
	b := oauthtest.NewBrowser(nil)
	b.HTTP.Jar.SetCookies(u, []*http.Cookie{{Name: ck.Name, Value: ck.Value, Path: "/oauth2/"}})
	return b
}
