package oauth_test

import (
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/signd/signd/oauth"
	"github.com/signd/signd/oauth/browser"
	"github.com/signd/signd/oauth/oauthtest"
	"github.com/signd/signd/oauth/ratelimit"
	"github.com/signd/signd/store/storetest"
)

// limited returns a rate limit on the clock now.
func limited(t *testing.T, name string, rate float64, burst int, now func() time.Time) *ratelimit.Limiter {
	l, err := ratelimit.New(ratelimit.Config{Name: name, Rate: rate, Burst: burst, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// fromAddress is a transport whose requests come from addr: the test
// router believes X-Forwarded-For from its loopback peer.
type fromAddress struct {
	rt   http.RoundTripper
	addr string
}

func (f fromAddress) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Forwarded-For", f.addr)
	return f.rt.RoundTrip(r)
}

func (ev *env) browserFrom(addr string) *oauthtest.Browser {
	return oauthtest.NewBrowser(fromAddress{ev.ts.Client().Transport, addr})
}

// wantTokenTooMany checks an RFC 6749 §5.2 answer of a client over its
// limit: 429 temporarily_unavailable, Retry-After, no-store.
func wantTokenTooMany(t *testing.T, resp *http.Response, body map[string]any, retryAfter string) {
	t.Helper()
	if resp.StatusCode != http.StatusTooManyRequests || body["error"] != "temporarily_unavailable" ||
		body["error_description"] != "Too many requests, try again later" || len(body) != 2 {
		t.Errorf("got %d %v, want 429 temporarily_unavailable", resp.StatusCode, body)
	}
	if got := resp.Header.Get("Retry-After"); got != retryAfter {
		t.Errorf("Retry-After %q, want %q", got, retryAfter)
	}
	if resp.Header.Get("Cache-Control") != "no-store" || resp.Header.Get("Content-Type") != "application/json;charset=UTF-8" {
		t.Errorf("headers %v", resp.Header)
	}
}

// TestTokenRateLimit: the token endpoint is limited per authenticated
// client. Past the burst the client gets 429 (RFC 6749 JSON, Retry-After)
// before its code is looked at, so the code stays good; another client is
// unaffected; requests that fail client authentication take nothing from
// the client's bucket (nobody can spend a client's requests by naming
// it); the clock refills; parallel requests get no more than the burst.
func TestTokenRateLimit(t *testing.T) {
	ev := newEnv(t, func(c *oauth.Config) { c.TokenLimit = limited(t, "token", 1, 3, c.Now) })
	code, _ := ev.serviceCode(serviceParams())
	bogus := url.Values{"grant_type": {"authorization_code"}, "code": {"not-a-code"}, "redirect_uri": {rpRedirect}}
	for i := range 3 {
		if resp, body := ev.tokenRequest(bogus, "rp", rpSecret); resp.StatusCode != http.StatusBadRequest || body["error"] != "invalid_grant" {
			t.Fatalf("request %d of the burst: %d %v", i+1, resp.StatusCode, body)
		}
	}
	redeem := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {rpRedirect}}
	resp, body := ev.tokenRequest(redeem, "rp", rpSecret)
	wantTokenTooMany(t, resp, body, "1")
	if resp, body := ev.tokenRequest(bogus, "rp2", rp2Secret); resp.StatusCode != http.StatusBadRequest || body["error"] != "invalid_grant" {
		t.Errorf("another client: %d %v", resp.StatusCode, body)
	}

	ev.clock.Advance(time.Second) // one request back
	for range 5 {
		if resp, body := ev.tokenRequest(bogus, "rp", "a guessed secret"); resp.StatusCode != http.StatusUnauthorized || body["error"] != "invalid_client" {
			t.Fatalf("wrong secret: %d %v", resp.StatusCode, body)
		}
	}
	if resp, body := ev.tokenRequest(redeem, "rp", rpSecret); resp.StatusCode != http.StatusOK || body["access_token"] == nil {
		t.Fatalf("the code after the refill (and after wrong secrets): %d %v", resp.StatusCode, body)
	}
	resp, body = ev.tokenRequest(bogus, "rp", rpSecret)
	wantTokenTooMany(t, resp, body, "1")

	ev.clock.Advance(time.Minute) // full again: 3
	var passed, refused atomic.Int32
	storetest.AtOnce(20, func(int) {
		resp, body := ev.tokenRequest(bogus, "rp", rpSecret)
		switch {
		case resp.StatusCode == http.StatusBadRequest:
			passed.Add(1)
		case resp.StatusCode == http.StatusTooManyRequests:
			refused.Add(1)
		default:
			t.Errorf("parallel: %d %v", resp.StatusCode, body)
		}
	})
	if passed.Load() != 3 || refused.Load() != 17 {
		t.Errorf("20 parallel token requests: %d passed, %d refused; want the burst, 3, and 17", passed.Load(), refused.Load())
	}
}

// wantPageTooMany checks the 429 error page in lang with Retry-After.
func wantPageTooMany(t *testing.T, s *oauthtest.Step, lang, retryAfter string) {
	t.Helper()
	text := map[string]string{
		"en": "Too many requests came from your address. Please wait a moment and try again.",
		"nl": "Er kwamen te veel verzoeken van uw adres. Wacht even en probeer het dan opnieuw.",
	}[lang]
	if s.Status != http.StatusTooManyRequests || !strings.Contains(oauthtest.Text(s.Body), text) ||
		s.Header.Get("Content-Language") != lang || !strings.HasPrefix(s.Header.Get("Content-Type"), "text/html") {
		t.Errorf("want the 429 page in %s, got %d %q: %.300s", lang, s.Status, s.Header.Get("Content-Language"), oauthtest.Text(s.Body))
	}
	if got := s.Header.Get("Retry-After"); got != retryAfter {
		t.Errorf("Retry-After %q, want %q", got, retryAfter)
	}
}

// TestFormRateLimit: the login form and the account page's forms share
// one bucket per remote address. Past the burst a post gets the 429 page
// in the page's language with Retry-After, and the password is not
// checked (the right one does not sign in); another address signs in;
// the clock refills; parallel posts get no more than the burst.
func TestFormRateLimit(t *testing.T) {
	ev := buildEnvWith(t, memoryStore(t), false, envOptions{account: true, browser: func(c *browser.Config) {
		c.FormLimit = limited(t, "forms", 0.1, 3, c.Now)
	}})
	a := ev.browserFrom("203.0.113.7")
	s := ev.must(a.Get(ev.authorizeURL(with(serviceParams(), "lang", "en"))))
	loginPage := page(t, s)
	for i := range 3 {
		s = ev.must(a.Submit(loginPage.Form, map[string]string{"username": "alice", "password": "wrong"}, "approve"))
		if s.Status != http.StatusOK || s.Form == nil || !s.Form.Has("password") {
			t.Fatalf("wrong password %d: %d %.300s", i+1, s.Status, oauthtest.Text(s.Body))
		}
	}
	s = ev.must(a.Submit(loginPage.Form, map[string]string{"username": "alice", "password": alicePassword}, "approve"))
	wantPageTooMany(t, s, "en", "10")
	if s.Redirected() || s.Form != nil {
		t.Errorf("the refused login went on: %+v", s)
	}
	// The account page's login form draws on the same bucket; its page
	// is Dutch without lang.
	s = ev.must(a.Get(ev.ts.URL + "/oauth2/account"))
	v := page(t, s).Form.Values(map[string]string{"username": "alice", "password": alicePassword})
	wantPageTooMany(t, ev.accountPost(a, "/oauth2/account/login", v, nil), "nl", "10")

	// Another address is unaffected.
	b := ev.browserFrom("203.0.113.8")
	s = ev.login(b, ev.must(b.Get(ev.authorizeURL(serviceParams()))), "alice", alicePassword)
	if s.Status != http.StatusOK || s.Form == nil || s.Form.Has("password") {
		t.Errorf("another address did not reach the consent page: %d %.300s", s.Status, oauthtest.Text(s.Body))
	}

	ev.clock.Advance(10 * time.Second)
	s = ev.must(a.Submit(loginPage.Form, map[string]string{"username": "alice", "password": alicePassword}, "approve"))
	if s.Status != http.StatusOK || s.Form == nil || s.Form.Has("password") {
		t.Errorf("after 10s the right password did not reach the consent page: %d %.300s", s.Status, oauthtest.Text(s.Body))
	}

	c := ev.browserFrom("2001:db8:7::1")
	loginPage = page(t, ev.must(c.Get(ev.authorizeURL(serviceParams()))))
	var passed, refused atomic.Int32
	storetest.AtOnce(16, func(int) {
		s, err := c.Submit(loginPage.Form, map[string]string{"username": "nobody", "password": "guess"}, "approve")
		switch {
		case err != nil:
			t.Error(err)
		case s.Status == http.StatusOK:
			passed.Add(1)
		case s.Status == http.StatusTooManyRequests:
			refused.Add(1)
		default:
			t.Errorf("parallel: %d %.200s", s.Status, oauthtest.Text(s.Body))
		}
	})
	if passed.Load() != 3 || refused.Load() != 13 {
		t.Errorf("16 parallel login posts: %d passed, %d refused; want the burst, 3, and 13", passed.Load(), refused.Load())
	}
}
