package oauth_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/signd/signd/oauth/oauthtest/chromiumtest"
	"github.com/signd/signd/store"
)

// TestBrowserPlantedSession: in headless Chromium, a login session cookie
// planted by another server on the same host (cookies do not separate
// ports: as a sibling subdomain's Domain= cookie, or an injected
// plain-http response) for the longer path /oauth2/authorize, which
// Chromium sends before the victim's own, does not sign the victim in as
// the attacker: the request carries the session cookie's name twice, and
// single sign-on is refused (the login form, a warning in the log) instead
// of a code for the attacker's account at once. Over plain http, as here,
// the __Host- prefix cannot be used; under https it keeps the planted
// name from being the session's at all (TestPlantedSessionCookie).
func TestBrowserPlantedSession(t *testing.T) {
	ev := newBrowserEnv(t)
	_, ab := ev.serviceCode(serviceParams())
	attacker := ev.jarCookie(ab, ev.session)
	if attacker == nil {
		t.Fatal("alice holds no session cookie")
	}
	// The attacker's server, on the same host as signd: its answers plant
	// alice's session for signd's authorize path; its /cb is the client's.
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/plant" {
			http.SetCookie(w, &http.Cookie{Name: "signd_session", Value: attacker.Value, Path: "/oauth2/authorize"})
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<!DOCTYPE html><title>Page</title><p id=result>%s</p>", r.URL.Path)
	}))
	t.Cleanup(evil.Close)
	ev.update(func(tx store.Tx) error {
		return tx.CreateClient(&store.Client{
			ID: "browser-rp", Name: "Browser Client", SecretHash: store.HashSecret(rpSecret),
			RedirectURIs: []string{evil.URL + "/cb"}, Scopes: []string{"quiet"},
		})
	})
	authorize := ev.authorizeURL(url.Values{"response_type": {"code"}, "client_id": {"browser-rp"},
		"redirect_uri": {evil.URL + "/cb"}, "scope": {"quiet"}, "state": {"st"}, "ui_locales": {"en"}})

	bctx := chromiumtest.Start(t, 90*time.Second)
	do := chromiumtest.Steps(t, bctx)
	location := func() string {
		t.Helper()
		loc, err := chromedp.Run(bctx, chromedp.Location())
		if err != nil {
			t.Fatal(err)
		}
		return loc
	}
	codeUser := func() string {
		t.Helper()
		u, err := url.Parse(location())
		if err != nil || !strings.HasPrefix(u.String(), evil.URL+"/cb?") || u.Query().Get("code") == "" {
			t.Fatalf("the browser is at %v, want the client's redirect URI with a code", u)
		}
		var code *store.AuthCode
		ev.update(func(tx store.Tx) (err error) {
			code, err = tx.Code(store.Fingerprint(u.Query().Get("code")))
			return err
		})
		return code.Username
	}

	// erin, the victim, signs in; then single sign-on answers at once.
	do("open the authorization request", chromedp.Navigate(authorize), chromedp.WaitVisible(chromedp.ID("username")))
	do("sign in as erin", chromedp.SendKeys(chromedp.ID("username"), "erin"), chromedp.SendKeys(chromedp.ID("password"), davePassword))
	if _, err := chromedp.RunResponse(bctx, chromedp.Click(chromedp.CSS(`button[name=decision][value=approve]`))); err != nil {
		t.Fatalf("log in: %v", err)
	}
	if u := codeUser(); u != "erin" {
		t.Fatalf("the login issued a code for %s", u)
	}
	do("single sign-on", chromedp.Navigate(authorize), chromedp.WaitVisible(chromedp.ID("result")))
	if u := codeUser(); u != "erin" {
		t.Fatalf("single sign-on issued a code for %s", u)
	}

	// The attacker's page plants alice's session; the next authorization
	// request is not signed in as alice.
	do("visit the attacker's page", chromedp.Navigate(evil.URL+"/plant"), chromedp.WaitVisible(chromedp.ID("result")))
	do("open the authorization request again", chromedp.Navigate(authorize), chromedp.WaitVisible(chromedp.CSS("#username, #result")))
	if loc := location(); !strings.HasPrefix(loc, ev.ts.URL+"/oauth2/authorize?") {
		t.Fatalf("the browser is at the client with a code for %s, want the login form", codeUser())
	}
	if !strings.Contains(ev.logs.String(), "login session cookie refused: sent more than once") {
		t.Error("Chromium did not send the session cookie twice, or the refusal was not logged")
	}
}
