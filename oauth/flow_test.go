package oauth_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/oauth2"

	"github.com/signd/signd/oauth"
	"github.com/signd/signd/store"
)

// TestServiceFlow runs a whole service-scope flow with golang.org/x/oauth2
// as the client: authorize, login page, consent page, code, token
// (client_secret_basic), then the token works with RequireBearer.
func TestServiceFlow(t *testing.T) {
	ev := newEnv(t)
	conf := ev.oauth2Config("service")
	verifier := oauth2.GenerateVerifier()
	b := ev.browser()
	s := ev.must(b.Get(conf.AuthCodeURL("st-1", oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("lang", "en"))))
	page(t, s)
	if s.Status != http.StatusOK || !strings.Contains(s.Body, "Sign in") || !strings.Contains(s.Body, "Relying Party") {
		t.Fatalf("login page: %d %.400s", s.Status, s.Body)
	}
	s = ev.login(b, s, "alice", alicePassword)
	page(t, s)
	if !strings.Contains(s.Body, "list your signing keys") || s.Form.Has("pin") {
		t.Fatalf("service consent page: %.600s", s.Body)
	}
	s = ev.approve(b, s, "")
	if s.Status != http.StatusSeeOther {
		t.Errorf("consent answer status %d, want 303", s.Status)
	}
	code := ev.codeOf(s, rpRedirect, "st-1")

	tok, err := conf.Exchange(ev.ctx(), code, oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("Exchange: %v", err)
	}
	if tok.Type() != "Bearer" || tok.AccessToken == "" || len(tok.AccessToken) < 43 {
		t.Fatalf("token %+v", tok)
	}
	if d := time.Until(tok.Expiry); d < 59*time.Minute || d > 61*time.Minute {
		t.Errorf("expires in %v, want 1h", d)
	}
	// Only the fingerprint is stored, bound to alice and rp.
	var rec *store.Token
	ev.update(func(tx store.Tx) (err error) { rec, err = tx.Token(store.Fingerprint(tok.AccessToken)); return err })
	if rec.Kind != store.TokenAccess || rec.Username != "alice" || rec.ClientID != "rp" ||
		len(rec.Scopes) != 1 || rec.Scopes[0] != "service" || len(rec.CodeHash) != 32 {
		t.Errorf("stored token %+v", rec)
	}
	// The token works with the bearer middleware.
	if st := bearerStatus(t, ev, "service", tok.AccessToken); st != http.StatusOK {
		t.Errorf("bearer status %d", st)
	}
}

// TestCredentialFlow runs a whole credential-scope flow: the consent page
// shows the credential, the certificate subject and the hash in hex, asks
// the PIN, and the code turns into a SAD bound to credential and hash and
// to the user's secret generation.
func TestCredentialFlow(t *testing.T) {
	ev := newEnv(t)
	ev.setPIN("alice", alicePIN) // as an admin's set-pin: a secret generation that is not 0
	conf := ev.oauth2Config("credential")
	b := ev.browser()
	s := ev.must(b.Get(conf.AuthCodeURL("st-2",
		oauth2.SetAuthURLParam("credentialID", credAlice),
		oauth2.SetAuthURLParam("numSignatures", "1"),
		oauth2.SetAuthURLParam("hash", b64url(testHash)+"="), // padded base64url is fine too
		oauth2.SetAuthURLParam("description", "Invoice <42>"),
	)))
	s = ev.login(b, s, "alice", alicePassword)
	page(t, s)
	for _, want := range []string{"Alice Example, Example BV", strings.TrimSpace(strings.Repeat("abab ", 16)), "Invoice &lt;42&gt;", "Ondertekenen"} {
		if !strings.Contains(s.Body, want) {
			t.Errorf("consent page lacks %q: %.2000s", want, s.Body)
		}
	}
	if strings.Contains(s.Body, "signd-"+credAlice) {
		t.Errorf("consent page shows the HSM label: %.2000s", s.Body)
	}
	if !s.Form.Has("pin") {
		t.Fatal("credential consent page has no pin field")
	}
	code := ev.codeOf(ev.approve(b, s, alicePIN), rpRedirect, "st-2")
	tok, err := conf.Exchange(ev.ctx(), code)
	if err != nil {
		t.Fatalf("Exchange: %v", err)
	}
	if tok.Type() != "SAD" {
		t.Errorf("token_type %q, want SAD", tok.Type())
	}
	if d := time.Until(tok.Expiry); d < 4*time.Minute || d > 6*time.Minute {
		t.Errorf("SAD expires in %v, want 5m", d)
	}
	var rec *store.Token
	ev.update(func(tx store.Tx) (err error) { rec, err = tx.Token(store.Fingerprint(tok.AccessToken)); return err })
	if rec.Kind != store.TokenSAD || rec.CredentialID != credAlice || len(rec.Hashes) != 1 ||
		!bytes.Equal(rec.Hashes[0], testHash) || rec.Username != "alice" || rec.ClientID != "rp" {
		t.Errorf("stored SAD %+v", rec)
	}
	// The SAD carries the user's secret generation: signHash refuses one
	// of another generation (a PIN or password reset since).
	if gen := ev.user("alice").SecretGeneration; gen == 0 || rec.SecretGeneration != gen {
		t.Errorf("SAD of secret generation %d, the user's is %d", rec.SecretGeneration, gen)
	}
	// A SAD is never a bearer token.
	if st := bearerStatus(t, ev, "", tok.AccessToken); st != http.StatusUnauthorized {
		t.Errorf("SAD as bearer: status %d", st)
	}
}

