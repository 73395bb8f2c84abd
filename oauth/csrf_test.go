package oauth_test

import (
	"bytes"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/signd/signd/csc"
	"github.com/signd/signd/oauth"
	"github.com/signd/signd/oauth/browser"
	"github.com/signd/signd/oauth/oauthtest"
	"github.com/signd/signd/store"
)

// The two refusal pages of the login and consent forms.
var (
	msgCrossSite = map[string]string{
		"nl": "Dit formulier is vanaf een andere website verstuurd en daarom geweigerd.",
		"en": "This form was sent from another website and has therefore been refused.",
	}
	msgOtherBrowser = map[string]string{
		"nl": "Dit formulier is niet in deze browser geopend",
		"en": "This form was not opened in this browser",
	}
)

// chromiumCrossSite are the headers Chromium sends with a form that a page
// on https://evil.example submits to signd: a cross-site top-level POST
// navigation.
func chromiumCrossSite() http.Header {
	return http.Header{
		"Origin":                    {"https://evil.example"},
		"Referer":                   {"https://evil.example/"},
		"Sec-Fetch-Site":            {"cross-site"},
		"Sec-Fetch-Mode":            {"navigate"},
		"Sec-Fetch-Dest":            {"document"},
		"Sec-Fetch-User":            {"?1"},
		"Cache-Control":             {"max-age=0"},
		"Upgrade-Insecure-Requests": {"1"},
		"Accept":                    {"text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8"},
		"User-Agent":                {"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"},
	}
}

// chromiumSameOrigin are the headers Chromium sends with signd's own form
// (the pages' Referrer-Policy is same-origin).
func chromiumSameOrigin() http.Header {
	h := chromiumCrossSite()
	h.Set("Origin", testIssuer)
	h.Set("Referer", testIssuer+"/oauth2/authorize?response_type=code")
	h.Set("Sec-Fetch-Site", "same-origin")
	return h
}

// submitWith posts form f of a page (filled with set, the button decision)
// through browser b with the extra headers h, as a browser would.
func (ev *env) submitWith(b *oauthtest.Browser, f *oauthtest.Form, set map[string]string, decision string, h http.Header) *oauthtest.Step {
	ev.t.Helper()
	v := f.Values(set)
	if decision != "" {
		v.Set("decision", decision)
	}
	return ev.postForm(b, f.Action.String(), v, h)
}

