package oauth_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/signd/signd/csc"
	"github.com/signd/signd/oauth"
	"github.com/signd/signd/oauth/oauthtest"
	"github.com/signd/signd/store"
)

// newAccountEnv is newEnv with the account page over csc.Account.
func newAccountEnv(t *testing.T) *env {
	t.Helper()
	db := memoryStore(t)
	return buildEnv(t, db, false, func(c *oauth.Config) {
		c.Account = &csc.Account{Store: store.Scope(db, func(tx store.Tx) csc.AccountTx { return tx }), Now: c.Now}
	})
}

// accountPost posts form values to path with headers h (nil: none).
func (ev *env) accountPost(b *oauthtest.Browser, path string, v url.Values, h http.Header) *oauthtest.Step {
	ev.t.Helper()
	req, err := http.NewRequest(http.MethodPost, ev.ts.URL+path, strings.NewReader(v.Encode()))
	if err != nil {
		ev.t.Fatal(err)
	}
	for k, vs := range h {
		for _, val := range vs {
			req.Header.Add(k, val)
		}
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return ev.must(b.Do(req))
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
	tests := []struct {
		name       string
		browser    *oauthtest.Browser
		form       url.Values
		h          http.Header
		wantStatus int
		wantText   string
	}{
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
	for _, tt := range []struct {
		name       string
		browser    *oauthtest.Browser
		form       url.Values
		h          http.Header
		wantStatus int
		wantText   string
	}{
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
				if strings.HasPrefix(ck, "signd_session=") {
					t.Errorf("a refused login set a session: %q", ck)
				}
			}
		})
	}
	if u := ev.user("alice"); u.FailedPasswords != 1 {
		t.Errorf("FailedPasswords = %d, want 1 (only the wrong password counts)", u.FailedPasswords)
	}
}
