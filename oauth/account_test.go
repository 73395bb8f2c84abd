package oauth_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/signd/signd/oauth"
	"github.com/signd/signd/oauth/browser"
	"github.com/signd/signd/oauth/oauthtest"
	"github.com/signd/signd/store"
)

// newAccountEnv is newEnv with the account page over csc.Account.
func newAccountEnv(t *testing.T, mods ...func(*oauth.Config)) *env {
	t.Helper()
	return buildEnvWith(t, memoryStore(t), false, envOptions{account: true}, mods...)
}

// accountPost posts form values to path with headers h (nil: none).
func (ev *env) accountPost(b *oauthtest.Browser, path string, v url.Values, h http.Header) *oauthtest.Step {
	ev.t.Helper()
	return ev.postForm(b, ev.ts.URL+path, v, h)
}

// refusedPost is a form post of the account page that a test expects
// refused: through which browser, with which values and extra headers,
// and the status and text of the answer.
type refusedPost struct {
	name       string
	browser    *oauthtest.Browser
	form       url.Values
	h          http.Header
	wantStatus int
	wantText   string
}

// accountLogin signs username in on the account page and returns the
// page's CSRF token.
func (ev *env) accountLogin(b *oauthtest.Browser, username, password, lang string) string {
	ev.t.Helper()
	s := ev.must(b.Get(ev.ts.URL + "/oauth2/account?lang=" + lang))
	if s.Form == nil || !s.Form.Has("password") || s.Form.Action.Path != "/oauth2/account/login" {
		ev.t.Fatalf("want the account login form, got %d: %.300s", s.Status, oauthtest.Text(s.Body))
	}
	v := s.Form.Values(map[string]string{"username": username, "password": password})
	s = ev.accountPost(b, "/oauth2/account/login", v, chromiumSameOrigin())
	if s.Status != http.StatusSeeOther || s.Location.Path != "/oauth2/account" || s.Location.Query().Get("lang") != lang {
		ev.t.Fatalf("account login: %d %v: %.300s", s.Status, s.Location, oauthtest.Text(s.Body))
	}
	s = ev.must(b.Get(s.Location.String()))
	if s.Status != http.StatusOK || s.Form == nil || s.Form.Fields.Get("csrf_token") == "" {
		ev.t.Fatalf("account page: %d: %.300s", s.Status, oauthtest.Text(s.Body))
	}
	return s.Form.Fields.Get("csrf_token")
}

func (ev *env) credential(id string) *store.Credential {
	ev.t.Helper()
	var c *store.Credential
	ev.update(func(tx store.Tx) (err error) { c, err = tx.Credential(id); return err })
	return c
}