// TestSingleSignOn: after a login, a service flow skips the password; a
// credential flow always asks it (and the PIN).
func TestSingleSignOn(t *testing.T) {
	ev := newEnv(t)
	_, b := ev.serviceCode(serviceParams())
	s := ev.must(b.Get(ev.authorizeURL(serviceParams())))
	page(t, s)
	if s.Form.Has("password") || s.Form.Has("pin") {
		t.Fatalf("SSO service flow shows %v", s.Form.Types)
	}
	ev.codeOf(ev.approve(b, s, ""), rpRedirect, "state-123")

	s = ev.must(b.Get(ev.authorizeURL(credentialParams(credAlice))))
	page(t, s)
	if !s.Form.Has("password") {
		t.Fatal("credential flow skipped the password")
	}
	s = ev.login(b, s, "alice", alicePassword)
	if !page(t, s).Form.Has("pin") {
		t.Fatal("credential flow without PIN")
	}

	// The session cookie: HttpOnly, SameSite=Lax, path /oauth2/.
	b2 := ev.browser()
	s = ev.login(b2, ev.must(b2.Get(ev.authorizeURL(serviceParams()))), "alice", alicePassword)
	ck := s.Header.Get("Set-Cookie")
	for _, want := range []string{"signd_session=", "Path=/oauth2/", "HttpOnly", "SameSite=Lax"} {
		if !strings.Contains(ck, want) {
			t.Errorf("Set-Cookie %q lacks %s", ck, want)
		}
	}
	if strings.Contains(ck, "Secure") {
		t.Errorf("Secure cookie without SecureCookies: %q", ck)
	}
}

// TestPromptAndMaxAge drives the generic prompt and max_age support
// through a test profile without consent page.
func TestPromptAndMaxAge(t *testing.T) {
	ev := newEnv(t)
	quiet := with(serviceParams(), "scope", "quiet")
	b := ev.browser()

	// prompt=none without a session: login_required.
	s := ev.must(b.Get(ev.authorizeURL(with(quiet, "prompt", "none"))))
	if e, _ := errorOf(t, s); e != "login_required" {
		t.Errorf("prompt=none without session: %s", e)
	}
	// Log in: no consent page, straight back with a code.
	s = ev.login(b, ev.must(b.Get(ev.authorizeURL(quiet))), "alice", alicePassword)
	ev.codeOf(s, rpRedirect, "state-123")
	// prompt=none with a session: no page at all.
	s = ev.must(b.Get(ev.authorizeURL(with(quiet, "prompt", "none"))))
	ev.codeOf(s, rpRedirect, "state-123")
	if s.Status != http.StatusFound {
		t.Errorf("redirect from GET authorize: %d, want 302", s.Status)
	}
	// prompt=login forces the login page.
	page(t, ev.must(b.Get(ev.authorizeURL(with(quiet, "prompt", "login")))))
	// max_age: a fresh enough session is used, an older one is not.
	ev.clock.Advance(2 * time.Minute)
	ev.codeOf(ev.must(b.Get(ev.authorizeURL(with(quiet, "max_age", "600")))), rpRedirect, "state-123")
	page(t, ev.must(b.Get(ev.authorizeURL(with(quiet, "max_age", "60")))))
	s = ev.must(b.Get(ev.authorizeURL(with(quiet, "max_age", "60", "prompt", "none"))))
	if e, _ := errorOf(t, s); e != "login_required" {
		t.Errorf("prompt=none with a too old session: %s", e)
	}
	page(t, ev.must(b.Get(ev.authorizeURL(with(quiet, "max_age", "0")))))
	// The session expires.
	ev.clock.Advance(9 * time.Hour)
	page(t, ev.must(b.Get(ev.authorizeURL(quiet))))
	// A profile's CheckUser refusal is redirected.
	b2 := ev.browser()
	s = ev.login(b2, ev.must(b2.Get(ev.authorizeURL(quiet))), "dave", davePassword)
	if e, d := errorOf(t, s); e != "access_denied" || d != "user email is unverified" {
		t.Errorf("CheckUser refusal: %s %q", e, d)
	}
}

