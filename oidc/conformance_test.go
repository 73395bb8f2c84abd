package oidc_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/signd/signd/oauth/oauthtest"
	"github.com/signd/signd/store"
)

// The tests of reference/oidc.md §8 that need the whole flow; each name
// carries its item number. Items 1, 2, 16 (signing), 17 and 18 (units) are
// in discovery_test.go, keys_test.go, idtoken_test.go, userinfo_test.go
// and pairwise_test.go; item 20 is the store's conformance suite.

// errorPage requires an HTML error page without a redirect.
func errorPage(t *testing.T, s *oauthtest.Step) {
	t.Helper()
	if s.Redirected() || s.Status != http.StatusBadRequest || !strings.HasPrefix(s.Header.Get("Content-Type"), "text/html") {
		t.Errorf("want a 400 HTML error page, got %d %v %q", s.Status, s.Location, s.Header.Get("Content-Type"))
	}
	if s.Form != nil {
		t.Error("the error page has a form")
	}
}

// Item 3: an unknown client, or an unregistered or mismatched
// redirect_uri (prefix, appended query, fragment, case variants), gives an
// HTML error page and no redirect.
func TestItem03RegisteredRedirectURI(t *testing.T) {
	ev := newFlowEnv(t)
	tests := []struct{ name, client, uri string }{
		{"unknown client", "nobody", rpRedirect},
		{"other host", "rp", "https://evil.example.com/cb"},
		{"prefix", "rp", "https://rp.example.com/c"},
		{"longer path", "rp", rpRedirect + "/x"},
		{"appended query", "rp", rpRedirect + "?x=1"},
		{"fragment", "rp", rpRedirect + "#f"},
		{"host case", "rp", "https://RP.example.com/cb"},
		{"path case", "rp", "https://rp.example.com/CB"},
		{"scheme", "rp", "http://rp.example.com/cb"},
		{"trailing slash", "rp", rpRedirect + "/"},
		{"another client's URI", "rp", "https://other.example.org/cb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := params(tt.client, "openid", "redirect_uri", tt.uri)
			errorPage(t, ev.must(ev.browser().Get(ev.authorizeURL(p))))
		})
	}
}

// Item 4: without redirect_uri, a client with one registered URI gets it;
// a client with several gets an error page.
func TestItem04MissingRedirectURI(t *testing.T) {
	ev := newFlowEnv(t)
	p := params("rp", "openid", "redirect_uri", "")
	code := ev.codeOf(ev.flow(ev.browser(), p, "alice", alicePassword), p)
	// The token request may omit it too, as the authorization request did.
	if tr := ev.redeem("rp", code, "redirect_uri", ""); tr.Status != http.StatusOK {
		t.Errorf("token without redirect_uri: %d %v", tr.Status, tr.Body)
	}
	errorPage(t, ev.must(ev.browser().Get(ev.authorizeURL(params("multi", "openid", "redirect_uri", "")))))
}

// Item 5: a missing or unsupported response_type, or a scope without
// openid, is redirected with the right error and the state.
func TestItem05ResponseTypeAndOpenID(t *testing.T) {
	ev := newFlowEnv(t)
	tests := []struct {
		name  string
		kv    []string
		codes []string
	}{
		{"missing response_type", []string{"response_type", ""}, []string{"invalid_request", "unsupported_response_type"}},
		{"response_type token", []string{"response_type", "token"}, []string{"unsupported_response_type"}},
		{"response_type id_token", []string{"response_type", "id_token"}, []string{"unsupported_response_type"}},
		{"scope without openid", []string{"scope", "email"}, []string{"invalid_scope"}},
		{"no scope", []string{"scope", ""}, []string{"invalid_scope"}},
		{"openid with service", []string{"scope", "openid service"}, []string{"invalid_scope"}},
		{"openid for a client not registered for it", []string{"client_id", "svc", "redirect_uri", "https://svc.example.com/cb"}, []string{"invalid_scope"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := params("rp", "openid", tt.kv...)
			code, _ := ev.errorOf(ev.must(ev.browser().Get(ev.authorizeURL(p))), p.Get("state"))
			ok := false
			for _, c := range tt.codes {
				ok = ok || code == c
			}
			if !ok {
				t.Errorf("error %q, want one of %v", code, tt.codes)
			}
		})
	}
}