// TestAccountPage: alice signs in (the flows' password login), sees her
// credentials (not dave's), disables one — which revokes its SAD like the
// admin's disable — and enables it again; one disabled by an administrator
// has no button and cannot be enabled by her.
func TestAccountPage(t *testing.T) {
	ev := newAccountEnv(t)
	sad := "sad-value-for-the-account-test-0123456789"
	ev.update(func(tx store.Tx) error {
		return tx.CreateToken(&store.Token{Hash: store.Fingerprint(sad), Kind: store.TokenSAD, ClientID: "rp", Username: "alice",
			Scopes: []string{"credential"}, CredentialID: credAlice, Hashes: [][]byte{make([]byte, 32)}, ExpiresAt: ev.clock.Now().Add(time.Minute)})
	})
	b := ev.browser()
	csrf := ev.accountLogin(b, "alice", alicePassword, "en")

	s := ev.must(b.Get(ev.ts.URL + "/oauth2/account?lang=en"))
	text := oauthtest.Text(s.Body)
	for _, want := range []string{"My signing keys", credAlice, credDisabled, credPending, "disabled by the administrator", "waiting for a certificate"} {
		if !strings.Contains(text, want) {
			t.Errorf("account page lacks %q: %s", want, text)
		}
	}
	if strings.Contains(text, credDave) {
		t.Errorf("account page shows dave's credential: %s", text)
	}
	if csp := s.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "form-action 'self'") || strings.Contains(csp, "script-src") {
		t.Errorf("CSP %q", csp)
	}
	if s.Header.Get("Content-Language") != "en" || s.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("headers %v", s.Header)
	}
	if nl := oauthtest.Text(ev.must(b.Get(ev.ts.URL + "/oauth2/account")).Body); !strings.Contains(nl, "Mijn ondertekeningssleutels") {
		t.Errorf("the Dutch page: %s", nl)
	}

	post := func(id, decision string) *oauthtest.Step {
		return ev.accountPost(b, "/oauth2/account", url.Values{"csrf_token": {csrf}, "credential": {id}, "decision": {decision}, "lang": {"en"}}, chromiumSameOrigin())
	}
	if s := post(credAlice, "disable"); s.Status != http.StatusSeeOther || s.Location.Path != "/oauth2/account" {
		t.Fatalf("disable: %d %v %.300s", s.Status, s.Location, oauthtest.Text(s.Body))
	}
	if c := ev.credential(credAlice); c.Status != store.CredentialDisabled || c.DisabledBy != store.DisabledByOwner {
		t.Fatalf("after disable: %s by %q", c.Status, c.DisabledBy)
	}
	ev.update(func(tx store.Tx) error {
		if _, err := tx.Token(store.Fingerprint(sad)); err == nil {
			t.Error("the credential's SAD survived its disabling")
		}
		return nil
	})
	if text := oauthtest.Text(ev.must(b.Get(ev.ts.URL + "/oauth2/account?lang=en")).Body); !strings.Contains(text, "disabled by you") || !strings.Contains(text, "Re-enable") {
		t.Errorf("page after disable: %s", text)
	}
	if s := post(credAlice, "enable"); s.Status != http.StatusSeeOther {
		t.Fatalf("enable: %d %.300s", s.Status, oauthtest.Text(s.Body))
	}
	if c := ev.credential(credAlice); c.Status != store.CredentialEnabled || c.DisabledBy != "" {
		t.Fatalf("after enable: %s by %q", c.Status, c.DisabledBy)
	}
	// The audit log has both, by the owner.
	ev.update(func(tx store.Tx) error {
		var kinds []string
		err := store.AuditEntries(tx, 0, func(e *store.AuditEntry) error {
			if e.Credential == credAlice {
				kinds = append(kinds, string(e.Kind)+":"+e.Reason)
			}
			return nil
		})
		if err != nil {
			return err
		}
		want := "credential_disabled:by the owner; revoked 1 SADs, 0 codes, 0 pending requests|credential_enabled:by the owner"
		if strings.Join(kinds, "|") != want {
			t.Errorf("audit %q, want %q", kinds, want)
		}
		return nil
	})
}