// postForm posts form values v to target through browser b with the extra
// headers h (nil: none), as a browser posts a form.
func (ev *env) postForm(b *oauthtest.Browser, target string, v url.Values, h http.Header) *oauthtest.Step {
	ev.t.Helper()
	req, err := http.NewRequest(http.MethodPost, target, strings.NewReader(v.Encode()))
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

// pending reads the pending request of a page's form back.
func (ev *env) pending(f *oauthtest.Form) *store.AuthRequest {
	ev.t.Helper()
	var r *store.AuthRequest
	ev.update(func(tx store.Tx) (err error) {
		r, err = tx.AuthRequest(store.Fingerprint(f.Fields.Get("request")))
		return err
	})
	return r
}

// jarCookie returns the cookie name that b holds for the form endpoints,
// or nil.
func (ev *env) jarCookie(b *oauthtest.Browser, name string) *http.Cookie {
	for _, ck := range b.HTTP.Jar.Cookies(mustURL(ev.ts.URL + "/oauth2/login")) {
		if ck.Name == name {
			return ck
		}
	}
	return nil
}

// refused requires s to be the 403 page with message want in lang, setting
// no cookie.
func refused(t *testing.T, s *oauthtest.Step, lang, want string) {
	t.Helper()
	text := oauthtest.Text(s.Body)
	if s.Redirected() || s.Status != http.StatusForbidden || !strings.Contains(text, want) || s.Header.Get("Content-Language") != lang {
		t.Fatalf("want the 403 page %q in %s, got status %d (%s) location %v: %.400s",
			want, lang, s.Status, s.Header.Get("Content-Language"), s.Location, text)
	}
	if ck := s.Header.Values("Set-Cookie"); len(ck) != 0 {
		t.Errorf("the refusal sets cookies: %q", ck)
	}
	if s.Form != nil {
		t.Errorf("the refusal page has a form: %+v", s.Form)
	}
}

// atConsent requires s to be the consent page (login went through).
func atConsent(t *testing.T, s *oauthtest.Step) {
	t.Helper()
	page(t, s)
	if s.Form.Has("password") || s.Form.Action.Path != "/oauth2/consent" {
		t.Fatalf("want the consent page, got %d: %.400s", s.Status, oauthtest.Text(s.Body))
	}
}

// TestLoginCSRFFromAnotherBrowser is the login CSRF attack: the attacker
// loads the login page in his browser (his request handle and CSRF token)
// and makes the victim's browser post that form with his credentials. The
// post carries no Origin or Fetch Metadata (an old browser), so only the
// browser binding stands in the way: 403, no session for the victim,
// nothing counted, and the request stays answerable by the attacker's own
// browser (refusing changes nothing, so nobody can cancel another
// browser's flow by posting to it).
func TestLoginCSRFFromAnotherBrowser(t *testing.T) {
	ev := newEnv(t)
	for _, tt := range []struct {
		name            string
		victimHasCookie bool
		password        string
	}{
		{"victim_without_binding_cookie", false, davePassword},
		{"victim_with_own_binding_cookie", true, davePassword},
		{"wrong_password_is_not_counted", true, "wrong-password"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			attacker := ev.browser()
			s := page(t, ev.must(attacker.Get(ev.authorizeURL(serviceParams()))))
			victim := ev.browser()
			if tt.victimHasCookie {
				page(t, ev.must(victim.Get(ev.authorizeURL(serviceParams()))))
				if ev.jarCookie(victim, "signd_flow") == nil {
					t.Fatal("the victim's browser got no binding cookie")
				}
			}
			got := ev.must(victim.Submit(s.Form, map[string]string{"username": "dave", "password": tt.password}, "approve"))
			refused(t, got, "nl", msgOtherBrowser["nl"])
			if ev.jarCookie(victim, "signd_session") != nil {
				t.Error("the victim's browser holds a login session")
			}
			if r := ev.pending(s.Form); r.Stage != store.StageLogin || r.Username != "" || !r.AuthTime.IsZero() {
				t.Errorf("the refused post changed the request: %+v", r)
			}
			if u := ev.user("dave"); u.FailedPasswords != 0 || u.PasswordLocked {
				t.Errorf("the refused post counted: %d failures", u.FailedPasswords)
			}
			atConsent(t, ev.login(attacker, s, "dave", davePassword))
		})
	}
	if logs := ev.logs.String(); !strings.Contains(logs, "not the browser the request is bound to") {
		t.Errorf("no warning logged:\n%s", logs)
	}
}

// TestConsentCSRFFromAnotherBrowser: the attacker logs in to his own flow
// and makes the victim's browser approve his consent page (the victim's
// browser would land at the client with a code for the attacker's
// account). Refused with 403; the attacker's browser can still answer.
func TestConsentCSRFFromAnotherBrowser(t *testing.T) {
	ev := newEnv(t)
	for _, tt := range []struct {
		name            string
		params          func() url.Values
		pin             string
		victimHasCookie bool
	}{
		{"service_victim_without_cookie", serviceParams, "", false},
		{"service_victim_with_own_cookie", serviceParams, "", true},
		{"credential_with_pin", func() url.Values { return credentialParams(credDave) }, alicePIN, true},
		{"credential_wrong_pin_is_not_counted", func() url.Values { return credentialParams(credDave) }, "000000", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			attacker := ev.browser()
			s := ev.login(attacker, page(t, ev.must(attacker.Get(ev.authorizeURL(tt.params())))), "dave", davePassword)
			atConsent(t, s)
			victim := ev.browser()
			if tt.victimHasCookie {
				page(t, ev.must(victim.Get(ev.authorizeURL(serviceParams()))))
			}
			set := map[string]string{}
			if tt.pin != "" {
				set["pin"] = tt.pin
			}
			got := ev.must(victim.Submit(s.Form, set, "approve"))
			refused(t, got, "nl", msgOtherBrowser["nl"])
			if r := ev.pending(s.Form); r.Stage != store.StageConsent || r.Username != "dave" {
				t.Errorf("the refused post changed the request: %+v", r)
			}
			if u := ev.user("dave"); u.FailedPINs != 0 || u.PINLocked {
				t.Errorf("the refused post counted: %d PIN failures", u.FailedPINs)
			}
			pin := ""
			if tt.pin != "" {
				pin = alicePIN
			}
			ev.codeOf(ev.approve(attacker, s, pin), rpRedirect, "state-123")
		})
	}
}