// Item 6: GET and POST authorization requests; unknown parameters are
// ignored; a duplicated parameter is invalid_request; scope order does not
// matter.
func TestItem06RequestForms(t *testing.T) {
	ev := newFlowEnv(t)
	t.Run("POST", func(t *testing.T) {
		b := ev.browser()
		p := params("rp", "openid email")
		s := ev.must(b.PostForm(ev.issuer+"/oauth2/authorize", p))
		s = ev.login(b, s, "alice", alicePassword)
		s = ev.answer(b, s, "approve")
		if tr := ev.redeem("rp", ev.codeOf(s, p)); tr.Status != http.StatusOK {
			t.Errorf("redeem: %d %v", tr.Status, tr.Body)
		}
	})
	t.Run("unknown parameters and reordered scopes", func(t *testing.T) {
		code := ev.code("rp", "email openid com.vendor.id_number", "foo", "bar", "vendor_x", "1")
		tr := ev.redeem("rp", code)
		if tr.Status != http.StatusOK || tr.Body["scope"] != "openid email com.vendor.id_number" {
			t.Errorf("redeem: %d %v", tr.Status, tr.Body)
		}
	})
	t.Run("duplicated parameter", func(t *testing.T) {
		u := ev.authorizeURL(params("rp", "openid")) + "&nonce=again"
		code, _ := ev.errorOf(ev.must(ev.browser().Get(u)), "state-rp")
		if code != "invalid_request" {
			t.Errorf("error %q", code)
		}
	})
}

// Item 7: state on success and error, iss on every redirect, and only the
// allowed parameters on an error redirect (checked by errorOf).
func TestItem07StateAndIss(t *testing.T) {
	ev := newFlowEnv(t)
	p := params("rp", "openid", "state", "st/with?odd=chars&x")
	ev.codeOf(ev.flow(ev.browser(), p, "alice", alicePassword), p)
	b := ev.browser()
	p = params("rp", "openid email", "state", "deny-state")
	s := ev.login(b, ev.must(b.Get(ev.authorizeURL(p))), "alice", alicePassword)
	if code, _ := ev.errorOf(ev.answer(b, s, "deny"), "deny-state"); code != "access_denied" {
		t.Errorf("deny: %q", code)
	}
}

// Item 8: PKCE S256 verifies; a wrong verifier, a verifier without a
// challenge or a challenge without a verifier is refused; plain is
// refused; a client registered for PKCE must use it.
func TestItem08PKCE(t *testing.T) {
	ev := newFlowEnv(t)
	verifier := strings.Repeat("v", 43)
	sum := sha256.Sum256([]byte(verifier))
	challenge := base64.RawURLEncoding.EncodeToString(sum[:])
	withPKCE := []string{"code_challenge", challenge, "code_challenge_method", "S256"}
	if tr := ev.redeem("pkce", ev.code("pkce", "openid", withPKCE...), "code_verifier", verifier); tr.Status != http.StatusOK {
		t.Errorf("S256: %d %v", tr.Status, tr.Body)
	}
	refused := []struct {
		name string
		auth []string
		tok  []string
	}{
		{"wrong verifier", withPKCE, []string{"code_verifier", strings.Repeat("w", 43)}},
		{"challenge without verifier", withPKCE, nil},
		{"verifier without challenge", nil, []string{"code_verifier", verifier}},
		{"short verifier", withPKCE, []string{"code_verifier", "short"}},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			tr := ev.redeem("rp", ev.code("rp", "openid", tt.auth...), tt.tok...)
			if tr.Status != http.StatusBadRequest || (tr.Body["error"] != "invalid_grant" && tr.Body["error"] != "invalid_request") {
				t.Errorf("%d %v", tr.Status, tr.Body)
			}
		})
	}
	for name, kv := range map[string][]string{
		"plain":              {"code_challenge", challenge, "code_challenge_method", "plain"},
		"required by client": {"client_id", "pkce", "redirect_uri", "https://pkce.example.com/cb"},
	} {
		t.Run(name, func(t *testing.T) {
			p := params("rp", "openid", kv...)
			if code, _ := ev.errorOf(ev.must(ev.browser().Get(ev.authorizeURL(p))), p.Get("state")); code != "invalid_request" {
				t.Errorf("error %q", code)
			}
		})
	}
}

