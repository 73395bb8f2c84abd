package oauth_test

import (
	"crypto/sha256"
	"encoding/base64"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/signd/signd/oauth/oauthtest"
	"github.com/signd/signd/oauth/pages"
)

// TestLanguages: Dutch by default; English when ui_locales (first
// supported wins) or lang asks for it.
func TestLanguages(t *testing.T) {
	ev := newEnv(t)
	tests := []struct {
		name string
		kv   []string
		want string
	}{
		{"default_is_dutch", nil, "nl"},
		{"ui_locales_en", []string{"ui_locales", "en"}, "en"},
		{"ui_locales_en_GB", []string{"ui_locales", "en-GB"}, "en"},
		{"ui_locales_unsupported_se_is_dutch", []string{"ui_locales", "se"}, "nl"},
		{"ui_locales_first_supported_wins", []string{"ui_locales", "fr en nl"}, "en"},
		{"ui_locales_nl_before_en", []string{"ui_locales", "nl en"}, "nl"},
		{"ui_locales_garbage_is_dutch", []string{"ui_locales", "!!! ###"}, "nl"},
		{"lang_en", []string{"lang", "en-US"}, "en"},
		{"ui_locales_before_lang", []string{"ui_locales", "nl", "lang", "en"}, "nl"},
		{"unsupported_ui_locales_falls_to_lang", []string{"ui_locales", "de", "lang", "en"}, "en"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := page(t, ev.must(ev.browser().Get(ev.authorizeURL(with(serviceParams(), tt.kv...)))))
			if !strings.Contains(s.Body, `<html lang="`+tt.want+`">`) || s.Header.Get("Content-Language") != tt.want {
				t.Errorf("page language: %.200s", s.Body)
			}
			want := map[string]string{"nl": "Wachtwoord", "en": "Password"}[tt.want]
			if !strings.Contains(s.Body, want) {
				t.Errorf("page lacks %q", want)
			}
		})
	}
	// The error page follows the language too.
	s := ev.must(ev.browser().Get(ev.authorizeURL(with(serviceParams(), "client_id", "x", "ui_locales", "en"))))
	if !strings.Contains(s.Body, "The application (client_id) is unknown.") {
		t.Errorf("English error page: %.500s", s.Body)
	}
}

// TestPageSecurityHeaders: no script, the inline style by hash, the
// client's origin allowed as form target (Chromium applies form-action to
// the redirect after a form post), no caching.
func TestPageSecurityHeaders(t *testing.T) {
	ev := newEnv(t)
	s := page(t, ev.must(ev.browser().Get(ev.authorizeURL(serviceParams()))))
	csp := s.Header.Get("Content-Security-Policy")
	style := regexp.MustCompile(`(?s)<style>(.*?)</style>`).FindStringSubmatch(s.Body)
	if style == nil {
		t.Fatal("no style block")
	}
	sum := sha256.Sum256([]byte(style[1]))
	for _, want := range []string{
		"default-src 'none'", "frame-ancestors 'none'", "base-uri 'none'",
		"form-action 'self' https://rp.example",
		"style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'",
	} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "script") || strings.Contains(csp, "unsafe") || strings.Contains(s.Body, "<script") {
		t.Errorf("script or unsafe in %q", csp)
	}
	// same-origin, not no-referrer: under no-referrer browsers send
	// "Origin: null" with the page's own form post, which is refused.
	if s.Header.Get("Referrer-Policy") != "same-origin" || !strings.Contains(s.Body, `<meta name="referrer" content="same-origin">`) {
		t.Errorf("Referrer-Policy %q", s.Header.Get("Referrer-Policy"))
	}
	if s.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("Cache-Control %q", s.Header.Get("Cache-Control"))
	}
	// The form contract.
	if s.Form.Action.Path != "/oauth2/login" || s.Form.Method != "POST" || !s.Form.Has("otp") ||
		s.Form.Types["request"] != "hidden" || s.Form.Types["csrf_token"] != "hidden" || len(s.Form.Buttons) != 2 {
		t.Errorf("login form %+v", s.Form)
	}
}

