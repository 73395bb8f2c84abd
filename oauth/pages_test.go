package oauth_test

import (
	"crypto/sha256"
	"encoding/base64"
	"regexp"
	"strings"
	"testing"
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