// Item 9: prompt=none without a session is login_required; with a session
// it succeeds silently with the same sub; prompt=login and an exceeded
// max_age force a new login (a later auth_time); max_age=10000 does not;
// display, login_hint, claims_locales, acr_values and ui_locales=se are
// accepted.
func TestItem09PromptAndMaxAge(t *testing.T) {
	ev := newFlowEnv(t)
	p := params("rp", "openid", "prompt", "none")
	if code, _ := ev.errorOf(ev.must(ev.browser().Get(ev.authorizeURL(p))), p.Get("state")); code != "login_required" {
		t.Errorf("prompt=none without a session: %q", code)
	}

	b := ev.browser()
	first := params("rp", "openid")
	tr := ev.redeem("rp", ev.codeOf(ev.flow(b, first, "alice", alicePassword), first))
	idt := ev.idToken(tr, "rp")
	authTime := int64(claimsOf(t, idt)["auth_time"].(float64))

	ev.clock.Advance(5 * time.Second)
	silent := params("rp", "openid", "prompt", "none")
	s := ev.must(b.Get(ev.authorizeURL(silent)))
	tr2 := ev.redeem("rp", ev.codeOf(s, silent))
	c2 := claimsOf(t, ev.idToken(tr2, "rp"))
	if ev.idToken(tr2, "rp").Subject != idt.Subject || int64(c2["auth_time"].(float64)) != authTime {
		t.Errorf("prompt=none with a session: sub %v auth_time %v", c2["sub"], c2["auth_time"])
	}
	// Identity scopes need the consent page, which prompt=none cannot show.
	silentData := params("rp", "openid email", "prompt", "none")
	if code, _ := ev.errorOf(ev.must(b.Get(ev.authorizeURL(silentData))), silentData.Get("state")); code != "consent_required" {
		t.Errorf("prompt=none with identity scopes: %q", code)
	}

	for _, tt := range []struct {
		name    string
		kv      []string
		relogin bool
	}{
		{"max_age 10000", []string{"max_age", "10000"}, false},
		{"session reused", nil, false},
		{"prompt login", []string{"prompt", "login"}, true},
		{"max_age 1 exceeded", []string{"max_age", "1"}, true},
		{"max_age 0", []string{"max_age", "0"}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ev.clock.Advance(2 * time.Second)
			p := params("rp", "openid", tt.kv...)
			s := ev.must(b.Get(ev.authorizeURL(p)))
			loginShown := !s.Redirected() && s.Form != nil && s.Form.Has("password")
			if loginShown != tt.relogin {
				t.Fatalf("login page shown = %v, want %v", loginShown, tt.relogin)
			}
			if loginShown {
				s = ev.login(b, s, "alice", alicePassword)
			}
			c := claimsOf(t, ev.idToken(ev.redeem("rp", ev.codeOf(s, p)), "rp"))
			at, ok := c["auth_time"].(float64)
			if !ok {
				t.Fatal("no auth_time")
			}
			if tt.relogin && int64(at) != ev.clock.Now().Unix() || !tt.relogin && int64(at) >= ev.clock.Now().Unix() {
				t.Errorf("auth_time %v, now %v, relogin %v", int64(at), ev.clock.Now().Unix(), tt.relogin)
			}
		})
	}

	t.Run("accepted parameters", func(t *testing.T) {
		p := params("rp", "openid", "display", "popup", "login_hint", "alice", "claims_locales", "nl-NL en",
			"acr_values", "urn:mace:incommon:iap:silver", "ui_locales", "se", "id_token_hint", tr.Body["id_token"].(string),
			"claims", `{"id_token":{"auth_time":{"essential":true}}}`)
		if tr := ev.redeem("rp", ev.codeOf(ev.flow(b, p, "alice", alicePassword), p)); tr.Status != http.StatusOK {
			t.Errorf("redeem: %d %v", tr.Status, tr.Body)
		}
	})
	t.Run("id_token_hint of another user", func(t *testing.T) {
		carol := ev.browser()
		p := params("rp", "openid")
		s := ev.must(carol.Get(ev.authorizeURL(p)))
		s = ev.login(carol, s, "carol", alicePassword)
		ev.codeOf(s, p)
		hint := params("rp", "openid", "prompt", "none", "id_token_hint", tr.Body["id_token"].(string))
		if code, _ := ev.errorOf(ev.must(carol.Get(ev.authorizeURL(hint))), hint.Get("state")); code != "login_required" {
			t.Errorf("hint of alice in carol's session: %q", code)
		}
	})
}

