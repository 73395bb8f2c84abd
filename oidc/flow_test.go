package oidc_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	gooidc "github.com/coreos/go-oidc/v3/oidc"
	"github.com/labstack/echo/v4"
	"golang.org/x/oauth2"

	"github.com/signd/signd/oauth"
	"github.com/signd/signd/oauth/oauthtest"
	"github.com/signd/signd/oauth/passwords"
	"github.com/signd/signd/oidc"
	"github.com/signd/signd/store"
)

// The end-to-end tests run the real authorization server (package oauth)
// with the openid profile, and the provider's routes, on one Echo router
// behind an httptest server whose URL is the issuer.

// Fixture users, clients and secrets.
const (
	alicePassword = "alice-Password-7f3a"
	bobPassword   = "bob-Password-2c9d"
	rpSecret      = "rp-secret-0123456789abcdef0123456789abcdef"
	rpRedirect    = "https://rp.example.com/cb"
)

type flowEnv struct {
	*fixture
	issuer string
	srv    *oauth.Server
	ts     *httptest.Server
	hasher *store.Hasher
	alice  *store.User
}

// newFlowEnv builds the router after its listener exists, so the issuer
// (server.base_url) is the server's real URL, as discovery requires.
func newFlowEnv(t *testing.T) *flowEnv {
	t.Helper()
	return newFlowEnvWith(t, newFixture(t))
}

func newFlowEnvWith(t *testing.T, f *fixture) *flowEnv {
	t.Helper()
	ev := newFlowEnvNoFixtures(t, f)
	ev.fixtures(ev.hasher)
	return ev
}

