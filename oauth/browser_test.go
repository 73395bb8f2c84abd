package oauth_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/signd/signd/oauth/oauthtest/chromiumtest"
	"github.com/signd/signd/store"
)

// TestBrowser drives headless Chromium through the login and consent
// pages in Dutch and in English — a credential flow (wrong password, login,
// signing PIN) and then a service flow on the login session — up to the
// client's redirect URI, and keeps a screenshot of every page under
// testdata-artifacts/oauth-browser (or $SIGND_TEST_ARTIFACTS). It checks
// what only a browser shows: the pages work without JavaScript under their
// CSP, the session cookie is kept, and the redirect after the form post is
// not blocked by form-action. Then the account page, signed in on the same
// session, signs out: the login form follows, on the account page and in
// the next authorization request.
//
// Chromium is required (CI installs Debian's chromium); set
// SIGND_SKIP_BROWSER=1 to skip the test on a machine without it.
func TestBrowser(t *testing.T) {
	artifacts := chromiumtest.ArtifactsDir(t, filepath.Join("..", "testdata-artifacts"), "oauth-browser")

	// The issuer is the test server's own URL: Chromium's Origin on the form
	// posts must be the issuer's origin.
	ev := newBrowserEnv(t)
	// The client: a page that shows what it received.
	rp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<!DOCTYPE html><title>Client</title><h1>Client callback</h1><p id=result>%s</p>",
			strings.Join(sortedKeys(r.URL.Query()), " "))
	}))
	t.Cleanup(rp.Close)
	ev.update(func(tx store.Tx) error {
		return tx.CreateClient(&store.Client{
			ID: "browser-rp", Name: "Browser Client", SecretHash: store.HashSecret(rpSecret),
			RedirectURIs: []string{rp.URL + "/cb"}, Scopes: []string{"service", "credential"},
		})
	})

	for _, lang := range []string{"nl", "en"} {
		t.Run(lang, func(t *testing.T) {
			words := map[string]map[string]string{
				"nl": {"login": "Inloggen", "error": "De inloggegevens zijn onjuist", "consent": "Ondertekenen met uw sleutel", "service": "Toegang tot uw ondertekeningssleutels",
					"logout": "Uitloggen", "account-login": "Log in om uw ondertekeningssleutels te bekijken"},
				"en": {"login": "Sign in", "error": "The sign-in details are wrong", "consent": "Sign with your key", "service": "Access to your signing keys",
					"logout": "Sign out", "account-login": "Sign in to see your signing keys"},
			}[lang]
			bctx := chromiumtest.Start(t, 90*time.Second)

			shot := func(name string) {
				t.Helper()
				png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
				if err != nil {
					t.Fatalf("screenshot %s: %v", name, err)
				}
				if err := os.WriteFile(filepath.Join(artifacts, lang+"-"+name+".png"), png, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			bodyText := func() string {
				t.Helper()
				s, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS("body")))
				if err != nil {
					t.Fatal(err)
				}
				return s
			}
			do := chromiumtest.Steps(t, bctx)
			submit := func(what, button string) {
				t.Helper()
				if _, err := chromedp.RunResponse(bctx, chromedp.Click(chromedp.CSS(`button[name=decision][value=`+button+`]`))); err != nil {
					t.Fatalf("%s: %v", what, err)
				}
			}
			authorize := func(params url.Values) string {
				params.Set("client_id", "browser-rp")
				params.Set("redirect_uri", rp.URL+"/cb")
				params.Set("ui_locales", lang)
				return ev.authorizeURL(params)
			}
			landed := func(state string) {
				t.Helper()
				loc, err := chromedp.Run(bctx, chromedp.Location())
				if err != nil {
					t.Fatal(err)
				}
				u, err := url.Parse(loc)
				if err != nil || !strings.HasPrefix(loc, rp.URL+"/cb?") {
					t.Fatalf("the browser is at %s, want the client's redirect URI (form-action blocked the redirect?); page: %s", loc, bodyText())
				}
				q := u.Query()
				if q.Get("code") == "" || q.Get("state") != state || q.Get("iss") != ev.srv.Issuer() {
					t.Fatalf("callback query %v", q)
				}
				resp, body := ev.tokenRequest(url.Values{"grant_type": {"authorization_code"}, "code": {q.Get("code")}, "redirect_uri": {rp.URL + "/cb"}}, "browser-rp", rpSecret)
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("exchange of the browser's code: %d %v", resp.StatusCode, body)
				}
			}

			// Credential flow: login page, a wrong password, login, consent with PIN.
			p := credentialParams(credAlice)
			p.Set("state", "browser-"+lang+"-1")
			do("open the authorization request", chromedp.Navigate(authorize(p)), chromedp.WaitVisible(chromedp.ID("username")))
			if s := bodyText(); !strings.Contains(s, words["login"]) || !strings.Contains(s, "Browser Client") {
				t.Fatalf("login page: %s", s)
			}
			shot("1-login")
			do("type a wrong password", chromedp.SendKeys(chromedp.ID("username"), "alice"), chromedp.SendKeys(chromedp.ID("password"), "wrong password"))
			submit("log in", "approve")
			do("wait for the login page", chromedp.WaitVisible(chromedp.CSS(".error")))
			if s := bodyText(); !strings.Contains(s, words["error"]) {
				t.Fatalf("login error page: %s", s)
			}
			shot("2-login-error")
			do("type the password", chromedp.SendKeys(chromedp.ID("password"), alicePassword))
			submit("log in", "approve")
			do("wait for the consent page", chromedp.WaitVisible(chromedp.ID("pin")))
			if s := bodyText(); !strings.Contains(s, words["consent"]) || !strings.Contains(s, strings.TrimSpace(strings.Repeat("abab ", 16))) ||
				!strings.Contains(s, "Alice Example, Example BV") {
				t.Fatalf("consent page: %s", s)
			}
			shot("3-consent-credential")
			do("type the PIN", chromedp.SendKeys(chromedp.ID("pin"), alicePIN))
			submit("approve", "approve")
			landed("browser-" + lang + "-1")
			shot("4-client-callback")

			// Service flow on the login session: straight to consent.
			p = serviceParams()
			p.Set("state", "browser-"+lang+"-2")
			do("open the service request", chromedp.Navigate(authorize(p)), chromedp.WaitVisible(chromedp.CSS(`button[value=approve]`)))
			if s := bodyText(); !strings.Contains(s, words["service"]) || strings.Contains(s, words["error"]) {
				t.Fatalf("service consent page (single sign-on): %s", s)
			}
			if n, err := chromedp.Run(bctx, chromedp.Nodes(chromedp.CSS("#password"), chromedp.AtLeast(0))); err != nil || len(n) != 0 {
				t.Fatalf("the service flow asks the password again (%d, %v)", len(n), err)
			}
			shot("5-consent-service")
			submit("approve", "approve")
			landed("browser-" + lang + "-2")

			// The account page on the same login session: signed in
			// already; Sign out ends the session and shows the login form.
			do("open the account page", chromedp.Navigate(ev.ts.URL+"/oauth2/account?lang="+lang), chromedp.WaitVisible(chromedp.ID("logout")))
			if s := bodyText(); !strings.Contains(s, "alice") || !strings.Contains(s, credAlice) || !strings.Contains(s, words["logout"]) {
				t.Fatalf("account page: %s", s)
			}
			shot("6-account")
			if _, err := chromedp.RunResponse(bctx, chromedp.Click(chromedp.ID("logout"))); err != nil {
				t.Fatalf("sign out: %v", err)
			}
			do("wait for the account login form", chromedp.WaitVisible(chromedp.ID("password")))
			if s := bodyText(); !strings.Contains(s, words["account-login"]) || strings.Contains(s, credAlice) {
				t.Fatalf("account page after the logout: %s", s)
			}
			shot("7-account-signed-out")
			p = serviceParams()
			p.Set("state", "browser-"+lang+"-3")
			do("open a request after the logout", chromedp.Navigate(authorize(p)), chromedp.WaitVisible(chromedp.ID("password")))

			// What Chromium sent with its form posts: the issuer's origin
			// (the pages' Referrer-Policy must not turn it into "null"),
			// Sec-Fetch-Site same-origin, and the browser binding cookie.
			posts := ev.formPosts()
			if len(posts) < 4 {
				t.Fatalf("the server saw %d form posts, want at least 4", len(posts))
			}
			for i, h := range posts {
				ck := (&http.Request{Header: h}).CookiesNamed("signd_flow")
				if h.Get("Origin") != ev.srv.Issuer() || h.Get("Sec-Fetch-Site") != "same-origin" || len(ck) != 1 {
					t.Errorf("form post %d: Origin %q (issuer %s), Sec-Fetch-Site %q, %d binding cookies",
						i, h.Get("Origin"), ev.srv.Issuer(), h.Get("Sec-Fetch-Site"), len(ck))
				}
			}
		})
	}
}

func sortedKeys(q url.Values) []string {
	var ks []string
	for k := range q {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