// Item 10: codes carry at least 128 random bits, live at most 10 minutes
// (60 s here) and are bound to the nonce.
func TestItem10Code(t *testing.T) {
	ev := newFlowEnv(t)
	code := ev.code("rp", "openid")
	raw, err := base64.RawURLEncoding.DecodeString(code)
	if err != nil || len(raw) < 16 {
		t.Errorf("code %q: %d bytes (%v), want >= 16", code, len(raw), err)
	}
	tr := ev.redeem("rp", code)
	if c := claimsOf(t, ev.idToken(tr, "rp")); c["nonce"] != "nonce-rp" {
		t.Errorf("nonce %v", c["nonce"])
	}
	late := ev.code("rp", "openid")
	ev.clock.Advance(61 * time.Second)
	if tr := ev.redeem("rp", late); tr.Status != http.StatusBadRequest || tr.Body["error"] != "invalid_grant" {
		t.Errorf("expired code: %d %v", tr.Status, tr.Body)
	}
}

// Item 11: a second redemption, at once or 30 s later, is 400 JSON
// invalid_grant, and the access token of the first is refused at
// /userinfo from then on.
func TestItem11CodeReuse(t *testing.T) {
	for _, wait := range []time.Duration{0, 30 * time.Second} {
		t.Run(wait.String(), func(t *testing.T) {
			ev := newFlowEnv(t)
			code := ev.code("rp", "openid email")
			first := ev.redeem("rp", code)
			at, _ := first.Body["access_token"].(string)
			if first.Status != http.StatusOK || at == "" {
				t.Fatalf("first redemption: %d %v", first.Status, first.Body)
			}
			if st, _ := ev.userinfoHTTP(http.MethodGet, at); st != http.StatusOK {
				t.Fatalf("userinfo before reuse: %d", st)
			}
			ev.clock.Advance(wait)
			second := ev.redeem("rp", code)
			if second.Status != http.StatusBadRequest || second.Body["error"] != "invalid_grant" ||
				!strings.HasPrefix(second.Header.Get("Content-Type"), "application/json") {
				t.Errorf("second redemption: %d %v %s", second.Status, second.Body, second.Header.Get("Content-Type"))
			}
			checkDescription(t, second.Body["error_description"].(string))
			for _, m := range []string{http.MethodGet, http.MethodPost} {
				if st, body := ev.userinfoHTTP(m, at); st != http.StatusUnauthorized || body["error"] != "invalid_token" {
					t.Errorf("%s userinfo with the first token after reuse: %d %v", m, st, body)
				}
			}
		})
	}
}

// Item 12: concurrent redemptions of one code: exactly one succeeds.
func TestItem12ConcurrentRedemption(t *testing.T) {
	ev := newFlowEnv(t)
	code := ev.code("rp", "openid")
	const n = 8
	var wg sync.WaitGroup
	statuses := make(chan int, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses <- ev.redeem("rp", code).Status
		}()
	}
	wg.Wait()
	close(statuses)
	ok := 0
	for s := range statuses {
		if s == http.StatusOK {
			ok++
		}
	}
	if ok != 1 {
		t.Errorf("%d redemptions succeeded, want 1", ok)
	}
}