// TestAccountPageRefusals: every form post that is not alice's own, from
// her own page, changes nothing.
func TestAccountPageRefusals(t *testing.T) {
	ev := newAccountEnv(t)
	b := ev.browser()
	csrf := ev.accountLogin(b, "alice", alicePassword, "en")
	good := func() url.Values {
		return url.Values{"csrf_token": {csrf}, "credential": {credAlice}, "decision": {"disable"}, "lang": {"en"}}
	}
	edit := func(f func(v url.Values)) url.Values { v := good(); f(v); return v }
	tests := []refusedPost{
		{"cross-site Origin", b, good(), chromiumCrossSite(), http.StatusForbidden, "sent from another website"},
		{"foreign Origin, no Fetch Metadata", b, good(), http.Header{"Origin": {"https://evil.example"}}, http.StatusForbidden, "sent from another website"},
		{"null Origin", b, good(), http.Header{"Origin": {"null"}}, http.StatusForbidden, "sent from another website"},
		{"missing CSRF token", b, edit(func(v url.Values) { v.Del("csrf_token") }), chromiumSameOrigin(), http.StatusBadRequest, "The form has expired or is invalid."},
		{"wrong CSRF token", b, edit(func(v url.Values) { v.Set("csrf_token", csrf[:len(csrf)-2]+"AA") }), chromiumSameOrigin(), http.StatusBadRequest, "The form has expired or is invalid."},
		{"CSRF token twice", b, edit(func(v url.Values) { v.Add("csrf_token", csrf) }), chromiumSameOrigin(), http.StatusBadRequest, "The request is invalid."},
		{"credential twice", b, edit(func(v url.Values) { v.Add("credential", credDave) }), chromiumSameOrigin(), http.StatusBadRequest, "The request is invalid."},
		{"no credential", b, edit(func(v url.Values) { v.Del("credential") }), chromiumSameOrigin(), http.StatusBadRequest, "The request is invalid."},
		{"unknown decision", b, edit(func(v url.Values) { v.Set("decision", "remove") }), chromiumSameOrigin(), http.StatusBadRequest, "The request is invalid."},
		{"someone else's credential", b, edit(func(v url.Values) { v.Set("credential", credDave) }), chromiumSameOrigin(), http.StatusOK, "This key cannot be changed by you."},
		{"unknown credential", b, edit(func(v url.Values) { v.Set("credential", "nope\x00<script>") }), chromiumSameOrigin(), http.StatusOK, "This key cannot be changed by you."},
		{"enable what an admin disabled", b, edit(func(v url.Values) { v.Set("credential", credDisabled); v.Set("decision", "enable") }), chromiumSameOrigin(), http.StatusOK, "This key cannot be changed by you."},
		{"oversized credential ID", b, edit(func(v url.Values) { v.Set("credential", strings.Repeat("c", 20000)) }), chromiumSameOrigin(), http.StatusOK, "This key cannot be changed by you."},
		{"pending credential", b, edit(func(v url.Values) { v.Set("credential", credPending) }), chromiumSameOrigin(), http.StatusOK, "This key cannot be changed by you."},
		{"no session (another browser with alice's token)", ev.browser(), good(), chromiumSameOrigin(), http.StatusSeeOther, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := ev.accountPost(tt.browser, "/oauth2/account", tt.form, tt.h)
			if s.Status != tt.wantStatus || !strings.Contains(oauthtest.Text(s.Body), tt.wantText) {
				t.Errorf("%d %.300s, want %d %q", s.Status, oauthtest.Text(s.Body), tt.wantStatus, tt.wantText)
			}
			if tt.wantStatus == http.StatusSeeOther && s.Location.Path != "/oauth2/account" {
				t.Errorf("redirect to %v", s.Location)
			}
			for _, id := range []string{credAlice, credDave} {
				if c := ev.credential(id); c.Status != store.CredentialEnabled {
					t.Fatalf("%s is %s", id, c.Status)
				}
			}
			if c := ev.credential(credDisabled); c.Status != store.CredentialDisabled {
				t.Fatalf("%s is %s", credDisabled, c.Status)
			}
		})
	}
}

