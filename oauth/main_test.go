package oauth_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/oauth2"

	"github.com/signd/signd/csc"
	"github.com/signd/signd/hsm"
	"github.com/signd/signd/hsm/hsmtest/softtoken"
	"github.com/signd/signd/internal/logtest"
	"github.com/signd/signd/oauth"
	"github.com/signd/signd/oauth/account"
	"github.com/signd/signd/oauth/browser"
	"github.com/signd/signd/oauth/oauthtest"
	"github.com/signd/signd/oauth/passwords"
	"github.com/signd/signd/store"
	"github.com/signd/signd/store/bolt"
	"github.com/signd/signd/store/memory"
	"github.com/signd/signd/store/storetest"
	"github.com/signd/signd/store/storetest/backends"
)

// The signing key every test credential uses: generated inside a software
// token (hsm/hsmtest/softtoken) in TestMain, with a certificate from a
// throwaway CA. The authorization server never signs with it.
var (
	hsmKey   *hsm.KeyInfo
	keyChain [][]byte // leaf, CA (DER)
)

func TestMain(m *testing.M) { os.Exit(testMain(m)) }

func testMain(m *testing.M) int {
	if err := makeKey(softtoken.New(softtoken.Options{})); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// makeKey generates the HSM key and has a test CA certify it.
func makeKey(token *softtoken.Token) error {
	ctx := context.Background()
	info, err := token.GenerateRSA(ctx, "oauth-test", 2048)
	if err != nil {
		return err
	}
	key, err := token.Key(ctx, info.ID)
	if err != nil {
		return err
	}
	csrDER, err := hsm.CreateCSR(key, pkix.Name{CommonName: "Alice Example", Organization: []string{"Example BV"}})
	if err != nil {
		return err
	}
	csr, err := x509.ParseCertificateRequest(csrDER)
	if err != nil {
		return err
	}
	caKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "Test CA"},
		NotBefore: now.Add(-48 * time.Hour), NotAfter: now.Add(48 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	ca, _ := x509.ParseCertificate(caDER)
	leafTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: csr.Subject,
		NotBefore: now.Add(-24 * time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageContentCommitment,
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, ca, csr.PublicKey, caKey)
	if err != nil {
		return err
	}
	hsmKey, keyChain = info, [][]byte{leafDER, caDER}
	return nil
}

// Fixture secrets. The log test searches the logs for each.
const (
	alicePassword = "alice-Password-7f3a"
	alicePIN      = "918273"
	bobPassword   = "bob-Password-2c9d"
	bobTOTP       = "JBSWY3DPEHPK3PXP"
	carolPassword = "carol-Password-5e1b"
	davePassword  = "dave-Password-8a4c"
	rpSecret      = "rp-secret-0123456789abcdef0123456789abcdef"
	rp2Secret     = "rp2-secret-0123456789abcdef0123456789abcdef"
	pkceSecret    = "pkce-secret-0123456789abcdef0123456789abcdef"
	rpRedirect    = "https://rp.example/cb"
)

// Fixture credentials of alice (and dave).
const (
	credAlice    = "cred-alice"
	credDisabled = "cred-alice-disabled"
	credPending  = "cred-alice-pending"
	credDave     = "cred-dave"
)

// testHash is the digest the credential flows authorize.
var testHash = bytes.Repeat([]byte{0xab}, 32)

// lowArgon2 keeps hashing cheap.
var lowArgon2 = store.Argon2Params{Time: 1, MemoryKiB: 64, Threads: 1, KeyLen: 32, SaltLen: 16}

// clock is the shared settable test clock.
type clock = storetest.Clock

// syncBuffer is the shared goroutine-safe log sink.
type syncBuffer = logtest.Buffer

// env is one authorization server on an in-memory store (store/memory;
// the browser test: a bbolt file) behind a real Echo router, with users,
// clients and credentials.
type env struct {
	t      *testing.T
	db     store.Store
	srv    *oauth.Server
	ts     *httptest.Server
	clock  *clock
	logs   *syncBuffer
	hasher *store.Hasher
	// passwords is the server's password checker.
	passwords *passwords.Checker
	// flow is the browser flow (authorize, login, consent).
	flow *browser.Handler
	// cfg is the server's Config as built.
	cfg oauth.Config
	// session and sessionPath name the login session cookie:
	// __Host-signd_session on / with SecureCookies, else signd_session on
	// /oauth2/.
	session, sessionPath string

	mu     sync.Mutex
	strays []string      // errors of no OAuth route that reached the error handler
	posts  []http.Header // request headers of the login and consent posts, in order
}

// formPosts returns the request headers of the login and consent posts the
// server received so far.
func (ev *env) formPosts() []http.Header {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	return slices.Clone(ev.posts)
}

// testIssuer is server.base_url of newEnv's server.
const testIssuer = "https://signd.example"

// newEnv builds an env whose issuer is testIssuer; mods adjust the
// server's Config. With SecureCookies the test server speaks TLS, as a
// browser keeps Secure cookies only for https.
func newEnv(t *testing.T, mods ...func(*oauth.Config)) *env {
	t.Helper()
	return buildEnv(t, memoryStore(t), false, mods...)
}

// newBrowserEnv is newEnv with the issuer set to the test server's own URL,
// so a real browser's Origin header on the form posts is the issuer's
// origin (the login and consent forms refuse any other Origin), over a
// bbolt file: the browser test is a journey through the product's own
// storage, with the account page.
func newBrowserEnv(t *testing.T, mods ...func(*oauth.Config)) *env {
	t.Helper()
	db := backends.Bolt(t, bolt.Options{})
	return buildEnvWith(t, db, true, envOptions{account: true}, mods...)
}

// memoryStore returns an empty in-memory store.
func memoryStore(t *testing.T) *memory.DB {
	t.Helper()
	return backends.Memory(t, memory.Options{})
}

func buildEnv(t *testing.T, db store.Store, issuerIsServer bool, mods ...func(*oauth.Config)) *env {
	t.Helper()
	return buildEnvWith(t, db, issuerIsServer, envOptions{}, mods...)
}

// envOptions are what an env has besides the server's Config.
type envOptions struct {
	// passwords adjusts the password checker's Config (nil: defaults).
	passwords func(*passwords.Config)
	// browser adjusts the browser flow's Config (nil: defaults).
	browser func(*browser.Config)
	// account mounts the account page over csc.Account.
	account bool
}

// newEnvWith is newEnv with opts.
func newEnvWith(t *testing.T, opts envOptions, mods ...func(*oauth.Config)) *env {
	t.Helper()
	return buildEnvWith(t, memoryStore(t), false, opts, mods...)
}

// buildEnvWith is buildEnv with opts.
func buildEnvWith(t *testing.T, db store.Store, issuerIsServer bool, opts envOptions, mods ...func(*oauth.Config)) *env {
	t.Helper()
	hasher, err := store.NewHasher(lowArgon2)
	if err != nil {
		t.Fatal(err)
	}
	ev := &env{t: t, db: db, clock: storetest.NewClock(time.Now().UTC().Round(0)), logs: &syncBuffer{}, hasher: hasher}
	ev.fixtures()
	cfg := oauth.Config{
		Store: oauthtest.Store(db),
		Profiles: []oauth.Profile{
			csc.ServiceProfile{},
			&csc.CredentialProfile{Store: credentialStore(db), Now: ev.clock.Now},
			&quietProfile{},
		},
		Issuer: testIssuer,
		Logger: slog.New(slog.NewJSONHandler(ev.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Now:    ev.clock.Now,
	}
	for _, m := range mods {
		m(&cfg)
	}
	pcfg := passwords.Config{Store: oauthtest.PasswordStore(cfg.Store), Hasher: hasher, Logger: cfg.Logger, Now: cfg.Now}
	if opts.passwords != nil {
		opts.passwords(&pcfg)
	}
	if ev.passwords, err = passwords.New(pcfg); err != nil {
		t.Fatal(err)
	}
	bcfg := browser.Config{Passwords: ev.passwords, Logger: cfg.Logger, Now: cfg.Now}
	if opts.browser != nil {
		opts.browser(&bcfg)
	}
	ev.session, ev.sessionPath = "signd_session", "/oauth2/"
	if bcfg.SecureCookies {
		ev.session, ev.sessionPath = "__Host-signd_session", "/"
	}
	ev.ts = httptest.NewUnstartedServer(nil) // listens already: its address is known
	if issuerIsServer {
		scheme := "http://"
		if bcfg.SecureCookies {
			scheme = "https://"
		}
		cfg.Issuer = scheme + ev.ts.Listener.Addr().String()
	}
	if ev.srv, err = oauth.New(cfg); err != nil {
		ev.ts.Close()
		t.Fatal(err)
	}
	ev.cfg = cfg
	bcfg.Core, bcfg.Store = ev.srv, cfg.Store
	if ev.flow, err = browser.New(bcfg); err != nil {
		ev.ts.Close()
		t.Fatal(err)
	}
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	// The test client is its own trusted proxy: a test names the remote
	// address with X-Forwarded-For (the daemon believes it only from
	// server.trusted_proxies: cmd/signd's tests).
	e.IPExtractor = echo.ExtractIPFromXFFHeader(echo.TrustLoopback(true))
	render := oauth.NewRenderer(cfg.Logger)
	e.HTTPErrorHandler = func(err error, c echo.Context) {
		if oauth.DialectOf(c) != nil { // an OAuth route's error, in its dialect
			render.Handle(err, c)
			return
		}
		ev.mu.Lock()
		ev.strays = append(ev.strays, c.Request().URL.Path+": "+err.Error())
		ev.mu.Unlock()
		_ = c.JSON(http.StatusInternalServerError, map[string]string{"error": "global"})
	}
	e.Use(func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			// The daemon's defaults, which the pages override.
			c.Response().Header().Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
			c.Response().Header().Set("Referrer-Policy", "no-referrer")
			if r := c.Request(); r.Method == http.MethodPost && (r.URL.Path == "/oauth2/login" || r.URL.Path == "/oauth2/consent") {
				ev.mu.Lock()
				ev.posts = append(ev.posts, r.Header.Clone())
				ev.mu.Unlock()
			}
			return next(c)
		}
	})
	if err := ev.srv.Mount(e.Group("")); err != nil {
		t.Fatal(err)
	}
	if err := ev.flow.Mount(e.Group("")); err != nil {
		t.Fatal(err)
	}
	if opts.account {
		page := &account.Handler{
			Backend:  &csc.Account{Store: store.Scope(db, func(tx store.Tx) csc.AccountTx { return tx }), Now: cfg.Now},
			Sessions: ev.flow, Passwords: bcfg.Passwords, Logger: cfg.Logger, Now: cfg.Now,
		}
		if err := page.Mount(e.Group("")); err != nil {
			t.Fatal(err)
		}
	}
	ev.ts.Config.Handler = e
	if bcfg.SecureCookies {
		ev.ts.StartTLS()
	} else {
		ev.ts.Start()
	}
	t.Cleanup(ev.ts.Close)
	t.Cleanup(func() {
		ev.mu.Lock()
		defer ev.mu.Unlock()
		for _, s := range ev.strays {
			t.Errorf("an error of no OAuth route reached the error handler: %s", s)
		}
	})
	return ev
}

func (ev *env) update(fn func(tx store.Tx) error) {
	ev.t.Helper()
	if err := ev.db.Update(context.Background(), fn); err != nil {
		ev.t.Fatal(err)
	}
}

// updateUser changes the record of the user name in one transaction.
func (ev *env) updateUser(name string, change func(u *store.User)) {
	ev.t.Helper()
	ev.update(func(tx store.Tx) error {
		return storetest.EditUser(tx, name, change)
	})
}

func (ev *env) hash(secret string) string {
	ev.t.Helper()
	h, err := ev.hasher.Hash([]byte(secret))
	if err != nil {
		ev.t.Fatal(err)
	}
	return h
}

func (ev *env) fixtures() {
	user := func(name, password string) *store.User {
		id, _ := store.NewID()
		return &store.User{
			ID: id, Username: name, Status: store.UserActive, PasswordHash: ev.hash(password),
			PINHash: ev.hash(alicePIN), Email: name + "@example.com", EmailVerified: true,
		}
	}
	cred := func(id, owner string, status store.CredentialStatus) *store.Credential {
		c := &store.Credential{
			ID: id, Owner: owner, KeyID: hsmKey.ID, Label: "signd-" + id, Algorithm: store.AlgRSA2048,
			KeyBits: 2048, Status: status, Chain: keyChain,
		}
		if status == store.CredentialPending {
			c.Chain = nil
		}
		return c
	}
	ev.update(func(tx store.Tx) error {
		bob := user("bob", bobPassword)
		bob.TOTPSecret = bobTOTP
		carol := user("carol", carolPassword)
		carol.Status = store.UserDisabled
		erin := user("erin", davePassword)
		erin.PINHash = ""
		for _, u := range []*store.User{user("alice", alicePassword), bob, carol, user("dave", davePassword), erin} {
			if err := tx.CreateUser(u); err != nil {
				return err
			}
		}
		for _, c := range []*store.Client{
			{ID: "rp", Name: "Relying Party", SecretHash: store.HashSecret(rpSecret), RedirectURIs: []string{rpRedirect, "https://rp.example/other?x=1"},
				Scopes: []string{"service", "credential", "quiet"}},
			{ID: "rp2", Name: "Other Party", SecretHash: store.HashSecret(rp2Secret), RedirectURIs: []string{"https://rp2.example/cb"},
				Scopes: []string{"service", "credential", "quiet"}},
			{ID: "pkce", Name: "PKCE Party", SecretHash: store.HashSecret(pkceSecret), RedirectURIs: []string{"https://pkce.example/cb"},
				Scopes: []string{"service", "credential"}, RequirePKCE: true},
			{ID: "svconly", Name: "Service Only", SecretHash: store.HashSecret(rpSecret), RedirectURIs: []string{rpRedirect},
				Scopes: []string{"service"}},
		} {
			if err := tx.CreateClient(c); err != nil {
				return err
			}
		}
		for _, c := range []*store.Credential{
			cred(credAlice, "alice", store.CredentialEnabled),
			cred(credDisabled, "alice", store.CredentialDisabled),
			cred(credPending, "alice", store.CredentialPending),
			cred(credDave, "dave", store.CredentialEnabled),
			cred("cred-bob", "bob", store.CredentialEnabled),
			cred("cred-erin", "erin", store.CredentialEnabled),
		} {
			if err := tx.CreateCredential(c); err != nil {
				return err
			}
		}
		return nil
	})
}

// user reads a user back.
func (ev *env) user(name string) *store.User {
	ev.t.Helper()
	var u *store.User
	ev.update(func(tx store.Tx) (err error) { u, err = tx.User(name); return err })
	return u
}

// browser returns a fresh browser (no cookies).
func (ev *env) browser() *oauthtest.Browser {
	return oauthtest.NewBrowser(ev.ts.Client().Transport)
}

// authorizeURL builds an authorization request of client rp for scope.
func (ev *env) authorizeURL(params url.Values) string {
	return ev.ts.URL + "/oauth2/authorize?" + params.Encode()
}

// serviceParams are a valid service-scope request of rp.
func serviceParams() url.Values {
	return url.Values{
		"response_type": {"code"}, "client_id": {"rp"}, "redirect_uri": {rpRedirect},
		"scope": {"service"}, "state": {"state-123"},
	}
}

// credentialParams are a valid credential-scope request of rp.
func credentialParams(credID string) url.Values {
	p := serviceParams()
	p.Set("scope", "credential")
	p.Set("credentialID", credID)
	p.Set("numSignatures", "1")
	p.Set("hash", b64url(testHash))
	return p
}

// with is oauthtest.With: a copy of p with the pairs kv set (an empty
// value deletes).
func with(p url.Values, kv ...string) url.Values { return oauthtest.With(p, kv...) }

// must fails the test on err.
func (ev *env) must(s *oauthtest.Step, err error) *oauthtest.Step {
	ev.t.Helper()
	if err != nil {
		ev.t.Fatal(err)
	}
	return s
}

// page requires s to be a page with a form.
func page(t *testing.T, s *oauthtest.Step) *oauthtest.Step {
	t.Helper()
	if s.Redirected() || s.Form == nil {
		t.Fatalf("want a page with a form, got status %d location %v body %.300s", s.Status, s.Location, s.Body)
	}
	return s
}

// login fills the login page of s.
func (ev *env) login(b *oauthtest.Browser, s *oauthtest.Step, username, password string) *oauthtest.Step {
	ev.t.Helper()
	page(ev.t, s)
	if !s.Form.Has("username") || !s.Form.Has("password") {
		ev.t.Fatalf("not the login page: %.300s", s.Body)
	}
	return ev.must(b.Submit(s.Form, map[string]string{"username": username, "password": password}, "approve"))
}

// approve answers the consent page of s, with pin when given.
func (ev *env) approve(b *oauthtest.Browser, s *oauthtest.Step, pin string) *oauthtest.Step {
	ev.t.Helper()
	page(ev.t, s)
	set := map[string]string{}
	if pin != "" {
		set["pin"] = pin
	}
	return ev.must(b.Submit(s.Form, set, "approve"))
}

// codeOf returns the code of a successful redirect to want (the redirect
// URI), checking state and iss.
func (ev *env) codeOf(s *oauthtest.Step, want, state string) string {
	ev.t.Helper()
	code, err := s.Code(want, state, ev.srv.Issuer())
	if err != nil {
		ev.t.Fatal(err)
	}
	return code
}

// errorOf returns the error and description of an error redirect.
func errorOf(t *testing.T, s *oauthtest.Step) (string, string) {
	t.Helper()
	if !s.Redirected() {
		t.Fatalf("want an error redirect, got status %d: %.500s", s.Status, oauthtest.Text(s.Body))
	}
	q := s.Query()
	if q.Get("code") != "" {
		t.Fatalf("error redirect carries a code: %v", q)
	}
	for k := range q {
		switch k {
		case "error", "error_description", "state", "iss":
		default:
			t.Errorf("error redirect carries parameter %s", k)
		}
	}
	return q.Get("error"), q.Get("error_description")
}

// serviceCode runs a full service flow for alice in a new browser and
// returns the code (and the browser, logged in).
func (ev *env) serviceCode(params url.Values) (string, *oauthtest.Browser) {
	ev.t.Helper()
	b := ev.browser()
	s := ev.must(b.Get(ev.authorizeURL(params)))
	s = ev.login(b, s, "alice", alicePassword)
	s = ev.approve(b, s, "")
	return ev.codeOf(s, params.Get("redirect_uri"), params.Get("state")), b
}

// credentialCode runs a full credential flow for alice.
func (ev *env) credentialCode(params url.Values) string {
	ev.t.Helper()
	b := ev.browser()
	s := ev.must(b.Get(ev.authorizeURL(params)))
	s = ev.login(b, s, "alice", alicePassword)
	s = ev.approve(b, s, alicePIN)
	return ev.codeOf(s, params.Get("redirect_uri"), params.Get("state"))
}

// tokenRequest posts a token request; basic sends id/secret with Basic
// (form-urlencoded, RFC 6749 §2.3.1), otherwise form holds them.
func (ev *env) tokenRequest(form url.Values, basicID, basicSecret string) (*http.Response, map[string]any) {
	ev.t.Helper()
	return ev.post("/oauth2/token", form, basicID, basicSecret)
}

func (ev *env) post(path string, form url.Values, basicID, basicSecret string) (*http.Response, map[string]any) {
	ev.t.Helper()
	resp, err := oauthtest.PostClientForm(ev.ts.Client(), ev.ts.URL+path, form, basicID, basicSecret)
	if err != nil {
		ev.t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	if resp.ContentLength != 0 {
		_ = jsonDecode(resp, &body)
	}
	return resp, body
}

// oauth2Config is rp's x/oauth2 configuration (client_secret_basic).
func (ev *env) oauth2Config(scopes ...string) *oauth2.Config {
	return &oauth2.Config{
		ClientID: "rp", ClientSecret: rpSecret, RedirectURL: rpRedirect, Scopes: scopes,
		Endpoint: oauth2.Endpoint{
			AuthURL: ev.ts.URL + "/oauth2/authorize", TokenURL: ev.ts.URL + "/oauth2/token",
			AuthStyle: oauth2.AuthStyleInHeader,
		},
	}
}

// ctx is a context whose x/oauth2 HTTP client talks to the test server.
func (ev *env) ctx() context.Context {
	return context.WithValue(context.Background(), oauth2.HTTPClient, ev.ts.Client())
}
