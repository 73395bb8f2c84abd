package oauth_test

import (
	"context"
	"crypto/sha256"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/signd/signd/oauth"
	"github.com/signd/signd/oauth/oauthtest"
	"github.com/signd/signd/oauth/passwords"
	"github.com/signd/signd/store"
)

// navigate sends a GET as a browser's top-level navigation (Fetch
// Metadata), or as a script when nav is false.
func navigate(t *testing.T, b *oauthtest.Browser, u string, nav bool, dest string) *oauthtest.Step {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	if nav {
		req.Header.Set("Sec-Fetch-Mode", "navigate")
		req.Header.Set("Sec-Fetch-Dest", dest)
		req.Header.Set("Sec-Fetch-Site", "cross-site")
	}
	s, err := b.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var (
	backLinkRE = regexp.MustCompile(`<a class="button" href="([^"]*)">([^<]*)</a>`)
	refreshRE  = regexp.MustCompile(`<meta http-equiv="refresh" content="5; url=([^"]*)">`)
)

// errorPage checks that s is the error page shown before a redirect, and
// returns the URL its button and its meta refresh lead to (one URL).
func errorPage(t *testing.T, s *oauthtest.Step, lang, text string) string {
	t.Helper()
	if s.Redirected() || s.Status != http.StatusOK || !strings.HasPrefix(s.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("want the error page, got status %d location %v", s.Status, s.Location)
	}
	if got := s.Header.Get("Content-Language"); got != lang {
		t.Errorf("Content-Language %q, want %q", got, lang)
	}
	csp := s.Header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "default-src 'none'") || strings.Contains(csp, "script-src") || strings.Contains(s.Body, "<script") {
		t.Errorf("the page must carry no script and the strict CSP: %q", csp)
	}
	if s.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("Cache-Control %q", s.Header.Get("Cache-Control"))
	}
	if !strings.Contains(s.Body, html.EscapeString(text)) {
		t.Errorf("page does not show %q: %.800s", text, s.Body)
	}
	back, refresh := backLinkRE.FindStringSubmatch(s.Body), refreshRE.FindStringSubmatch(s.Body)
	if back == nil || refresh == nil {
		t.Fatalf("page without button or meta refresh: %.1200s", s.Body)
	}
	if b, r := html.UnescapeString(back[1]), html.UnescapeString(refresh[1]); b != r {
		t.Errorf("button leads to %q, refresh to %q", b, r)
	}
	return html.UnescapeString(back[1])
}

// TestErrorPageBeforeRedirect: a profile with ErrorPage shows a browser's
// navigation the case's message in the request's language, then sends it
// to the same redirect a script gets; CSC flows, frames and prompt=none get
// the redirect itself.
func TestErrorPageBeforeRedirect(t *testing.T) {
	ev := newEnv(t)
	quiet := url.Values{"response_type": {"code"}, "client_id": {"rp"}, "redirect_uri": {rpRedirect}, "scope": {"quiet"}, "state": {"st-1"}}
	tests := []struct {
		name   string
		params url.Values
		lang   string
		text   string
	}{
		{"invalid_request_nl", with(quiet, "response_type", ""), "nl", "Het verzoek van de toepassing kan niet worden verwerkt."},
		{"invalid_request_en", with(quiet, "response_type", "", "ui_locales", "en"), "en", "The application's request cannot be processed."},
		{"unsupported_response_type", with(quiet, "response_type", "token"), "nl", "Het verzoek van de toepassing kan niet worden verwerkt."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := ev.authorizeURL(tt.params)
			loc := errorPage(t, navigate(t, ev.browser(), u, true, "document"), tt.lang, tt.text)
			script := navigate(t, ev.browser(), u, false, "")
			if !script.Redirected() || script.Status != http.StatusFound {
				t.Fatalf("a script gets status %d, want the 302", script.Status)
			}
			if script.Location.String() != loc {
				t.Errorf("page leads to\n%s\nthe redirect is\n%s", loc, script.Location)
			}
			q := script.Query()
			if q.Get("error") == "" || q.Get("state") != "st-1" || q.Get("iss") != ev.srv.Issuer() {
				t.Errorf("redirect %v", q)
			}
		})
	}
	// Redirects without a page: a frame, prompt=none (no UI at all, OIDC
	// Core §3.1.2.1) and a CSC flow (the CSC profiles answer with the 302).
	for _, tt := range []struct {
		name   string
		params url.Values
		dest   string
	}{
		{"frame", with(quiet, "response_type", ""), "iframe"},
		{"prompt_none", with(quiet, "response_type", "", "prompt", "none"), "document"},
		{"csc_service", with(serviceParams(), "response_type", ""), "document"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := navigate(t, ev.browser(), ev.authorizeURL(tt.params), true, tt.dest)
			if !s.Redirected() || s.Status != http.StatusFound {
				t.Fatalf("status %d, want the 302", s.Status)
			}
			if e, _ := errorOf(t, s); e != oauth.CodeInvalidRequest {
				t.Errorf("error %q", e)
			}
		})
	}
}

