package main

import (
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/signd/signd/oauth/pages"
)

// TestEnrollmentLanguageRule: the enrollment pages — the form, the page of
// a link that is not open and the refusal of a post from another site —
// follow the one language rule of every page (pages.Lang, as
// oauth.TestLanguageRule shows for the others): ui_locales, then the
// language switch's cookie, then Accept-Language, then Dutch. The
// cross-site refusal comes before the form is read, so the form's lang
// field does not count there.
func TestEnrollmentLanguageRule(t *testing.T) {
	e := newEnv(t, "")
	addr := atBaseURL(t, e)
	out := e.must("", "user", "add", "bob", "--enroll")
	m := regexp.MustCompile(`enrollment link: (http://\S+/oauth2/enroll/bob~[A-Za-z0-9_-]{43})\n`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("user add --enroll:\n%s", out)
	}
	link := m[1]
	if got, _ := e.startDaemon(); got != addr {
		t.Fatalf("the daemon listens on %s, not at base_url %s", got, addr)
	}
	crossSite := http.Header{"Origin": {"https://evil.example"}, "Sec-Fetch-Site": {"cross-site"}, "Sec-Fetch-Mode": {"navigate"},
		"Sec-Fetch-Dest": {"document"}, "Content-Type": {"application/x-www-form-urlencoded"}}
	pageTypes := []struct {
		name   string
		method string
		url    string
		hdr    http.Header
		body   string
		status int
		text   map[string]string
	}{
		{"form", http.MethodGet, link, nil, "", http.StatusOK,
			map[string]string{"nl": "Ondertekenings-PIN", "en": "Signing PIN"}},
		{"link_not_open", http.MethodGet, "http://" + addr + "/oauth2/enroll/nobody~" + strings.Repeat("A", 43), nil, "", http.StatusNotFound,
			map[string]string{"nl": "Deze link is ongeldig", "en": "This link is invalid, used or expired."}},
		{"cross_site_refusal", http.MethodPost, link, crossSite, url.Values{"lang": {"de"}, "pin": {"1234"}}.Encode(), http.StatusForbidden,
			map[string]string{"nl": "vanaf een andere website verstuurd", "en": "sent from another website"}},
	}
	cases := []struct {
		name                  string
		query, cookie, accept string
		want                  string
	}{
		{"nothing", "", "", "", "nl"},
		{"accept_language_en", "", "", "en-US,en;q=0.9", "en"},
		{"accept_language_unsupported", "", "", "de-DE", "nl"},
		{"cookie_beats_accept_language", "", "en", "nl-NL", "en"},
		{"cookie_nl_beats_accept_language_en", "", "nl", "en", "nl"},
		{"ui_locales_beats_cookie", "nl", "en", "en", "nl"},
		{"ui_locales_en", "en", "", "", "en"},
	}
	for _, pt := range pageTypes {
		for _, tt := range cases {
			t.Run(pt.name+"/"+tt.name, func(t *testing.T) {
				u := pt.url
				if tt.query != "" {
					u += "?ui_locales=" + tt.query
				}
				req, err := http.NewRequest(pt.method, u, strings.NewReader(pt.body))
				if err != nil {
					t.Fatal(err)
				}
				for k, v := range pt.hdr {
					req.Header[k] = v
				}
				if tt.cookie != "" {
					req.Header.Set("Cookie", pages.LangCookie+"="+tt.cookie)
				}
				if tt.accept != "" {
					req.Header.Set("Accept-Language", tt.accept)
				}
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				raw, _ := io.ReadAll(res.Body)
				res.Body.Close()
				body := string(raw)
				if got := res.Header.Get("Content-Language"); res.StatusCode != pt.status || got != tt.want ||
					!strings.Contains(body, `<html lang="`+tt.want+`">`) {
					t.Errorf("%d in %q, want %d in %s: %.300s", res.StatusCode, got, pt.status, tt.want, body)
				}
				if !strings.Contains(body, pt.text[tt.want]) {
					t.Errorf("page lacks %q: %.600s", pt.text[tt.want], body)
				}
			})
		}
	}
	// Every request above left the link open.
	if show := e.must("", "user", "show", "bob"); !strings.Contains(show, "enrollment open: until ") {
		t.Errorf("the link was used:\n%s", show)
	}
}