// newFlowEnvNoFixtures builds the server over f without adding users and
// clients (a restart over an existing store).
func newFlowEnvNoFixtures(t *testing.T, f *fixture) *flowEnv {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ev := &flowEnv{fixture: f, issuer: "http://" + ln.Addr().String()}
	f.p.Issuer = ev.issuer
	hasher, err := store.NewHasher(store.Argon2Params{Time: 1, MemoryKiB: 64, Threads: 1, KeyLen: 32, SaltLen: 16})
	if err != nil {
		t.Fatal(err)
	}
	var st oauth.Store = oauthtest.Store(f.db)
	if f.wrapOAuth != nil {
		st = f.wrapOAuth(st)
	}
	pw, err := passwords.New(passwords.Config{Store: oauthtest.PasswordStore(st), Hasher: hasher, Now: f.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	ev.srv, err = oauth.New(oauth.Config{
		Store: st, Profiles: []oauth.Profile{&oidc.Profile{Provider: f.p}},
		Issuer: ev.issuer, Now: f.clock.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	// The router's own errors (404, 405) are no route's; every protocol
	// error must come from a route tagged with its service's dialect.
	render := oauth.NewRenderer(nil)
	e.HTTPErrorHandler = func(err error, c echo.Context) {
		if oauth.DialectOf(c) != nil {
			render.Handle(err, c)
			return
		}
		var he *echo.HTTPError
		if errors.As(err, &he) && (he.Code == http.StatusNotFound || he.Code == http.StatusMethodNotAllowed) {
			_ = c.NoContent(he.Code)
			return
		}
		t.Errorf("an error of no protocol route reached the error handler: %s: %v", c.Request().URL.Path, err)
		_ = c.NoContent(http.StatusInternalServerError)
	}
	if err := ev.srv.Mount(e.Group("")); err != nil {
		t.Fatal(err)
	}
	if err := oauthtest.MountFlow(e.Group(""), ev.srv, st, pw, f.clock.Now); err != nil {
		t.Fatal(err)
	}
	if err := f.p.Mount(e.Group("")); err != nil {
		t.Fatal(err)
	}
	ev.ts = httptest.NewUnstartedServer(e)
	ev.ts.Listener.Close()
	ev.ts.Listener = ln
	ev.ts.Start()
	t.Cleanup(ev.ts.Close)
	if _, err := f.keys.Ensure(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	ev.hasher = hasher
	return ev
}

func (ev *flowEnv) fixtures(h *store.Hasher) {
	hash := func(pw string) string {
		s, err := h.Hash([]byte(pw))
		if err != nil {
			ev.t.Fatal(err)
		}
		return s
	}
	proof := store.Proof{ProofRef: store.ProofRef{ID: "passport-scan", ContentType: store.ProofPNG}, Content: pngProof}
	ev.alice = ev.addUser("alice", "alice@example.com", true, fullClaims, proof)
	ev.addUser("bob", "bob@example.com", false, nil)
	ev.addUser("carol", "carol@example.com", true, map[string]string{"given_name": "Carol"})
	ev.update(func(tx store.Tx) error {
		for _, name := range []string{"alice", "bob", "carol"} {
			u, err := tx.User(name)
			if err != nil {
				return err
			}
			u.PasswordHash = hash(map[string]string{"alice": alicePassword, "bob": bobPassword, "carol": alicePassword}[name])
			if err := tx.PutUser(u); err != nil {
				return err
			}
		}
		for _, c := range []*store.Client{
			{ID: "rp", Name: "Relying Party", RedirectURIs: []string{rpRedirect}, Scopes: allScopes},
			{ID: "rp-b", Name: "Same Sector", RedirectURIs: []string{"https://rp.example.com/other"}, Scopes: allScopes},
			{ID: "other", Name: "Other Sector", RedirectURIs: []string{"https://other.example.org/cb"}, Scopes: allScopes},
			{ID: "multi", Name: "Two URIs", RedirectURIs: []string{"https://multi.example.com/a", "https://multi.example.com/b"}, Scopes: allScopes},
			{ID: "pkce", Name: "PKCE", RedirectURIs: []string{"https://pkce.example.com/cb"}, Scopes: allScopes, RequirePKCE: true},
			{ID: "svc", Name: "Service only", RedirectURIs: []string{"https://svc.example.com/cb"}, Scopes: []string{"service"}},
		} {
			c.SecretHash = store.HashSecret(secretOf(c.ID))
			if err := tx.CreateClient(c); err != nil {
				return err
			}
		}
		return nil
	})
}

func secretOf(client string) string {
	if client == "rp" {
		return rpSecret
	}
	return client + "-secret-0123456789abcdef0123456789abcdef"
}

func redirectOf(client string) string {
	switch client {
	case "rp":
		return rpRedirect
	case "rp-b":
		return "https://rp.example.com/other"
	case "other":
		return "https://other.example.org/cb"
	case "pkce":
		return "https://pkce.example.com/cb"
	}
	return "https://" + client + ".example.com/cb"
}

// params are a valid openid request of client.
func params(client string, scope string, kv ...string) url.Values {
	return oauthtest.With(url.Values{
		"response_type": {"code"}, "client_id": {client}, "redirect_uri": {redirectOf(client)},
		"scope": {scope}, "state": {"state-" + client}, "nonce": {"nonce-" + client},
	}, kv...)
}

func (ev *flowEnv) browser() *oauthtest.Browser {
	return oauthtest.NewBrowser(ev.ts.Client().Transport)
}

func (ev *flowEnv) authorizeURL(p url.Values) string {
	return ev.issuer + "/oauth2/authorize?" + p.Encode()
}

func (ev *flowEnv) must(s *oauthtest.Step, err error) *oauthtest.Step {
	ev.t.Helper()
	if err != nil {
		ev.t.Fatal(err)
	}
	return s
}

// login answers a login page.
func (ev *flowEnv) login(b *oauthtest.Browser, s *oauthtest.Step, username, password string) *oauthtest.Step {
	ev.t.Helper()
	if s.Redirected() || s.Form == nil || !s.Form.Has("password") {
		ev.t.Fatalf("want the login page, got %d %v %.300s", s.Status, s.Location, oauthtest.Text(s.Body))
	}
	return ev.must(b.Submit(s.Form, map[string]string{"username": username, "password": password}, "approve"))
}

// isConsent reports whether s is the consent page.
func isConsent(s *oauthtest.Step) bool {
	return !s.Redirected() && s.Form != nil && !s.Form.Has("password") && len(s.Form.Buttons) > 0
}

// answer answers a consent page.
func (ev *flowEnv) answer(b *oauthtest.Browser, s *oauthtest.Step, decision string) *oauthtest.Step {
	ev.t.Helper()
	if !isConsent(s) {
		ev.t.Fatalf("want the consent page, got %d %v %.300s", s.Status, s.Location, oauthtest.Text(s.Body))
	}
	return ev.must(b.Submit(s.Form, nil, decision))
}

// flow runs an authorization request for a user through login and (when
// shown) consent, approving, and returns the redirect back.
func (ev *flowEnv) flow(b *oauthtest.Browser, p url.Values, username, password string) *oauthtest.Step {
	ev.t.Helper()
	s := ev.must(b.Get(ev.authorizeURL(p)))
	if !s.Redirected() && s.Form != nil && s.Form.Has("password") {
		s = ev.login(b, s, username, password)
	}
	if isConsent(s) {
		s = ev.answer(b, s, "approve")
	}
	return s
}

// codeOf returns the code of a successful redirect, checking the target,
// state and iss.
func (ev *flowEnv) codeOf(s *oauthtest.Step, p url.Values) string {
	ev.t.Helper()
	want := p.Get("redirect_uri")
	if want == "" {
		want = redirectOf(p.Get("client_id"))
	}
	code, err := s.Code(want, p.Get("state"), ev.issuer)
	if err != nil {
		ev.t.Fatal(err)
	}
	return code
}

// errorOf returns the error and description of an error redirect, checking
// that it carries only the allowed parameters, the state and iss (item 7).
func (ev *flowEnv) errorOf(s *oauthtest.Step, state string) (string, string) {
	ev.t.Helper()
	if !s.Redirected() {
		ev.t.Fatalf("want an error redirect, got %d: %.500s", s.Status, oauthtest.Text(s.Body))
	}
	q := s.Query()
	for k := range q {
		switch k {
		case "error", "error_description", "state", "iss":
		default:
			ev.t.Errorf("error redirect carries %s", k)
		}
	}
	if q.Get("state") != state || q.Get("iss") != ev.issuer {
		ev.t.Errorf("error redirect state %q iss %q", q.Get("state"), q.Get("iss"))
	}
	checkDescription(ev.t, q.Get("error"))
	checkDescription(ev.t, q.Get("error_description"))
	return q.Get("error"), q.Get("error_description")
}

// tokenResponse is a decoded token endpoint answer.
type tokenResponse struct {
	Status int
	Header http.Header
	Body   map[string]any
}

// redeem posts a token request with client_secret_basic (form-urlencoded
// credentials, RFC 6749 §2.3.1).
func (ev *flowEnv) redeem(client, code string, extra ...string) *tokenResponse {
	ev.t.Helper()
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirectOf(client)}}
	for i := 0; i+1 < len(extra); i += 2 {
		if extra[i+1] == "" {
			form.Del(extra[i])
		} else {
			form.Set(extra[i], extra[i+1])
		}
	}
	return ev.postToken(form, client, secretOf(client))
}

func (ev *flowEnv) postToken(form url.Values, basicID, basicSecret string) *tokenResponse {
	ev.t.Helper()
	resp, err := oauthtest.PostClientForm(ev.ts.Client(), ev.issuer+"/oauth2/token", form, basicID, basicSecret)
	if err != nil {
		ev.t.Fatal(err)
	}
	defer resp.Body.Close()
	tr := &tokenResponse{Status: resp.StatusCode, Header: resp.Header}
	_ = json.NewDecoder(resp.Body).Decode(&tr.Body)
	return tr
}

// userinfoStatus calls GET /userinfo over HTTP and returns the status and
// body.
func (ev *flowEnv) userinfoHTTP(method, accessToken string) (int, map[string]any) {
	ev.t.Helper()
	req, _ := http.NewRequest(method, ev.issuer+"/userinfo", nil)
	req.Header.Set("Authorization", "Bearer "+accessToken)
	resp, err := ev.ts.Client().Do(req)
	if err != nil {
		ev.t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, body
}

// verifier is a go-oidc ID token verifier for client, on the test clock.
func (ev *flowEnv) verifier(ctx context.Context, client string) *gooidc.IDTokenVerifier {
	ev.t.Helper()
	provider, err := gooidc.NewProvider(ctx, ev.issuer)
	if err != nil {
		ev.t.Fatal(err)
	}
	return provider.Verifier(&gooidc.Config{ClientID: client, Now: ev.clock.Now})
}

// idToken verifies the id_token of a token response with go-oidc.
func (ev *flowEnv) idToken(tr *tokenResponse, client string) *gooidc.IDToken {
	ev.t.Helper()
	raw, _ := tr.Body["id_token"].(string)
	if raw == "" {
		ev.t.Fatalf("token response without id_token: %d %v", tr.Status, tr.Body)
	}
	ctx := gooidc.ClientContext(context.Background(), ev.ts.Client())
	tok, err := ev.verifier(ctx, client).Verify(ctx, raw)
	if err != nil {
		ev.t.Fatalf("ID token does not verify: %v", err)
	}
	return tok
}

// claims decodes the claims of a verified ID token.
func claimsOf(t *testing.T, tok *gooidc.IDToken) map[string]any {
	t.Helper()
	var c map[string]any
	if err := tok.Claims(&c); err != nil {
		t.Fatal(err)
	}
	return c
}

// oauth2Config is an x/oauth2 configuration of client against the issuer.
func (ev *flowEnv) oauth2Config(provider *gooidc.Provider, client string, scopes ...string) *oauth2.Config {
	return &oauth2.Config{
		ClientID: client, ClientSecret: secretOf(client), RedirectURL: redirectOf(client),
		Endpoint: provider.Endpoint(), Scopes: scopes,
	}
}

// code runs a full flow for alice and returns the code.
func (ev *flowEnv) code(client, scope string, kv ...string) string {
	ev.t.Helper()
	p := params(client, scope, kv...)
	return ev.codeOf(ev.flow(ev.browser(), p, "alice", alicePassword), p)
}