// TestErrorPageAfterLogin: the user cancels the login page; the browser
// gets the cancelled message, then the same 303 target.
func TestErrorPageAfterLogin(t *testing.T) {
	ev := newEnv(t)
	b := ev.browser()
	s := ev.must(b.Get(ev.authorizeURL(url.Values{"response_type": {"code"}, "client_id": {"rp"}, "redirect_uri": {rpRedirect}, "scope": {"quiet"}, "state": {"st-2"}, "ui_locales": {"en"}})))
	page(t, s)
	req, err := http.NewRequest(http.MethodPost, s.Form.Action.String(), strings.NewReader(s.Form.Values(map[string]string{"decision": "deny"}).Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Mode", "navigate")
	req.Header.Set("Sec-Fetch-Dest", "document")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	got, err := b.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	loc := errorPage(t, got, "en", "You cancelled the sign-in.")
	u, err := url.Parse(loc)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	if q.Get("error") != oauth.CodeAccessDenied || q.Get("error_description") != "Resource owner cancelled the login" || q.Get("state") != "st-2" {
		t.Errorf("redirect %v", q)
	}
}

// changingProfile is a profile with a consent page that asks for the
// signing PIN and shows one recorded item; from the consent call number
// changeAt on (1 = the page), or once changed is set, the item's value is
// different: the data the page showed changed.
type changingProfile struct {
	quietProfile
	calls    atomic.Int32
	changeAt int32
	changed  atomic.Bool
}

func (*changingProfile) Info() oauth.ProfileInfo { return oauth.ProfileInfo{Name: "changing"} }

func (*changingProfile) Match(scopes []string) bool {
	return len(scopes) == 1 && scopes[0] == "changing"
}

func (*changingProfile) Authorize(context.Context, *oauth.AuthorizeRequest) (*oauth.Authorization, error) {
	return &oauth.Authorization{Binding: oauth.Binding{Params: map[string]string{}}}, nil
}

func (p *changingProfile) Consent(context.Context, *oauth.Request) (*oauth.Consent, error) {
	v := "credential A"
	if n := p.calls.Add(1); p.changeAt > 0 && n >= p.changeAt || p.changed.Load() {
		v = "credential B"
	}
	d := sha256.Sum256([]byte(v))
	return &oauth.Consent{
		Title:      oauth.Text{NL: "Ondertekenen", EN: "Sign"},
		Items:      []oauth.ConsentItem{{Label: oauth.Text{NL: "Sleutel", EN: "Key"}, Value: v, Name: "key", Digest: d[:]}},
		RequirePIN: true,
	}, nil
}

// TestConsentInvalidated: the data the consent page showed changes while
// the PIN is checked; no code is issued, the client gets server_error.
// whileHashed changes it while the PIN's hash is being evaluated, so the
// profile must be asked again after the PIN check, not before.
func TestConsentInvalidated(t *testing.T) {
	for _, tt := range []struct {
		name        string
		changeAt    int32
		whileHashed bool
		want        string // "" = a code
	}{
		{"unchanged", 0, false, ""},
		{"changed_during_the_pin_check", 3, false, "consent invalidated"},
		{"changed_while_the_pin_is_hashed", 0, true, "consent invalidated"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := &changingProfile{changeAt: tt.changeAt}
			var ph *probeHasher
			ev := newEnvWith(t, envOptions{passwords: func(c *passwords.Config) {
				ph = newProbeHasher(c.Hasher.(*store.Hasher))
				c.Hasher = ph
			}}, func(c *oauth.Config) { c.Profiles = append(c.Profiles, p) })
			if tt.whileHashed {
				g := ph.hold(alicePIN)
				go func() {
					<-g.entered
					p.changed.Store(true)
					close(g.release)
				}()
			}
			ev.update(func(tx store.Tx) error {
				return tx.CreateClient(&store.Client{ID: "chg", SecretHash: store.HashSecret(rpSecret), RedirectURIs: []string{rpRedirect}, Scopes: []string{"changing"}})
			})
			b := ev.browser()
			s := ev.must(b.Get(ev.authorizeURL(url.Values{"response_type": {"code"}, "client_id": {"chg"}, "redirect_uri": {rpRedirect}, "scope": {"changing"}, "state": {"st-3"}})))
			s = ev.login(b, s, "alice", alicePassword)
			s = ev.approve(b, s, alicePIN)
			if tt.want == "" {
				ev.codeOf(s, rpRedirect, "st-3")
				return
			}
			if e, d := errorOf(t, s); e != oauth.CodeServerError || d != tt.want {
				t.Errorf("redirect error %q %q, want server_error %q", e, d, tt.want)
			}
		})
	}
}

// TestAuthenticationFailure: the login session behind a consent page is
// replaced by another user's login or removed before the user approves;
// no code is issued, the client gets server_error.
func TestAuthenticationFailure(t *testing.T) {
	for _, tt := range []struct {
		name   string
		change func(ev *env, b *oauthtest.Browser)
		want   string // "" = a code
	}{
		{"same_login", func(*env, *oauthtest.Browser) {}, ""},
		{"another_user_logged_in", func(ev *env, b *oauthtest.Browser) {
			q := url.Values{"response_type": {"code"}, "client_id": {"rp"}, "redirect_uri": {rpRedirect}, "scope": {"quiet"}, "state": {"st-b"}, "prompt": {"login"}}
			s := ev.must(b.Get(ev.authorizeURL(q)))
			ev.codeOf(ev.login(b, s, "erin", davePassword), rpRedirect, "st-b")
		}, "authentication failure"},
		{"session_removed", func(ev *env, b *oauthtest.Browser) {
			u, _ := url.Parse(ev.ts.URL + "/oauth2/")
			for _, ck := range b.HTTP.Jar.Cookies(u) {
				if ck.Name == "signd_session" {
					ev.update(func(tx store.Tx) error { return tx.DeleteSession(store.Fingerprint(ck.Value)) })
					return
				}
			}
			ev.t.Fatal("no session cookie")
		}, "authentication failure"},
		{"another_user_logged_in_and_the_first_disabled", func(ev *env, b *oauthtest.Browser) {
			// The login is checked before the account: the browser's
			// session no longer vouches for alice, whatever her state.
			q := url.Values{"response_type": {"code"}, "client_id": {"rp"}, "redirect_uri": {rpRedirect}, "scope": {"quiet"}, "state": {"st-b"}, "prompt": {"login"}}
			s := ev.must(b.Get(ev.authorizeURL(q)))
			ev.codeOf(ev.login(b, s, "erin", davePassword), rpRedirect, "st-b")
			ev.updateUser("alice", func(u *store.User) {
				u.Status = store.UserDisabled
			})
		}, "authentication failure"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ev := newEnv(t)
			b := ev.browser()
			s := ev.must(b.Get(ev.authorizeURL(serviceParams())))
			s = page(t, ev.login(b, s, "alice", alicePassword)) // the consent page
			tt.change(ev, b)
			s = ev.approve(b, s, "")
			if tt.want == "" {
				ev.codeOf(s, rpRedirect, "state-123")
				return
			}
			if e, d := errorOf(t, s); e != oauth.CodeServerError || d != tt.want {
				t.Errorf("redirect error %q %q, want server_error %q", e, d, tt.want)
			}
		})
	}
}