// TestRedirectURIOptional: a profile may allow omitting redirect_uri when
// the client has one registered URI; CSC may not.
func TestRedirectURIOptional(t *testing.T) {
	ev := newEnv(t)
	b := ev.browser()
	p := with(serviceParams(), "client_id", "rp2", "redirect_uri", "", "scope", "quiet")
	s := ev.login(b, ev.must(b.Get(ev.authorizeURL(p))), "alice", alicePassword)
	code := ev.codeOf(s, "https://rp2.example/cb", "state-123")
	// The token request may omit it too, or send the same.
	resp, body := ev.tokenRequest(url.Values{"grant_type": {"authorization_code"}, "code": {code}}, "rp2", rp2Secret)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("token without redirect_uri: %d %v", resp.StatusCode, body)
	}
	// Extra members of the profile's TokenResponse.
	if body["scope"] != "quiet" || body["mark"] != "bound" || body["token_len"] != float64(43) {
		t.Errorf("token response %v", body)
	}
	// CSC requires it: error page.
	s = ev.must(b.Get(ev.authorizeURL(with(p, "scope", "service"))))
	if s.Redirected() || s.Status != http.StatusBadRequest {
		t.Errorf("service without redirect_uri: %d %v", s.Status, s.Location)
	}
	// A client with two URIs must send it.
	s = ev.must(b.Get(ev.authorizeURL(with(p, "client_id", "rp"))))
	if s.Redirected() || s.Status != http.StatusBadRequest {
		t.Errorf("quiet without redirect_uri, two registered: %d %v", s.Status, s.Location)
	}
}

// TestTokenResponseFailure: when the profile cannot complete the response
// the minted token is revoked and the client gets server_error.
func TestTokenResponseFailure(t *testing.T) {
	for _, nonce := range []string{"fail", "reserved"} {
		t.Run(nonce, func(t *testing.T) {
			ev := newEnv(t)
			b := ev.browser()
			p := with(serviceParams(), "scope", "quiet", "nonce", nonce)
			code := ev.codeOf(ev.login(b, ev.must(b.Get(ev.authorizeURL(p))), "alice", alicePassword), rpRedirect, "state-123")
			resp, body := ev.tokenRequest(url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {rpRedirect}}, "rp", rpSecret)
			if resp.StatusCode != http.StatusInternalServerError || body["error"] != "server_error" {
				t.Fatalf("status %d body %v", resp.StatusCode, body)
			}
			n := 0
			ev.update(func(tx store.Tx) error {
				var err error
				n, err = tx.DeleteTokensByCode(store.Fingerprint(code))
				return err
			})
			if n != 0 {
				t.Errorf("%d tokens left for the code", n)
			}
		})
	}
}

// bearerStatus calls a route behind RequireBearer with token.
func bearerStatus(t *testing.T, ev *env, scope, token string) int {
	t.Helper()
	e := echo.New()
	e.GET("/x", func(c echo.Context) error {
		if oauth.GrantFrom(c) == nil {
			t.Error("no grant")
		}
		return c.NoContent(http.StatusOK)
	}, oauth.RequireBearer(oauth.BearerConfig{Store: bearerStore(ev.db), Now: ev.clock.Now, Realm: "r", Scope: scope}))
	e.HTTPErrorHandler = func(err error, c echo.Context) {
		if oe, ok := err.(*oauth.Error); ok {
			_ = c.NoContent(oe.Status)
			return
		}
		_ = c.NoContent(http.StatusInternalServerError)
	}
	req := httptest.NewRequestWithContext(context.Background(), http.MethodGet, "/x", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, req)
	return rec.Code
}