// TestCrossSiteFormPosts: the login and consent forms refuse posts that the
// browser marks as cross-site (Sec-Fetch-Site) or whose Origin is not the
// issuer's, with a 403 page in the request's language, and change nothing.
// The posting browser holds the right binding cookie here, so the headers
// alone decide.
func TestCrossSiteFormPosts(t *testing.T) {
	ev := newEnv(t)
	hdr := func(kv ...string) http.Header {
		h := http.Header{}
		for i := 0; i+1 < len(kv); i += 2 {
			h.Add(kv[i], kv[i+1])
		}
		return h
	}
	tests := []struct {
		name   string
		header http.Header
		ok     bool
	}{
		{"chromium_cross_site_form", chromiumCrossSite(), false},
		{"origin_null", hdr("Origin", "null"), false},
		{"origin_null_with_same_origin_fetch_metadata", hdr("Origin", "null", "Sec-Fetch-Site", "same-origin"), false},
		{"other_origin_without_fetch_metadata", hdr("Origin", "https://evil.example"), false},
		{"cross_site_without_origin", hdr("Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "navigate"), false},
		{"same_site_sibling_subdomain", hdr("Origin", "https://evil.signd.example", "Sec-Fetch-Site", "same-site"), false},
		{"origin_http_instead_of_https", hdr("Origin", "http://signd.example"), false},
		{"origin_other_port", hdr("Origin", "https://signd.example:8443"), false},
		{"origin_with_path", hdr("Origin", testIssuer+"/"), false},
		{"origin_lookalike_host", hdr("Origin", "https://signd.example.evil.example"), false},
		{"origin_twice", hdr("Origin", testIssuer, "Origin", "https://evil.example"), false},
		{"sec_fetch_site_twice", hdr("Sec-Fetch-Site", "same-origin", "Sec-Fetch-Site", "cross-site"), false},
		{"sec_fetch_site_unknown_value", hdr("Sec-Fetch-Site", "cross-origin"), false},
		{"chromium_same_origin_form", chromiumSameOrigin(), true},
		{"origin_with_default_port_and_upper_case", hdr("Origin", "HTTPS://SIGND.EXAMPLE:443"), true},
		{"sec_fetch_site_none", hdr("Sec-Fetch-Site", "none"), true},
		{"sec_fetch_site_same_site_without_origin", hdr("Sec-Fetch-Site", "same-site"), true},
		{"no_origin_no_fetch_metadata", nil, true},
	}
	for _, lang := range []string{"nl", "en"} {
		for _, endpoint := range []string{"login", "consent"} {
			for _, tt := range tests {
				t.Run(lang+"/"+endpoint+"/"+tt.name, func(t *testing.T) {
					b := ev.browser()
					s := page(t, ev.must(b.Get(ev.authorizeURL(with(serviceParams(), "ui_locales", lang)))))
					creds := map[string]string{"username": "alice", "password": alicePassword}
					if endpoint == "consent" {
						s = ev.login(b, s, "alice", alicePassword)
						atConsent(t, s)
						creds = nil
					}
					before := ev.pending(s.Form)
					got := ev.submitWith(b, s.Form, creds, "approve", tt.header)
					if tt.ok {
						if endpoint == "login" {
							atConsent(t, got)
						} else {
							ev.codeOf(got, rpRedirect, "state-123")
						}
						return
					}
					refused(t, got, lang, msgCrossSite[lang])
					after := ev.pending(s.Form)
					if after.Stage != before.Stage || after.Username != before.Username {
						t.Errorf("the refused post changed the request: %+v", after)
					}
					// Nothing happened: the same page still works.
					if endpoint == "login" {
						atConsent(t, ev.login(b, s, "alice", alicePassword))
					} else {
						ev.codeOf(ev.approve(b, s, ""), rpRedirect, "state-123")
					}
				})
			}
		}
	}
	t.Run("unknown_request_is_refused_in_dutch", func(t *testing.T) {
		b := ev.browser()
		s := page(t, ev.must(b.Get(ev.authorizeURL(with(serviceParams(), "ui_locales", "en")))))
		refused(t, ev.submitWith(b, s.Form, map[string]string{"request": "unknown"}, "approve", chromiumCrossSite()), "nl", msgCrossSite["nl"])
	})
	t.Run("authorize_may_be_posted_cross_site", func(t *testing.T) {
		b := ev.browser()
		f := &oauthtest.Form{Action: mustURL(ev.ts.URL + "/oauth2/authorize"), Fields: serviceParams()}
		atLogin := ev.submitWith(b, f, nil, "", chromiumCrossSite())
		if !page(t, atLogin).Form.Has("password") {
			t.Fatalf("cross-site authorize POST: %d %.300s", atLogin.Status, oauthtest.Text(atLogin.Body))
		}
	})
	t.Run("token_endpoint_ignores_browser_headers", func(t *testing.T) {
		code, _ := ev.serviceCode(serviceParams())
		f := &oauthtest.Form{Action: mustURL(ev.ts.URL + "/oauth2/token"), Fields: tokenForm(code, "client_id", "rp", "client_secret", rpSecret)}
		s := ev.submitWith(ev.browser(), f, nil, "", chromiumCrossSite())
		if s.Status != http.StatusOK || !strings.Contains(s.Body, "access_token") {
			t.Fatalf("token request with browser headers: %d %s", s.Status, s.Body)
		}
	})
	logs := ev.logs.String()
	if !strings.Contains(logs, "posted from another site") || !strings.Contains(logs, `"origin":"https://evil.example"`) {
		t.Errorf("no warning logged:\n%.2000s", logs)
	}
}

// TestBindingCookie: the form post's binding cookie, one case per way it
// can be wrong. The page is loaded by one browser; the post is sent with
// exactly the Cookie header of the case and no other cookie.
func TestBindingCookie(t *testing.T) {
	other := "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" // well formed, never issued
	for _, mode := range []struct {
		name, cookie, wrongName string
		secure                  bool
	}{
		{"http", "signd_flow", "__Host-signd_flow", false},
		{"https", "__Host-signd_flow", "signd_flow", true},
	} {
		t.Run(mode.name, func(t *testing.T) {
			ev := newEnvWith(t, envOptions{browser: func(c *browser.Config) { c.SecureCookies = mode.secure }})
			name := mode.cookie
			tests := []struct {
				name   string
				cookie func(v string) string
				ok     bool
			}{
				{"missing", func(string) string { return "" }, false},
				{"empty", func(string) string { return name + "=" }, false},
				{"another_browsers", func(string) string { return name + "=" + other }, false},
				{"duplicated_with_another_value", func(v string) string { return name + "=" + v + "; " + name + "=" + other }, false},
				{"duplicated_same_value", func(v string) string { return name + "=" + v + "; " + name + "=" + v }, false},
				{"oversized", func(v string) string { return name + "=" + v + strings.Repeat("A", 4000) }, false},
				{"truncated", func(v string) string { return name + "=" + v[:len(v)-1] }, false},
				{"not_base64url", func(v string) string { return name + "=" + v[:len(v)-1] + "+" }, false},
				{"under_the_other_name", func(v string) string { return mode.wrongName + "=" + v }, false},
				{"the_sessions_name", func(v string) string { return "signd_session=" + v }, false},
				{"right", func(v string) string { return name + "=" + v }, true},
				{"right_among_others", func(v string) string { return "a=1; " + name + "=" + v + "; b=2" }, true},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					owner := ev.browser()
					s := page(t, ev.must(owner.Get(ev.authorizeURL(serviceParams()))))
					ck := ev.jarCookie(owner, name)
					if ck == nil {
						t.Fatalf("no %s cookie in the browser", name)
					}
					h := http.Header{}
					if c := tt.cookie(ck.Value); c != "" {
						h.Set("Cookie", c)
					}
					got := ev.submitWith(ev.browser(), s.Form, map[string]string{"username": "alice", "password": alicePassword}, "approve", h)
					if tt.ok {
						atConsent(t, got)
						return
					}
					refused(t, got, "nl", msgOtherBrowser["nl"])
					if r := ev.pending(s.Form); r.Stage != store.StageLogin || r.Username != "" {
						t.Errorf("the refused post changed the request: %+v", r)
					}
					if strings.Contains(ev.logs.String(), ck.Value) {
						t.Error("the log contains the binding cookie")
					}
				})
			}
		})
	}
}

