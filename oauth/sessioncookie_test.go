package oauth_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/signd/signd/oauth/browser"
	"github.com/signd/signd/oauth/oauthtest"
	"github.com/signd/signd/store"
)

// TestPlantedSessionCookie: a login session cookie planted in the victim's
// browser (login CSRF, session fixation) does not sign the victim in as
// the attacker. The attacker is alice (her cookie value copied from her
// browser after a service flow), the victim erin, signed in in her own
// browser. A cross-site navigation to GET /oauth2/authorize of a profile
// without consent page (quiet: a code at once, as an OpenID request that
// releases no identity claims) and to the account page carries exactly
// the Cookie header of the case. Under https the session cookie is
// __Host-signd_session, which no sibling subdomain and no plain-http
// response can set; the unprefixed name is what they can. A name sent
// twice is refused in both modes (browsers send the longer path first, so
// a planted cookie would come first); over plain http a planted cookie
// alone is the browser's only cookie and cannot be told apart.
func TestPlantedSessionCookie(t *testing.T) {
	const plain = "signd_session" // the name a sibling subdomain or a plain-http response can set
	type cookieCase struct {
		name   string
		cookie func(attacker, victim string) string
		want   string // the user signed in: the code's and the account page's; "" = the login form
		dup    bool   // the name is sent twice: refused with a warning
	}
	for _, mode := range []struct {
		name   string
		secure bool
		cases  func(own string) []cookieCase
	}{
		{"https", true, func(own string) []cookieCase {
			return []cookieCase{
				{"victims_own", func(_, v string) string { return own + "=" + v }, "erin", false},
				{"planted_alone", func(a, _ string) string { return plain + "=" + a }, "", false},
				{"planted_longer_path_first", func(a, v string) string { return plain + "=" + a + "; " + own + "=" + v }, "erin", false},
				{"planted_with_the_prefix_twice", func(a, v string) string { return own + "=" + a + "; " + own + "=" + v }, "", true},
				{"the_same_value_twice", func(_, v string) string { return own + "=" + v + "; " + own + "=" + v }, "", true},
			}
		}},
		{"http", false, func(own string) []cookieCase {
			return []cookieCase{
				{"victims_own", func(_, v string) string { return own + "=" + v }, "erin", false},
				{"planted_longer_path_first", func(a, v string) string { return own + "=" + a + "; " + own + "=" + v }, "", true},
				{"victims_first", func(a, v string) string { return own + "=" + v + "; " + own + "=" + a }, "", true},
				{"malformed", func(_, v string) string { return own + "=" + v + "x" }, "", false},
			}
		}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			ev := newEnvWith(t, envOptions{account: true, browser: func(c *browser.Config) { c.SecureCookies = mode.secure }})
			quiet := with(serviceParams(), "scope", "quiet")
			_, ab := ev.serviceCode(serviceParams())
			vb := ev.browser()
			ev.codeOf(ev.login(vb, ev.must(vb.Get(ev.authorizeURL(quiet))), "erin", davePassword), rpRedirect, "state-123")
			attacker, victim := ev.jarCookie(ab, ev.session), ev.jarCookie(vb, ev.session)
			if attacker == nil || victim == nil || attacker.Value == victim.Value {
				t.Fatalf("want two sessions, got %v and %v", attacker, victim)
			}
			for _, tt := range mode.cases(ev.session) {
				t.Run(tt.name, func(t *testing.T) {
					before := strings.Count(ev.logs.String(), "login session cookie refused: sent more than once")
					get := func(u string) *oauthtest.Step {
						req, err := http.NewRequest(http.MethodGet, u, nil)
						if err != nil {
							t.Fatal(err)
						}
						req.Header = chromiumCrossSite()
						req.Header.Set("Cookie", tt.cookie(attacker.Value, victim.Value))
						return ev.must(ev.browser().Do(req))
					}
					s := get(ev.authorizeURL(quiet))
					if tt.want == "" {
						if s.Redirected() || s.Form == nil || !s.Form.Has("password") {
							t.Errorf("authorize: want the login form, got %d %v", s.Status, s.Location)
						}
					} else {
						var code *store.AuthCode
						c, err := s.Code(rpRedirect, "state-123", ev.srv.Issuer())
						if err != nil {
							t.Fatalf("authorize: %v", err)
						}
						ev.update(func(tx store.Tx) (err error) { code, err = tx.Code(store.Fingerprint(c)); return err })
						if code.Username != tt.want {
							t.Errorf("authorize: a code for %s, want %s", code.Username, tt.want)
						}
					}
					s = get(ev.ts.URL + "/oauth2/account?lang=en")
					if tt.want == "" {
						wantAccountLogin(t, s, "en")
					} else if text := oauthtest.Text(s.Body); !strings.Contains(text, "You are signed in as") || !strings.Contains(text, tt.want) {
						t.Errorf("account page: want %s signed in, got %d %.300s", tt.want, s.Status, text)
					}
					logs := ev.logs.String()
					if got := strings.Count(logs, "login session cookie refused: sent more than once") - before; (got > 0) != tt.dup {
						t.Errorf("%d warnings of a duplicated session cookie, want them: %v", got, tt.dup)
					}
					if strings.Contains(logs, attacker.Value) || strings.Contains(logs, victim.Value) {
						t.Error("the log contains a session cookie")
					}
				})
			}
		})
	}
}