// TestAccountLoginRefusals: the login form needs its CSRF cookie and
// field, refuses cross-site posts, and a wrong password counts towards
// the lockout like the flows' login.
func TestAccountLoginRefusals(t *testing.T) {
	ev := newAccountEnv(t)
	b := ev.browser()
	s := ev.must(b.Get(ev.ts.URL + "/oauth2/account?lang=en"))
	good := s.Form.Values(map[string]string{"username": "alice", "password": alicePassword})
	edit := func(f func(v url.Values)) url.Values {
		v := url.Values{}
		for k, vs := range good {
			v[k] = append([]string(nil), vs...)
		}
		f(v)
		return v
	}
	for _, tt := range []refusedPost{
		{"cross-site", b, good, chromiumCrossSite(), http.StatusForbidden, "sent from another website"},
		{"missing CSRF field", b, edit(func(v url.Values) { v.Del("csrf_token") }), chromiumSameOrigin(), http.StatusBadRequest, "The form has expired or is invalid."},
		{"missing CSRF cookie (another browser)", ev.browser(), good, chromiumSameOrigin(), http.StatusBadRequest, "The form has expired or is invalid."},
		{"password twice", b, edit(func(v url.Values) { v.Add("password", "x") }), chromiumSameOrigin(), http.StatusBadRequest, "The request is invalid."},
		{"wrong password", b, edit(func(v url.Values) { v.Set("password", "wrong") }), chromiumSameOrigin(), http.StatusOK, "The sign-in details are wrong"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := ev.accountPost(tt.browser, "/oauth2/account/login", tt.form, tt.h)
			if s.Status != tt.wantStatus || !strings.Contains(oauthtest.Text(s.Body), tt.wantText) {
				t.Errorf("%d %.300s, want %d %q", s.Status, oauthtest.Text(s.Body), tt.wantStatus, tt.wantText)
			}
			for _, ck := range s.Header.Values("Set-Cookie") {
				if strings.HasPrefix(ck, ev.session+"=") {
					t.Errorf("a refused login set a session: %q", ck)
				}
			}
		})
	}
	if u := ev.user("alice"); u.FailedPasswords != 1 {
		t.Errorf("FailedPasswords = %d, want 1 (only the wrong password counts)", u.FailedPasswords)
	}
}

// sessionValue is the login session cookie browser b holds for the test
// server ("" if none).
func (ev *env) sessionValue(b *oauthtest.Browser) string {
	ev.t.Helper()
	u, err := url.Parse(ev.ts.URL + "/oauth2/account")
	if err != nil {
		ev.t.Fatal(err)
	}
	for _, ck := range b.HTTP.Jar.Cookies(u) {
		if ck.Name == ev.session {
			return ck.Value
		}
	}
	return ""
}

// sessionStored reports whether the login session of cookie value exists
// in the store.
func (ev *env) sessionStored(value string) bool {
	ev.t.Helper()
	found := false
	ev.update(func(tx store.Tx) error {
		_, err := tx.Session(store.Fingerprint(value))
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		found = err == nil
		return nil
	})
	return found
}

// replaySession is a fresh browser that holds only the session cookie
// value (a copy taken from another browser).
func (ev *env) replaySession(value string) *oauthtest.Browser {
	ev.t.Helper()
	b := ev.browser()
	u, err := url.Parse(ev.ts.URL + "/oauth2/")
	if err != nil {
		ev.t.Fatal(err)
	}
	b.HTTP.Jar.SetCookies(u, []*http.Cookie{{Name: ev.session, Value: value, Path: ev.sessionPath, Secure: ev.sessionPath == "/"}})
	return b
}

// wantAccountLogin requires s to be the account page's login form in lang.
func wantAccountLogin(t *testing.T, s *oauthtest.Step, lang string) {
	t.Helper()
	want := map[string]string{"en": "Sign in to see your signing keys", "nl": "Log in om uw ondertekeningssleutels"}[lang]
	if s.Status != http.StatusOK || s.Form == nil || s.Form.Action.Path != "/oauth2/account/login" || !s.Form.Has("password") ||
		!strings.Contains(oauthtest.Text(s.Body), want) || s.Header.Get("Content-Language") != lang {
		t.Fatalf("want the account login form in %s, got %d: %.300s", lang, s.Status, oauthtest.Text(s.Body))
	}
}