// Item 13: another client's code, or a redirect_uri that differs from the
// authorization request's, is invalid_grant.
func TestItem13CodeBinding(t *testing.T) {
	ev := newFlowEnv(t)
	code := ev.code("rp", "openid")
	if tr := ev.redeem("other", code); tr.Status != http.StatusBadRequest || tr.Body["error"] != "invalid_grant" {
		t.Errorf("other client's code: %d %v", tr.Status, tr.Body)
	}
	code = ev.code("rp", "openid")
	if tr := ev.redeem("rp", code, "redirect_uri", "https://rp.example.com/other"); tr.Status != http.StatusBadRequest || tr.Body["error"] != "invalid_grant" {
		t.Errorf("redirect_uri mismatch: %d %v", tr.Status, tr.Body)
	}
}

// Item 14: client_secret_basic (form-urlencoded) and client_secret_post
// both work; a bad or missing secret is 401 invalid_client, with
// WWW-Authenticate: Basic when Basic was used.
func TestItem14ClientAuthentication(t *testing.T) {
	ev := newFlowEnv(t)
	form := func(code string, kv ...string) url.Values {
		f := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {rpRedirect}}
		for i := 0; i+1 < len(kv); i += 2 {
			f.Set(kv[i], kv[i+1])
		}
		return f
	}
	if tr := ev.postToken(form(ev.code("rp", "openid")), "rp", rpSecret); tr.Status != http.StatusOK {
		t.Errorf("basic: %d %v", tr.Status, tr.Body)
	}
	if tr := ev.postToken(form(ev.code("rp", "openid"), "client_id", "rp", "client_secret", rpSecret), "", ""); tr.Status != http.StatusOK {
		t.Errorf("post: %d %v", tr.Status, tr.Body)
	}
	tr := ev.postToken(form(ev.code("rp", "openid")), "rp", "wrong-secret")
	if tr.Status != http.StatusUnauthorized || tr.Body["error"] != "invalid_client" || !strings.HasPrefix(tr.Header.Get("WWW-Authenticate"), "Basic") {
		t.Errorf("bad basic secret: %d %v %q", tr.Status, tr.Body, tr.Header.Get("WWW-Authenticate"))
	}
	tr = ev.postToken(form(ev.code("rp", "openid"), "client_id", "rp"), "", "")
	if tr.Status != http.StatusUnauthorized || tr.Body["error"] != "invalid_client" {
		t.Errorf("missing secret: %d %v", tr.Status, tr.Body)
	}
}

// Item 15: the token endpoint takes POST forms only; unsupported_grant_type
// is 400; the answer is JSON with no-store, token_type Bearer, an integer
// expires_in and scope as a string.
func TestItem15TokenEndpoint(t *testing.T) {
	ev := newFlowEnv(t)
	tr := ev.redeem("rp", ev.code("rp", "openid email com.vendor.proof"))
	if tr.Status != http.StatusOK || !strings.HasPrefix(tr.Header.Get("Content-Type"), "application/json") ||
		!strings.Contains(tr.Header.Get("Cache-Control"), "no-store") {
		t.Fatalf("%d %v %v", tr.Status, tr.Header, tr.Body)
	}
	exp, ok := tr.Body["expires_in"].(float64)
	if tr.Body["token_type"] != "Bearer" || !ok || exp != float64(int64(exp)) || exp <= 0 ||
		tr.Body["scope"] != "openid email com.vendor.proof" {
		t.Errorf("body %v", tr.Body)
	}
	for _, k := range []string{"access_token", "id_token"} {
		if s, _ := tr.Body[k].(string); s == "" {
			t.Errorf("%s missing", k)
		}
	}
	if tr := ev.postToken(url.Values{"grant_type": {"password"}, "username": {"alice"}}, "rp", rpSecret); tr.Status != http.StatusBadRequest || tr.Body["error"] != "unsupported_grant_type" {
		t.Errorf("password grant: %d %v", tr.Status, tr.Body)
	}
	resp, err := ev.ts.Client().Get(ev.issuer + "/oauth2/token")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode < 400 || resp.StatusCode >= 500 {
		t.Errorf("GET /oauth2/token: %d", resp.StatusCode)
	}
}