// TestLanguageRule: every page type follows the one rule (pages.Lang):
// ui_locales, then lang, then the language switch's cookie, then
// Accept-Language, then Dutch. Before it the login page ignored
// Accept-Language, the account page ignored ui_locales and the cookie and
// the cross-site refusal of an unknown request was always Dutch.
func TestLanguageRule(t *testing.T) {
	ev := newAccountEnv(t)
	type source struct{ query, cookie, accept string }
	cases := []struct {
		name string
		src  source
		want string
	}{
		{"nothing", source{}, "nl"},
		{"accept_language_en", source{accept: "en-US,en;q=0.9"}, "en"},
		{"accept_language_unsupported", source{accept: "de-DE"}, "nl"},
		{"cookie_beats_accept_language", source{cookie: "en", accept: "nl-NL"}, "en"},
		{"cookie_nl_beats_accept_language_en", source{cookie: "nl", accept: "en"}, "nl"},
		{"ui_locales_beats_cookie", source{query: "nl", cookie: "en", accept: "en"}, "nl"},
		{"ui_locales_en", source{query: "en"}, "en"},
	}
	get := func(b *oauthtest.Browser, method, u string, src source, h http.Header, body url.Values) *oauthtest.Step {
		t.Helper()
		var rd io.Reader
		if body != nil {
			rd = strings.NewReader(body.Encode())
		}
		req, err := http.NewRequest(method, u, rd)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range h {
			req.Header[k] = v
		}
		if body != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		if src.cookie != "" {
			req.Header.Set("Cookie", pages.LangCookie+"="+src.cookie)
		}
		if src.accept != "" {
			req.Header.Set("Accept-Language", src.accept)
		}
		return ev.must(b.Do(req))
	}
	withQuery := func(p url.Values, src source) url.Values {
		if src.query != "" {
			p = with(p, "ui_locales", src.query)
		}
		return p
	}
	pageTypes := []struct {
		name string
		open func(src source) *oauthtest.Step
		text map[string]string
	}{
		{"login", func(src source) *oauthtest.Step {
			return get(ev.browser(), http.MethodGet, ev.authorizeURL(withQuery(serviceParams(), src)), src, nil, nil)
		}, map[string]string{"nl": "Wachtwoord", "en": "Password"}},
		{"consent", func(src source) *oauthtest.Step {
			b := ev.browser()
			s := get(b, http.MethodGet, ev.authorizeURL(withQuery(serviceParams(), src)), src, nil, nil)
			return ev.login(b, page(t, s), "alice", alicePassword)
		}, map[string]string{"nl": "Toestaan", "en": "Approve"}},
		{"error", func(src source) *oauthtest.Step {
			return get(ev.browser(), http.MethodGet, ev.authorizeURL(withQuery(with(serviceParams(), "client_id", "nope"), src)), src, nil, nil)
		}, map[string]string{"nl": "De toepassing (client_id) is onbekend.", "en": "The application (client_id) is unknown."}},
		{"account", func(src source) *oauthtest.Step {
			u := ev.ts.URL + "/oauth2/account"
			if src.query != "" {
				u += "?ui_locales=" + src.query
			}
			return get(ev.browser(), http.MethodGet, u, src, nil, nil)
		}, map[string]string{"nl": "Wachtwoord", "en": "Password"}},
		{"cross_site_refusal", func(src source) *oauthtest.Step {
			u := ev.ts.URL + "/oauth2/login"
			if src.query != "" {
				u += "?ui_locales=" + src.query
			}
			return get(ev.browser(), http.MethodPost, u, src, chromiumCrossSite(), url.Values{"request": {"unknown"}, "csrf_token": {"x"}})
		}, msgCrossSite},
		{"account_cross_site_refusal", func(src source) *oauthtest.Step {
			u := ev.ts.URL + "/oauth2/account/login"
			if src.query != "" {
				u += "?ui_locales=" + src.query
			}
			return get(ev.browser(), http.MethodPost, u, src, chromiumCrossSite(), url.Values{"username": {"alice"}})
		}, msgCrossSite},
	}
	for _, pt := range pageTypes {
		for _, tt := range cases {
			t.Run(pt.name+"/"+tt.name, func(t *testing.T) {
				s := pt.open(tt.src)
				text := oauthtest.Text(s.Body)
				if got := s.Header.Get("Content-Language"); got != tt.want || !strings.Contains(s.Body, `<html lang="`+tt.want+`">`) {
					t.Errorf("page in %q, want %s: %d %.300s", got, tt.want, s.Status, text)
				}
				if !strings.Contains(text, pt.text[tt.want]) {
					t.Errorf("page lacks %q: %.500s", pt.text[tt.want], text)
				}
			})
		}
	}
}
