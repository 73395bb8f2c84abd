package oidc_test

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/signd/signd/oauth/oauthtest"
	"github.com/signd/signd/store"
)

// navigating adds the Fetch Metadata of a browser's top-level navigation
// to every request.
type navigating struct{ rt http.RoundTripper }

func (n navigating) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Sec-Fetch-Mode", "navigate")
	r.Header.Set("Sec-Fetch-Dest", "document")
	r.Header.Set("Sec-Fetch-Site", "same-origin")
	return n.rt.RoundTrip(r)
}

var backLink = regexp.MustCompile(`<a class="button" href="([^"]*)">`)

// TestItem19ErrorPages: the service specification's error table says the
// user also sees a page in Dutch. Each case, in a browser, ends on a page
// with the case's message and a link (and meta refresh) to the same error
// redirect a strict client gets (TestItem19SeedErrors).
func TestItem19ErrorPages(t *testing.T) {
	ev := newFlowEnv(t)
	scope := "openid email com.vendor.personal_info"
	tests := []struct {
		name       string
		run        func(b *oauthtest.Browser, p url.Values) *oauthtest.Step
		code, desc string
		text       string
	}{
		{"ChallengeExpired", func(b *oauthtest.Browser, p url.Values) *oauthtest.Step {
			s := ev.must(b.Get(ev.authorizeURL(p)))
			ev.clock.Advance(10*time.Minute + time.Second)
			return ev.login(b, s, "alice", alicePassword)
		}, "access_denied", "authentication challenge expired", "De tijd om in te loggen is verlopen"},
		{"EmailUnverified", func(b *oauthtest.Browser, p url.Values) *oauthtest.Step {
			return ev.login(b, ev.must(b.Get(ev.authorizeURL(p))), "bob", bobPassword)
		}, "access_denied", "user email is unverified", "Uw e-mailadres is nog niet bevestigd."},
		{"ConsentRejected", func(b *oauthtest.Browser, p url.Values) *oauthtest.Step {
			s := ev.login(b, ev.must(b.Get(ev.authorizeURL(p))), "alice", alicePassword)
			return ev.answer(b, s, "deny")
		}, "access_denied", "Resource owner rejected consent", "U heeft geen toestemming gegeven om uw gegevens te delen."},
		{"AuthenticationFailure", func(b *oauthtest.Browser, p url.Values) *oauthtest.Step {
			s := ev.login(b, ev.must(b.Get(ev.authorizeURL(p))), "alice", alicePassword)
			u, _ := url.Parse(ev.issuer + "/oauth2/")
			for _, ck := range b.HTTP.Jar.Cookies(u) {
				if ck.Name == "signd_session" { // the login session is invalidated
					ev.update(func(tx store.Tx) error { return tx.DeleteSession(store.Fingerprint(ck.Value)) })
				}
			}
			return ev.answer(b, s, "approve")
		}, "server_error", "authentication failure", "Er is aan onze kant een technisch probleem opgetreden."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := params("rp", scope, "state", "st-"+tt.name)
			s := tt.run(oauthtest.NewBrowser(navigating{ev.ts.Client().Transport}), p)
			if s.Redirected() || s.Status != http.StatusOK || s.Header.Get("Content-Language") != "nl" {
				t.Fatalf("want the Dutch error page, got %d %v", s.Status, s.Location)
			}
			if !strings.Contains(s.Body, html.EscapeString(tt.text)) {
				t.Errorf("page without %q: %s", tt.text, oauthtest.Text(s.Body))
			}
			m := backLink.FindStringSubmatch(s.Body)
			if m == nil {
				t.Fatalf("no link back: %s", oauthtest.Text(s.Body))
			}
			u, err := url.Parse(html.UnescapeString(m[1]))
			if err != nil {
				t.Fatal(err)
			}
			q := u.Query()
			if u.Scheme+"://"+u.Host+u.Path != redirectOf("rp") || q.Get("error") != tt.code ||
				q.Get("error_description") != tt.desc || q.Get("state") != p.Get("state") || q.Get("iss") != ev.issuer {
				t.Errorf("link back %s", u)
			}
		})
	}
}