// Item 18 through the flow: the same sub for two clients of one sector, a
// different one across sectors, in the ID token and /userinfo alike, and
// the same after a restart (a new provider over the same store and salt).
func TestItem18PairwiseFlows(t *testing.T) {
	ev := newFlowEnv(t)
	sub := func(env *flowEnv, client string) string {
		tr := env.redeem(client, env.code(client, "openid"))
		idt := env.idToken(tr, client)
		_, ui := env.userinfoHTTP(http.MethodGet, tr.Body["access_token"].(string))
		if ui["sub"] != idt.Subject {
			t.Errorf("%s: userinfo sub %v, ID token sub %s", client, ui["sub"], idt.Subject)
		}
		return idt.Subject
	}
	rp, rpB, other := sub(ev, "rp"), sub(ev, "rp-b"), sub(ev, "other")
	if rp != rpB {
		t.Error("two clients of one sector got different subjects")
	}
	if rp == other {
		t.Error("two sectors got the same subject")
	}
	// Restart: new provider, KeyRing, Pairwise and server over the same
	// store and salt.
	restarted := newFlowEnvWithStore(t, ev.fixture)
	if got := sub(restarted, "rp"); got != rp {
		t.Errorf("after a restart: %s, before %s", got, rp)
	}
}

// newFlowEnvWithStore builds a second server over f's store and salt, as a
// restarted daemon would (the users and clients exist already).
func newFlowEnvWithStore(t *testing.T, f *fixture) *flowEnv {
	t.Helper()
	g := newFixtureWith(t, f.db, f.salt, f.clock)
	return newFlowEnvNoFixtures(t, g)
}

// Item 19 and the service specification's error table (§7), mapped as DESIGN.md says:
// every access_denied case of our flow, each redirected with the exact
// description (ASCII, checked by errorOf) and state. Of the server_error
// cases of the service specification, SystemError is an internal fault
// without detail, tested at the token endpoint (no signing key);
// AuthenticationFailure is in TestItem19ErrorPages and, with
// ConsentInvalidated, in oauth/errorpage_test.go. NonPkioCertificate and VerificationFailed
// concern the service specification's app-based identity check, which signd does not have.
func TestItem19SeedErrors(t *testing.T) {
	ev := newFlowEnv(t)
	scope := "openid email com.vendor.personal_info"
	tests := []struct {
		name string
		run  func(b *oauthtest.Browser, p url.Values) *oauthtest.Step
		desc string
	}{
		{"ChallengeExpired", func(b *oauthtest.Browser, p url.Values) *oauthtest.Step {
			s := ev.must(b.Get(ev.authorizeURL(p)))
			ev.clock.Advance(10*time.Minute + time.Second)
			return ev.login(b, s, "alice", alicePassword)
		}, "authentication challenge expired"},
		{"EmailUnverified", func(b *oauthtest.Browser, p url.Values) *oauthtest.Step {
			return ev.login(b, ev.must(b.Get(ev.authorizeURL(p))), "bob", bobPassword)
		}, "user email is unverified"},
		{"ConsentExpired", func(b *oauthtest.Browser, p url.Values) *oauthtest.Step {
			s := ev.login(b, ev.must(b.Get(ev.authorizeURL(p))), "alice", alicePassword)
			ev.clock.Advance(5*time.Minute + time.Second)
			return ev.answer(b, s, "approve")
		}, "consent request expired"},
		{"ConsentRejected", func(b *oauthtest.Browser, p url.Values) *oauthtest.Step {
			s := ev.login(b, ev.must(b.Get(ev.authorizeURL(p))), "alice", alicePassword)
			return ev.answer(b, s, "deny")
		}, "Resource owner rejected consent"},
		{"ProcessExpired", func(b *oauthtest.Browser, p url.Values) *oauthtest.Step {
			s := ev.must(b.Get(ev.authorizeURL(p)))
			ev.clock.Advance(9 * time.Minute)
			s = ev.login(b, s, "alice", alicePassword)
			ev.clock.Advance(time.Minute + time.Second)
			return ev.answer(b, s, "approve")
		}, "process expired"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := params("rp", scope, "state", "st-"+tt.name)
			code, desc := ev.errorOf(tt.run(ev.browser(), p), p.Get("state"))
			if code != "access_denied" || desc != tt.desc {
				t.Errorf("%s %q, want access_denied %q", code, desc, tt.desc)
			}
		})
	}
	t.Run("EmailUnverified after single sign-on", func(t *testing.T) {
		b := ev.browser()
		// bob's session from a flow that ended in access_denied still
		// exists only if the server keeps it; either way the answer is the
		// same.
		p := params("rp", "openid", "state", "st-sso")
		s := ev.must(b.Get(ev.authorizeURL(p)))
		if !s.Redirected() {
			s = ev.login(b, s, "bob", bobPassword)
		}
		if code, desc := ev.errorOf(s, "st-sso"); code != "access_denied" || desc != "user email is unverified" {
			t.Errorf("%s %q", code, desc)
		}
	})
	t.Run("SystemError", func(t *testing.T) {
		code := ev.code("rp", "openid")
		ks, err := ev.keys.Keys(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		ev.update(func(tx store.Tx) error {
			for _, k := range ks {
				if err := tx.DeleteSigningKey(k.KID); err != nil {
					return err
				}
			}
			return nil
		})
		defer func() {
			for _, k := range ks {
				_ = token.DestroyKey(context.Background(), k.KeyID)
			}
		}()
		tr := ev.redeem("rp", code)
		if tr.Status != http.StatusInternalServerError || tr.Body["error"] != "server_error" {
			t.Errorf("token without a signing key: %d %v", tr.Status, tr.Body)
		}
		if d, _ := tr.Body["error_description"].(string); strings.Contains(d, "oidc") || strings.Contains(d, "signing") {
			t.Errorf("internal detail in the description: %q", d)
		}
	})
}

