package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/signd/signd/oauth/oauthtest"
	"github.com/signd/signd/store/storetest"
)

// rateLimitConfig is newEnv's extra configuration of the rate-limit tests:
// two form posts per address, then one every 10 s; two token requests per
// client, then one a second.
const rateLimitConfig = "ratelimit:\n  forms:\n    rate: 0.1\n    burst: 2\n  token:\n    rate: 1\n    burst: 2\n"

// loginFormPoster opens a login page of rp in a fresh browser and returns a
// function that posts it (a wrong password) with X-Forwarded-For xff
// ("" = none), as a browser would.
func loginFormPoster(t *testing.T, base string) func(xff string) *oauthtest.Step {
	t.Helper()
	conf, _ := journeyClient(base)
	conf.Scopes = []string{"service"}
	b := oauthtest.NewBrowser(nil)
	s, err := b.Get(conf.AuthCodeURL("st", oauth2.SetAuthURLParam("lang", "en")))
	if err != nil || s.Form == nil || !s.Form.Has("password") {
		t.Fatalf("no login page: %v %+v", err, s)
	}
	form := s.Form
	return func(xff string) *oauthtest.Step {
		t.Helper()
		h := browserHeaders()
		if xff != "" {
			h.Set("X-Forwarded-For", xff)
		}
		return postPage(t, b, form.Action.String(), form.Values(map[string]string{"username": "alice", "password": "wrong"}), h)
	}
}

// wantTooManyPage checks the daemon's 429 page (English) with Retry-After.
func wantTooManyPage(t *testing.T, what string, s *oauthtest.Step, retryAfter string) {
	t.Helper()
	if s.Status != http.StatusTooManyRequests || s.Header.Get("Retry-After") != retryAfter ||
		!strings.Contains(oauthtest.Text(s.Body), "Too many requests came from your address") {
		t.Errorf("%s: got %d Retry-After %q: %.200s; want the 429 page, Retry-After %s", what, s.Status, s.Header.Get("Retry-After"), oauthtest.Text(s.Body), retryAfter)
	}
}

// TestRateLimitDaemon: the rate limits of the real daemon. Without
// server.trusted_proxies, spoofed X-Forwarded-For headers all land in the
// bucket of the socket peer: the third login post is refused (429 page,
// Retry-After) whatever address it claims; the token endpoint refuses rp's
// third request in RFC 6749 JSON; signd_ratelimit_refused_total counts
// both on /metrics; the daemon's clock refills the buckets.
func TestRateLimitDaemon(t *testing.T) {
	e := newEnv(t, rateLimitConfig)
	journeyAlice(t, e)
	clock := storetest.NewClock(time.Now())
	addr, _ := e.startDaemonWith(func(a *app) { a.now = clock.Now })
	base := "http://" + addr

	post := loginFormPoster(t, base)
	for i, xff := range []string{"", "203.0.113.1"} {
		if s := post(xff); s.Status != http.StatusOK || s.Form == nil {
			t.Fatalf("login post %d: %d %.200s", i+1, s.Status, oauthtest.Text(s.Body))
		}
	}
	router := openAPIRouter(t)
	for _, xff := range []string{"203.0.113.2", "198.51.100.7, 203.0.113.3", "2001:db8::1"} {
		s := post(xff)
		wantTooManyPage(t, "spoofed X-Forwarded-For "+xff, s, "10")
		checkOpenAPI(t, router, http.MethodPost, "/oauth2/login", http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}, "",
			s.Status, s.Header, []byte(s.Body))
	}

	bogus := url.Values{"grant_type": {"authorization_code"}, "code": {"not-a-code"}, "redirect_uri": {"https://rp.example/cb"}}
	token := func() (*http.Response, map[string]any) {
		t.Helper()
		res, err := oauthtest.PostClientForm(http.DefaultClient, base+"/oauth2/token", bogus, "rp", journeySecret)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		checkOpenAPI(t, router, http.MethodPost, "/oauth2/token", http.Header{"Content-Type": {"application/x-www-form-urlencoded"}},
			bogus.Encode(), res.StatusCode, res.Header, raw)
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("token endpoint: %d %q", res.StatusCode, raw)
		}
		return res, m
	}
	for i := range 2 {
		if res, m := token(); res.StatusCode != http.StatusBadRequest || m["error"] != "invalid_grant" {
			t.Fatalf("token request %d: %d %v", i+1, res.StatusCode, m)
		}
	}
	res, m := token()
	if res.StatusCode != http.StatusTooManyRequests || m["error"] != "temporarily_unavailable" ||
		m["error_description"] != "Too many requests, try again later" || res.Header.Get("Retry-After") != "1" {
		t.Errorf("third token request: %d %v Retry-After %q; want 429 temporarily_unavailable, 1", res.StatusCode, m, res.Header.Get("Retry-After"))
	}
	waitMetrics(t, e, `signd_ratelimit_refused_total{limit="forms"} 3`, `signd_ratelimit_refused_total{limit="token"} 1`,
		`signd_ratelimit_refused_total{limit="timestamp"} 0`)

	clock.Advance(10 * time.Second)
	if s := post("203.0.113.4"); s.Status != http.StatusOK || s.Form == nil {
		t.Errorf("login post after 10s: %d %.200s", s.Status, oauthtest.Text(s.Body))
	}
	if res, m := token(); res.StatusCode != http.StatusBadRequest {
		t.Errorf("token request after 10s: %d %v", res.StatusCode, m)
	}
}

// TestRateLimitBehindProxy: with the loopback peer a trusted proxy
// (server.trusted_proxies), the limit is per client address that the
// proxy appended; what a client writes to the left of it picks no bucket.
func TestRateLimitBehindProxy(t *testing.T) {
	e := newEnv(t, rateLimitConfig)
	e.setConfig("  listen: 127.0.0.1:0\n", "  listen: 127.0.0.1:0\n  trusted_proxies: [127.0.0.1]\n")
	journeyAlice(t, e)
	addr, _ := e.startDaemon()
	post := loginFormPoster(t, "http://"+addr)
	for i := range 2 {
		if s := post(fmt.Sprintf("198.51.100.%d, 203.0.113.9", i)); s.Status != http.StatusOK {
			t.Fatalf("login post %d: %d %.200s", i+1, s.Status, oauthtest.Text(s.Body))
		}
	}
	wantTooManyPage(t, "a new left part", post("198.51.100.77, 203.0.113.9"), "10")
	for _, xff := range []string{"203.0.113.10", "198.51.100.1, 203.0.113.11"} {
		if s := post(xff); s.Status != http.StatusOK {
			t.Errorf("another client %s: %d %.200s", xff, s.Status, oauthtest.Text(s.Body))
		}
	}
}