// TestAccountLogout: alice signs out on the account page (in both
// languages, with Secure cookies and without): the session record is
// deleted, the cookie expired with the attributes it was set with, and
// the page shows the login form in her language. Her old cookie, replayed,
// opened the page before the logout; afterwards it opens neither the
// account page nor an authorization request without a login.
func TestAccountLogout(t *testing.T) {
	for _, tt := range []struct {
		lang   string
		secure bool
	}{{"en", false}, {"nl", false}, {"en", true}} {
		t.Run(fmt.Sprintf("%s-secure=%v", tt.lang, tt.secure), func(t *testing.T) {
			ev := buildEnvWith(t, memoryStore(t), false, envOptions{account: true, browser: func(c *browser.Config) { c.SecureCookies = tt.secure }})
			b := ev.browser()
			s := ev.must(b.Get(ev.ts.URL + "/oauth2/account?lang=" + tt.lang))
			s = ev.accountPost(b, "/oauth2/account/login", s.Form.Values(map[string]string{"username": "alice", "password": alicePassword}), chromiumSameOrigin())
			set := ev.sessionSetCookie(s)
			value := ev.sessionValue(b)
			if s.Status != http.StatusSeeOther || set == nil || value == "" || set.Value != value {
				t.Fatalf("login: %d, session cookie %v", s.Status, set)
			}
			s = ev.must(b.Get(s.Location.String()))
			logout := s.Form
			if logout == nil || logout.Action.Path != "/oauth2/account/logout" || logout.Fields.Get("lang") != tt.lang ||
				!strings.Contains(oauthtest.Text(s.Body), map[string]string{"en": "Sign out", "nl": "Uitloggen"}[tt.lang]) {
				t.Fatalf("the signed-in page has no logout form: %.500s", s.Body)
			}
			// The replayed cookie is a login session before the logout.
			if s := ev.must(ev.replaySession(value).Get(ev.ts.URL + "/oauth2/account?lang=en")); !strings.Contains(oauthtest.Text(s.Body), "You are signed in as") {
				t.Fatalf("the replayed cookie before the logout: %d %.300s", s.Status, oauthtest.Text(s.Body))
			}

			s = ev.accountPost(b, logout.Action.Path, logout.Values(nil), chromiumSameOrigin())
			if s.Status != http.StatusSeeOther || s.Location.Path != "/oauth2/account" || s.Location.Query().Get("lang") != tt.lang {
				t.Fatalf("logout: %d %v %.300s", s.Status, s.Location, oauthtest.Text(s.Body))
			}
			gone := ev.sessionSetCookie(s)
			if gone == nil || gone.MaxAge >= 0 || gone.Value != "" || gone.Path != set.Path || gone.Domain != set.Domain ||
				gone.Secure != tt.secure || gone.Secure != set.Secure || !gone.HttpOnly || gone.SameSite != set.SameSite {
				t.Errorf("logout's cookie %+v, want %+v expired (Max-Age=0)", gone, set)
			}
			if ev.sessionStored(value) {
				t.Error("the session record survived the logout")
			}
			if ev.sessionValue(b) != "" {
				t.Error("the browser still holds the session cookie")
			}
			wantAccountLogin(t, ev.must(b.Get(s.Location.String())), tt.lang)

			// The old cookie, replayed: the login form, on the account page
			// and in an authorization request.
			old := ev.replaySession(value)
			wantAccountLogin(t, ev.must(old.Get(ev.ts.URL+"/oauth2/account?lang="+tt.lang)), tt.lang)
			s = ev.must(old.Get(ev.authorizeURL(serviceParams())))
			if s.Redirected() || s.Form == nil || !s.Form.Has("password") || s.Form.Action.Path != "/oauth2/login" {
				t.Errorf("authorize with the replayed cookie: %d %v %.300s", s.Status, s.Location, oauthtest.Text(s.Body))
			}
			if !strings.Contains(ev.logs.String(), `"msg":"account page logout","username":"alice"`) || strings.Contains(ev.logs.String(), value) {
				t.Errorf("logs: want the logout, never the cookie: %s", ev.logs.String())
			}
		})
	}
}

// sessionSetCookie is the login session cookie s sets (nil if none).
func (ev *env) sessionSetCookie(s *oauthtest.Step) *http.Cookie {
	t := ev.t
	t.Helper()
	for _, line := range s.Header.Values("Set-Cookie") {
		ck, err := http.ParseSetCookie(line)
		if err != nil {
			t.Fatalf("Set-Cookie %q: %v", line, err)
		}
		if ck.Name == ev.session {
			return ck
		}
	}
	return nil
}