// The pages are Dutch by default, English with ui_locales=en or lang=en,
// Dutch for an unsupported ui_locales (se); the consent page lists the
// claims in the page's language.
func TestPageLanguages(t *testing.T) {
	ev := newFlowEnv(t)
	tests := []struct {
		name, lang string
		kv         []string
	}{
		{"default", "nl", nil},
		{"ui_locales=en", "en", []string{"ui_locales", "en"}},
		{"lang=en", "en", []string{"lang", "en"}},
		{"ui_locales=se", "nl", []string{"ui_locales", "se"}},
		{"ui_locales=se en", "en", []string{"ui_locales", "se en-GB"}},
		{"ui_locales=nl, lang=en", "nl", []string{"ui_locales", "nl", "lang", "en"}},
	}
	want := map[string][]string{
		"nl": {`<html lang="nl">`, "Inloggen", "Wachtwoord"},
		"en": {`<html lang="en">`, "Password"},
	}
	consent := map[string][]string{
		"nl": {"Geboortedatum", "1990-02-03", "E-mailadres", "alice@example.com", "Documentnummer van het identiteitsbewijs", "Bewijsstukken", "passport-scan (image/png)", "pseudoniem"},
		"en": {"Date of birth", "1990-02-03", "Email address", "Number of the identity document", "Proof documents", "pseudonym"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := ev.browser()
			p := params("rp", strings.Join(allScopes, " "), tt.kv...)
			s := ev.must(b.Get(ev.authorizeURL(p)))
			for _, w := range want[tt.lang] {
				if !strings.Contains(s.Body, w) {
					t.Errorf("login page lacks %q", w)
				}
			}
			s = ev.login(b, s, "alice", alicePassword)
			if !strings.Contains(s.Body, `<html lang="`+tt.lang+`">`) {
				t.Errorf("consent page not in %s", tt.lang)
			}
			for _, w := range consent[tt.lang] {
				if !strings.Contains(oauthtest.Text(s.Body), w) {
					t.Errorf("consent page lacks %q:\n%s", w, oauthtest.Text(s.Body))
				}
			}
			ev.codeOf(ev.answer(b, s, "approve"), p)
		})
	}
}