// TestBindingCookieIssued: what the binding cookie looks like, that one
// browser keeps one value across its flows (tabs), that only its
// fingerprint is stored, and where it is (re)issued.
func TestBindingCookieIssued(t *testing.T) {
	bindingOf := func(t *testing.T, s *oauthtest.Step, name string) *http.Cookie {
		t.Helper()
		for _, ck := range (&http.Response{Header: s.Header}).Cookies() {
			if ck.Name == name {
				return ck
			}
		}
		return nil
	}
	for _, mode := range []struct {
		name, cookie, path string
		secure             bool
	}{
		{"http", "signd_flow", "/oauth2/", false},
		{"https_host_prefix", "__Host-signd_flow", "/", true},
	} {
		t.Run(mode.name, func(t *testing.T) {
			ev := newEnvWith(t, envOptions{browser: func(c *browser.Config) { c.SecureCookies = mode.secure }})
			b := ev.browser()
			tab1 := page(t, ev.must(b.Get(ev.authorizeURL(serviceParams()))))
			ck := bindingOf(t, tab1, mode.cookie)
			if ck == nil {
				t.Fatalf("the login page sets no %s: %q", mode.cookie, tab1.Header.Values("Set-Cookie"))
			}
			if ck.Path != mode.path || ck.Domain != "" || !ck.HttpOnly || ck.Secure != mode.secure ||
				ck.SameSite != http.SameSiteLaxMode || ck.MaxAge <= 0 || len(ck.Value) != 43 {
				t.Errorf("binding cookie %q", ck.Raw)
			}
			if r := ev.pending(tab1.Form); !bytes.Equal(r.BindingHash, store.Fingerprint(ck.Value)) {
				t.Error("the request does not store the cookie's fingerprint")
			}
			// A second tab: the same value, re-sent with a fresh expiry.
			tab2 := page(t, ev.must(b.Get(ev.authorizeURL(with(serviceParams(), "state", "tab-2")))))
			if ck2 := bindingOf(t, tab2, mode.cookie); ck2 == nil || ck2.Value != ck.Value {
				t.Fatalf("the second tab changed the binding: %v", ck2)
			}
			// Both tabs are answerable by this browser, in either order.
			ev.codeOf(ev.approve(b, ev.login(b, tab2, "alice", alicePassword), ""), rpRedirect, "tab-2")
			ev.codeOf(ev.approve(b, ev.login(b, tab1, "alice", alicePassword), ""), rpRedirect, "state-123")

			// A malformed binding cookie is replaced by a fresh value.
			u := mustURL(ev.ts.URL + mode.path)
			b.HTTP.Jar.SetCookies(u, []*http.Cookie{{Name: mode.cookie, Value: "short", Path: mode.path, Secure: mode.secure}})
			s := page(t, ev.must(b.Get(ev.authorizeURL(serviceParams()))))
			if ck3 := bindingOf(t, s, mode.cookie); ck3 == nil || len(ck3.Value) != 43 || ck3.Value == ck.Value {
				t.Fatalf("malformed binding cookie not replaced: %v", ck3)
			}
			ev.codeOf(ev.approve(b, s, ""), rpRedirect, "state-123") // single sign-on: straight to consent

			// Single sign-on creates its request at the consent page: a
			// browser that lost its binding cookie gets one there.
			b.HTTP.Jar.SetCookies(u, []*http.Cookie{{Name: mode.cookie, Path: mode.path, MaxAge: -1, Secure: mode.secure}})
			if ev.jarCookie(b, mode.cookie) != nil {
				t.Fatal("the test could not remove the cookie")
			}
			s = page(t, ev.must(b.Get(ev.authorizeURL(serviceParams()))))
			atConsent(t, s)
			if bindingOf(t, s, mode.cookie) == nil {
				t.Fatal("the single sign-on consent page sets no binding cookie")
			}
			ev.codeOf(ev.approve(b, s, ""), rpRedirect, "state-123")

			// No page, no binding: prompt=none ending in a redirect sets nothing.
			fresh := ev.browser()
			s = ev.must(fresh.Get(ev.authorizeURL(with(serviceParams(), "scope", "quiet", "prompt", "none"))))
			if e, _ := errorOf(t, s); e != "login_required" || bindingOf(t, s, mode.cookie) != nil {
				t.Errorf("prompt=none: %s, Set-Cookie %q", e, s.Header.Values("Set-Cookie"))
			}
		})
	}
}