// TestAccountLogoutRefusals: a logout post that is not from alice's own
// signed-in page ends nothing; without a session cookie it is just the
// login page.
func TestAccountLogoutRefusals(t *testing.T) {
	ev := newAccountEnv(t)
	b := ev.browser()
	csrf := ev.accountLogin(b, "alice", alicePassword, "en")
	value := ev.sessionValue(b)
	daveCSRF := ev.accountLogin(ev.browser(), "dave", davePassword, "en")
	good := func() url.Values { return url.Values{"csrf_token": {csrf}, "lang": {"en"}} }
	edit := func(f func(v url.Values)) url.Values { v := good(); f(v); return v }
	for _, tt := range []refusedPost{
		{"cross-site", b, good(), chromiumCrossSite(), http.StatusForbidden, "sent from another website"},
		{"foreign Origin, no Fetch Metadata", b, good(), http.Header{"Origin": {"https://evil.example"}}, http.StatusForbidden, "sent from another website"},
		{"cross-site Fetch Metadata, no Origin", b, good(), http.Header{"Sec-Fetch-Site": {"cross-site"}}, http.StatusForbidden, "sent from another website"},
		{"missing CSRF token", b, edit(func(v url.Values) { v.Del("csrf_token") }), chromiumSameOrigin(), http.StatusBadRequest, "The form has expired or is invalid."},
		{"empty CSRF token", b, edit(func(v url.Values) { v.Set("csrf_token", "") }), chromiumSameOrigin(), http.StatusBadRequest, "The form has expired or is invalid."},
		{"wrong CSRF token", b, edit(func(v url.Values) { v.Set("csrf_token", csrf[:len(csrf)-2]+"AA") }), chromiumSameOrigin(), http.StatusBadRequest, "The form has expired or is invalid."},
		{"the session cookie as the token", b, edit(func(v url.Values) { v.Set("csrf_token", value) }), chromiumSameOrigin(), http.StatusBadRequest, "The form has expired or is invalid."},
		{"token of another session", b, edit(func(v url.Values) { v.Set("csrf_token", daveCSRF) }), chromiumSameOrigin(), http.StatusBadRequest, "The form has expired or is invalid."},
		{"oversized token", b, edit(func(v url.Values) { v.Set("csrf_token", strings.Repeat("A", 20000)) }), chromiumSameOrigin(), http.StatusBadRequest, "The form has expired or is invalid."},
		{"CSRF token twice", b, edit(func(v url.Values) { v.Add("csrf_token", csrf) }), chromiumSameOrigin(), http.StatusBadRequest, "The request is invalid."},
		{"no session cookie (another browser with alice's token)", ev.browser(), good(), chromiumSameOrigin(), http.StatusSeeOther, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := ev.accountPost(tt.browser, "/oauth2/account/logout", tt.form, tt.h)
			text := oauthtest.Text(s.Body)
			if s.Status != tt.wantStatus || !strings.Contains(text, tt.wantText) || strings.Contains(text, csrf) || strings.Contains(text, value) {
				t.Errorf("%d %.300s, want %d %q", s.Status, text, tt.wantStatus, tt.wantText)
			}
			if tt.wantStatus == http.StatusSeeOther {
				if s.Location.Path != "/oauth2/account" || s.Location.Query().Get("lang") != "en" {
					t.Fatalf("redirect to %v", s.Location)
				}
				wantAccountLogin(t, ev.must(tt.browser.Get(s.Location.String())), "en")
			}
			if ev.sessionSetCookie(s) != nil {
				t.Errorf("a refused logout touched the session cookie: %q", s.Header.Values("Set-Cookie"))
			}
			if !ev.sessionStored(value) {
				t.Fatal("a refused logout deleted alice's session")
			}
			if s := ev.must(b.Get(ev.ts.URL + "/oauth2/account?lang=en")); !strings.Contains(oauthtest.Text(s.Body), "You are signed in as alice") {
				t.Fatalf("alice is signed out: %.300s", oauthtest.Text(s.Body))
			}
		})
	}
}