// TestSessionCookieIssued: the login session cookie as a login sets it
// and a logout expires it, under https (the __Host- prefix: Secure,
// Path=/, no Domain) and over plain http (the issuer's /oauth2/).
func TestSessionCookieIssued(t *testing.T) {
	for _, mode := range []struct {
		name, cookie, path string
		secure             bool
	}{
		{"http", "signd_session", "/oauth2/", false},
		{"https_host_prefix", "__Host-signd_session", "/", true},
	} {
		t.Run(mode.name, func(t *testing.T) {
			ev := newEnvWith(t, envOptions{account: true, browser: func(c *browser.Config) { c.SecureCookies = mode.secure }})
			b := ev.browser()
			s := ev.login(b, ev.must(b.Get(ev.authorizeURL(serviceParams()))), "alice", alicePassword)
			ck := ev.sessionSetCookie(s)
			if ck == nil || ck.Name != mode.cookie {
				t.Fatalf("the login sets no %s: %q", mode.cookie, s.Header.Values("Set-Cookie"))
			}
			if ck.Path != mode.path || ck.Domain != "" || !ck.HttpOnly || ck.Secure != mode.secure ||
				ck.SameSite != http.SameSiteLaxMode || ck.MaxAge != 8*60*60 || len(ck.Value) != 43 {
				t.Errorf("session cookie %q", ck.Raw)
			}
			// Single sign-on with it; the logout expires it under the same
			// name and path.
			atConsent(t, ev.must(b.Get(ev.authorizeURL(serviceParams()))))
			s = ev.must(b.Get(ev.ts.URL + "/oauth2/account?lang=en"))
			if s.Form == nil || s.Form.Action.Path != "/oauth2/account/logout" {
				t.Fatalf("the account page has no logout form: %d %.300s", s.Status, oauthtest.Text(s.Body))
			}
			s = ev.accountPost(b, s.Form.Action.Path, s.Form.Values(nil), chromiumSameOrigin())
			gone := ev.sessionSetCookie(s)
			if gone == nil || gone.Path != mode.path || gone.MaxAge >= 0 || gone.Secure != mode.secure {
				t.Errorf("logout: %q", s.Header.Values("Set-Cookie"))
			}
		})
	}
}

// TestAccountCSRFCookie: the account login form's double-submit CSRF
// cookie carries the __Host- prefix under https, so a sibling subdomain
// cannot plant a token of its choosing to go with a form it posts (login
// CSRF on the account page, behind the Origin check); a name sent twice
// is refused. The post comes from signd's own page (same-origin headers)
// with exactly the Cookie header of the case.
func TestAccountCSRFCookie(t *testing.T) {
	type csrfCase struct {
		name   string
		cookie func(issued string) string // the Cookie header
		field  func(issued string) string // the csrf_token field
		ok     bool
	}
	for _, mode := range []struct {
		name, cookie, path, plain string
		secure                    bool
	}{
		{"http", "signd_account_csrf", "/oauth2/account", "", false},
		{"https_host_prefix", "__Host-signd_account_csrf", "/", "signd_account_csrf", true},
	} {
		t.Run(mode.name, func(t *testing.T) {
			ev := newEnvWith(t, envOptions{account: true, browser: func(c *browser.Config) { c.SecureCookies = mode.secure }})
			const chosen = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" // the attacker's token, never issued
			tests := []csrfCase{
				{"issued", func(v string) string { return mode.cookie + "=" + v }, func(v string) string { return v }, true},
				{"duplicated", func(v string) string { return mode.cookie + "=" + chosen + "; " + mode.cookie + "=" + v }, func(string) string { return chosen }, false},
				{"duplicated_same_value", func(v string) string { return mode.cookie + "=" + v + "; " + mode.cookie + "=" + v }, func(v string) string { return v }, false},
			}
			if mode.plain != "" {
				tests = append(tests, csrfCase{"planted_without_the_prefix", func(string) string { return mode.plain + "=" + chosen }, func(string) string { return chosen }, false})
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					b := ev.browser()
					s := ev.must(b.Get(ev.ts.URL + "/oauth2/account?lang=en"))
					var ck *http.Cookie
					for _, c := range (&http.Response{Header: s.Header}).Cookies() {
						if c.Name == mode.cookie {
							ck = c
						}
					}
					if ck == nil || ck.Path != mode.path || ck.Domain != "" || !ck.HttpOnly || ck.Secure != mode.secure ||
						ck.SameSite != http.SameSiteStrictMode || len(ck.Value) != 43 {
						t.Fatalf("the account login form's CSRF cookie: %q", s.Header.Values("Set-Cookie"))
					}
					v := s.Form.Values(map[string]string{"username": "alice", "password": alicePassword, "csrf_token": tt.field(ck.Value)})
					h := chromiumSameOrigin()
					h.Set("Cookie", tt.cookie(ck.Value))
					s = ev.accountPost(ev.browser(), "/oauth2/account/login", v, h)
					if tt.ok {
						if s.Status != http.StatusSeeOther || ev.sessionSetCookie(s) == nil {
							t.Errorf("login: %d %q", s.Status, s.Header.Values("Set-Cookie"))
						}
						return
					}
					if s.Status != http.StatusBadRequest || !strings.Contains(oauthtest.Text(s.Body), "The form has expired or is invalid.") ||
						ev.sessionSetCookie(s) != nil {
						t.Errorf("want the CSRF refusal, got %d %q %.200s", s.Status, s.Header.Values("Set-Cookie"), oauthtest.Text(s.Body))
					}
				})
			}
		})
	}
}