// TestBindingFixation: an attacker who planted a binding value he knows in
// the victim's browser (a cookie tossed from a sibling subdomain over plain
// http) still cannot make the victim's browser answer his own login form —
// the browser marks that post cross-site — and the victim's own flow,
// bound to the planted value, keeps working for the victim only.
func TestBindingFixation(t *testing.T) {
	ev := newEnv(t)
	planted := strings.Repeat("fixated", 6) + "A" // what the attacker's own browser was given
	if b, err := base64.RawURLEncoding.Strict().DecodeString(planted); err != nil || len(b) != 32 {
		t.Fatal("the planted value must look issued")
	}
	plant := func(b *oauthtest.Browser) {
		b.HTTP.Jar.SetCookies(mustURL(ev.ts.URL+"/oauth2/"), []*http.Cookie{{Name: "signd_flow", Value: planted, Path: "/oauth2/"}})
	}
	attacker, victim := ev.browser(), ev.browser()
	plant(attacker)
	plant(victim)
	evil := page(t, ev.must(attacker.Get(ev.authorizeURL(serviceParams()))))
	if !bytes.Equal(ev.pending(evil.Form).BindingHash, store.Fingerprint(planted)) {
		t.Fatal("the attacker's request is not bound to the planted value")
	}
	refused(t, ev.submitWith(victim, evil.Form, map[string]string{"username": "dave", "password": davePassword}, "approve", chromiumCrossSite()), "nl", msgCrossSite["nl"])
	if ev.jarCookie(victim, "signd_session") != nil {
		t.Error("the victim's browser holds a login session")
	}
	// The victim's own flow, reusing the planted value, works for the victim.
	own := page(t, ev.must(victim.Get(ev.authorizeURL(with(serviceParams(), "state", "victim")))))
	ev.codeOf(ev.approve(victim, ev.login(victim, own, "alice", alicePassword), ""), rpRedirect, "victim")
}

// TestNewRefusesAnIssuerWithoutOrigin: the forms compare Origin with the
// issuer's origin, so oauth.New refuses an issuer that has none; an http(s)
// issuer with a path is fine.
func TestNewRefusesAnIssuerWithoutOrigin(t *testing.T) {
	ev := newEnv(t)
	for iss, ok := range map[string]bool{
		"ftp://signd.example": false, "urn:signd:issuer": false, "https://": false,
		"https://signd.example/prefix": true, "http://127.0.0.1:8443": true,
	} {
		_, err := oauth.New(oauth.Config{Store: oauthtest.Store(ev.db), Profiles: []oauth.Profile{csc.ServiceProfile{}}, Issuer: iss})
		if (err == nil) != ok {
			t.Errorf("oauth.New(issuer %q): %v", iss, err)
		}
	}
}
