package oidc_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/signd/signd/oauth"
	"github.com/signd/signd/oidc"
	"github.com/signd/signd/store"
)

var allScopes = []string{"openid", "email", "com.vendor.personal_info", "com.vendor.id_number", "com.vendor.proof"}

func TestProfileInfoAndMatch(t *testing.T) {
	p := &oidc.Profile{Provider: newFixture(t).p}
	if info := p.Info(); info.Name != "openid" || !info.RedirectURIOptional {
		t.Errorf("Info = %+v", info)
	}
	for _, tt := range []struct {
		scopes []string
		want   bool
	}{
		{[]string{"openid"}, true},
		{[]string{"email", "openid"}, true},
		{[]string{"openid", "service"}, true}, // mixed: Authorize refuses it
		{[]string{"email"}, false},
		{[]string{"service"}, false},
		{nil, false},
	} {
		if got := p.Match(tt.scopes); got != tt.want {
			t.Errorf("Match(%v) = %v", tt.scopes, got)
		}
	}
}

// fakeIDToken builds an unsigned-looking JWS with the given payload (the
// hint is only read, never trusted).
func fakeIDToken(payload map[string]any) string {
	b, _ := json.Marshal(payload)
	return "eyJhbGciOiJSUzI1NiJ9." + base64.RawURLEncoding.EncodeToString(b) + ".c2ln"
}

func authorizeRequest(client *store.Client, scope string, params url.Values) *oauth.AuthorizeRequest {
	if params == nil {
		params = url.Values{}
	}
	return &oauth.AuthorizeRequest{
		Client: client, Scopes: strings.Fields(scope), RedirectURI: client.RedirectURIs[0],
		Params: params, Lang: "nl", RequestedAt: time.Now(),
	}
}

// Items 5, 6 and 9 of reference/oidc.md §8 as far as the profile decides
// them: mixing, unknown scopes and parameters, prompt, max_age, display,
// login_hint, claims_locales, acr_values, ui_locales accepted.
func TestItem09ProfileAuthorize(t *testing.T) {
	p := &oidc.Profile{Provider: newFixture(t).p}
	rp := &store.Client{ID: "rp", RedirectURIs: []string{"https://rp.example.com/cb"}, Scopes: allScopes}
	limited := &store.Client{ID: "limited", RedirectURIs: []string{"https://rp.example.com/cb"}, Scopes: []string{"openid", "email"}}
	spread := &store.Client{ID: "spread", RedirectURIs: []string{"https://a.example.com/cb", "https://b.example.com/cb"}, Scopes: allScopes}
	tests := []struct {
		name      string
		client    *store.Client
		scope     string
		params    url.Values
		code      string // expected error code; "" = success
		scopes    []string
		login     oauth.LoginPolicy
		hintSub   bool
		promptCon bool
	}{
		{name: "openid", client: rp, scope: "openid", scopes: []string{"openid"}, login: oauth.LoginPolicy{SSO: true}},
		{name: "every scope, any order", client: rp, scope: "com.vendor.proof email openid com.vendor.id_number com.vendor.personal_info",
			scopes: []string{"openid", "com.vendor.proof", "email", "com.vendor.id_number", "com.vendor.personal_info"}, login: oauth.LoginPolicy{SSO: true}},
		{name: "unknown scopes ignored", client: rp, scope: "openid profile address email",
			scopes: []string{"openid", "email"}, login: oauth.LoginPolicy{SSO: true}},
		{name: "scopes the client lacks dropped", client: limited, scope: "openid email com.vendor.id_number",
			scopes: []string{"openid", "email"}, login: oauth.LoginPolicy{SSO: true}},
		{name: "mixed with service", client: rp, scope: "openid service", code: "invalid_scope"},
		{name: "mixed with credential", client: rp, scope: "credential openid", code: "invalid_scope"},
		{name: "prompt none", client: rp, scope: "openid", params: url.Values{"prompt": {"none"}},
			scopes: []string{"openid"}, login: oauth.LoginPolicy{SSO: true, Prompt: oauth.PromptNone}},
		{name: "prompt login", client: rp, scope: "openid", params: url.Values{"prompt": {"login"}},
			scopes: []string{"openid"}, login: oauth.LoginPolicy{SSO: true, Prompt: oauth.PromptLogin}},
		{name: "prompt login consent", client: rp, scope: "openid", params: url.Values{"prompt": {"login consent"}},
			scopes: []string{"openid"}, login: oauth.LoginPolicy{SSO: true, Prompt: oauth.PromptLogin}, promptCon: true},
		{name: "prompt select_account", client: rp, scope: "openid", params: url.Values{"prompt": {"select_account"}},
			scopes: []string{"openid"}, login: oauth.LoginPolicy{SSO: true}},
		{name: "prompt none with login", client: rp, scope: "openid", params: url.Values{"prompt": {"none login"}}, code: "invalid_request"},
		{name: "prompt unknown", client: rp, scope: "openid", params: url.Values{"prompt": {"sometimes"}}, code: "invalid_request"},
		{name: "max_age 0", client: rp, scope: "openid", params: url.Values{"max_age": {"0"}},
			scopes: []string{"openid"}, login: oauth.LoginPolicy{SSO: true, HasMaxAge: true}},
		{name: "max_age 1", client: rp, scope: "openid", params: url.Values{"max_age": {"1"}},
			scopes: []string{"openid"}, login: oauth.LoginPolicy{SSO: true, HasMaxAge: true, MaxAge: time.Second}},
		{name: "max_age 10000", client: rp, scope: "openid", params: url.Values{"max_age": {"10000"}},
			scopes: []string{"openid"}, login: oauth.LoginPolicy{SSO: true, HasMaxAge: true, MaxAge: 10000 * time.Second}},
		{name: "max_age huge", client: rp, scope: "openid", params: url.Values{"max_age": {"99999999999999999"}},
			scopes: []string{"openid"}, login: oauth.LoginPolicy{SSO: true, HasMaxAge: true, MaxAge: 365 * 24 * time.Hour}},
		{name: "max_age negative", client: rp, scope: "openid", params: url.Values{"max_age": {"-1"}}, code: "invalid_request"},
		{name: "max_age text", client: rp, scope: "openid", params: url.Values{"max_age": {"soon"}}, code: "invalid_request"},
		{name: "accepted parameters", client: rp, scope: "openid", params: url.Values{
			"nonce": {"n"}, "login_hint": {"anne"}, "display": {"popup"}, "claims_locales": {"nl en"},
			"acr_values": {"urn:mace:incommon:iap:silver"}, "ui_locales": {"se"}, "lang": {"en"},
			"claims": {`{"userinfo":{"email":{"essential":true}}}`}, "unknown_parameter": {"x"},
		}, scopes: []string{"openid"}, login: oauth.LoginPolicy{SSO: true}},
		{name: "response_mode query", client: rp, scope: "openid", params: url.Values{"response_mode": {"query"}},
			scopes: []string{"openid"}, login: oauth.LoginPolicy{SSO: true}},
		{name: "response_mode form_post", client: rp, scope: "openid", params: url.Values{"response_mode": {"form_post"}}, code: "invalid_request"},
		{name: "request object", client: rp, scope: "openid", params: url.Values{"request": {"eyJ..."}}, code: "request_not_supported"},
		{name: "request_uri", client: rp, scope: "openid", params: url.Values{"request_uri": {"https://rp.example.com/r"}}, code: "request_uri_not_supported"},
		{name: "id_token_hint", client: rp, scope: "openid", params: url.Values{"id_token_hint": {fakeIDToken(map[string]any{"sub": "s1", "aud": "rp"})}},
			scopes: []string{"openid"}, login: oauth.LoginPolicy{SSO: true}, hintSub: true},
		{name: "id_token_hint audience array", client: rp, scope: "openid", params: url.Values{"id_token_hint": {fakeIDToken(map[string]any{"sub": "s1", "aud": []string{"x", "rp"}})}},
			scopes: []string{"openid"}, login: oauth.LoginPolicy{SSO: true}, hintSub: true},
		{name: "id_token_hint of another client", client: rp, scope: "openid", params: url.Values{"id_token_hint": {fakeIDToken(map[string]any{"sub": "s1", "aud": "other"})}}, code: "invalid_request"},
		{name: "id_token_hint garbage", client: rp, scope: "openid", params: url.Values{"id_token_hint": {"garbage"}}, code: "invalid_request"},
		// Claim names are case-sensitive (RFC 7519 §4): "SUB" and "Aud"
		// are not sub and aud (found by FuzzHintSubject).
		{name: "id_token_hint claim names in another case", client: rp, scope: "openid", params: url.Values{"id_token_hint": {fakeIDToken(map[string]any{"SUB": "s1", "aud": "rp"})}}, code: "invalid_request"},
		{name: "id_token_hint audience in another case", client: rp, scope: "openid", params: url.Values{"id_token_hint": {fakeIDToken(map[string]any{"sub": "s1", "Aud": "rp"})}}, code: "invalid_request"},
		{name: "client without a sector", client: spread, scope: "openid", code: "unauthorized_client"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := p.Authorize(context.Background(), authorizeRequest(tt.client, tt.scope, tt.params))
			if tt.code != "" {
				var oe *oauth.Error
				if !errors.As(err, &oe) || oe.Code != tt.code {
					t.Fatalf("Authorize = %v, want %s", err, tt.code)
				}
				checkDescription(t, oe.Description)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(a.Scopes, tt.scopes) || a.Login != tt.login {
				t.Errorf("scopes %v login %+v; want %v %+v", a.Scopes, a.Login, tt.scopes, tt.login)
			}
			if got := a.Binding.Params["hint_sub"] == "s1"; got != tt.hintSub {
				t.Errorf("hint sub bound = %v", got)
			}
			if got := a.Binding.Params["prompt_consent"] != ""; got != tt.promptCon {
				t.Errorf("prompt=consent bound = %v", got)
			}
			if a.Binding.Details != nil {
				t.Errorf("binding %+v", a.Binding)
			}
		})
	}
}

// checkDescription applies item 19: error_description uses only %x20-21 /
// %x23-5B / %x5D-7E (ASCII, no '"' or '\').
func checkDescription(t *testing.T, s string) {
	t.Helper()
	for _, c := range []byte(s) {
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			t.Errorf("description %q has the byte %#x", s, c)
			return
		}
	}
}

func userRequest(client *store.Client, user *store.User, scopes []string) *oauth.Request {
	return &oauth.Request{
		Client: client, User: user, Scopes: scopes, RedirectURI: client.RedirectURIs[0],
		Lang: "nl", RequestedAt: time.Now().Add(-time.Minute), AuthTime: time.Now(),
	}
}

// Seed §7 EmailUnverified and the id_token_hint check; item 19 for the
// access_denied description.
func TestItem19CheckUser(t *testing.T) {
	f := newFixture(t)
	p := &oidc.Profile{Provider: f.p}
	rp := &store.Client{ID: "rp", RedirectURIs: []string{"https://rp.example.com/cb"}, Scopes: allScopes}
	verified := &store.User{ID: "id-1", Username: "anne", Email: "anne@example.com", EmailVerified: true}
	unverified := &store.User{ID: "id-2", Username: "bob", Email: "bob@example.com"}
	noEmail := &store.User{ID: "id-3", Username: "carl"}
	sub, _ := f.p.Subject(rp, verified)
	tests := []struct {
		name string
		user *store.User
		hint string
		code string
		desc string
	}{
		{"verified", verified, "", "", ""},
		{"email unverified", unverified, "", "access_denied", "user email is unverified"},
		{"no email", noEmail, "", "access_denied", "user email is unverified"},
		{"hint names the user", verified, sub, "", ""},
		{"hint names someone else", verified, "another-sub", "login_required", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := userRequest(rp, tt.user, []string{"openid"})
			if tt.hint != "" {
				r.Binding.Params = map[string]string{"hint_sub": tt.hint}
			}
			err := p.CheckUser(context.Background(), r)
			if tt.code == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var oe *oauth.Error
			if !errors.As(err, &oe) || oe.Code != tt.code || tt.desc != "" && oe.Description != tt.desc {
				t.Fatalf("CheckUser = %v, want %s %q", err, tt.code, tt.desc)
			}
			checkDescription(t, oe.Description)
		})
	}
}

// The consent page lists the claims that will be shared, with the user's
// values, labelled in both page languages; a flow that releases nothing
// but the pseudonym needs no consent page unless prompt=consent.
func TestConsent(t *testing.T) {
	f := newFixture(t)
	p := &oidc.Profile{Provider: f.p}
	rp := &store.Client{ID: "rp", RedirectURIs: []string{"https://rp.example.com/cb"}, Scopes: allScopes}
	full := &store.User{ID: "id-1", Email: "anne@example.com", EmailVerified: true, Claims: fullClaims,
		Proofs: []store.ProofRef{{ID: "passport", ContentType: store.ProofPNG}, {ID: "letter", ContentType: store.ProofPDF}}}
	partial := &store.User{ID: "id-2", Email: "p@example.com", EmailVerified: true, Claims: map[string]string{"given_name": "Piet"}}
	bare := &store.User{ID: "id-3", Email: "b@example.com", EmailVerified: true}

	none := []struct {
		name   string
		user   *store.User
		scopes []string
	}{
		{"openid", full, []string{"openid"}},
		{"identity scopes without data", bare, []string{"openid", "com.vendor.personal_info", "com.vendor.id_number", "com.vendor.proof"}},
	}
	for _, tt := range none {
		c, err := p.Consent(context.Background(), userRequest(rp, tt.user, tt.scopes))
		if err != nil || c != nil {
			t.Errorf("%s: Consent = %+v, %v; want none", tt.name, c, err)
		}
	}
	r := userRequest(rp, full, []string{"openid"})
	r.Binding.Params = map[string]string{"prompt_consent": "1"}
	if c, err := p.Consent(context.Background(), r); err != nil || c == nil || len(c.Permissions) != 1 || len(c.Items) != 0 {
		t.Fatalf("Consent(openid, prompt=consent) = %+v, %v", c, err)
	}

	c, err := p.Consent(context.Background(), userRequest(rp, full, allScopes))
	if err != nil || c == nil {
		t.Fatal(c, err)
	}
	if c.RequirePIN || c.Title.NL == "" || c.Title.EN == "" || len(c.Permissions) != 2 {
		t.Errorf("consent %+v", c)
	}
	items := map[string]string{} // "nl|en" → value
	for _, it := range c.Items {
		if it.Label.NL == "" || it.Label.EN == "" {
			t.Errorf("item %+v not translated", it)
		}
		items[it.Label.NL+"|"+it.Label.EN] = it.Value
	}
	want := map[string]string{
		"E-mailadres|Email address":   "anne@example.com",
		"Voornamen|Given names":       "Anne",
		"Achternaam|Last name":        "Jansen",
		"Geboortedatum|Date of birth": "1990-02-03",
		"Documentnummer van het identiteitsbewijs|Number of the identity document": "NX1234567",
		"Bewijsstukken|Proof documents":                                            "passport (image/png), letter (application/pdf)",
	}
	for k, v := range want {
		if items[k] != v {
			t.Errorf("item %s = %q, want %q", k, items[k], v)
		}
	}
	if len(c.Items) != 1+12+1+1 {
		t.Errorf("%d items, want 15: %v", len(c.Items), items)
	}
	// Each item is recorded under its claim with the digest of the data
	// behind it (email: also email_verified; proofs: id, type, content hash).
	record, err := c.Record()
	if err != nil || len(record) != len(c.Items) {
		t.Fatalf("record %v, %v; want one entry per item", record, err)
	}
	for name, d := range map[string][]byte{
		"email":                oidc.ConsentDigest("email", "anne@example.com", "true"),
		"given_name":           oidc.ConsentDigest("given_name", "Anne"),
		"com.vendor.last_name": oidc.ConsentDigest("com.vendor.last_name", "Jansen"),
		"com.vendor.id_number": oidc.ConsentDigest("com.vendor.id_number", "NX1234567"),
		"com.vendor.proof":     oidc.ConsentDigest("com.vendor.proof", "passport", "image/png", "", "letter", "application/pdf", ""),
	} {
		if !record.Equal(name, d) {
			t.Errorf("record[%s] = %x, want %x", name, record[name], d)
		}
	}
	// Only what the user has, and only for the granted scopes.
	c, _ = p.Consent(context.Background(), userRequest(rp, partial, allScopes))
	if len(c.Items) != 2 || c.Items[0].Value != "p@example.com" || c.Items[1].Value != "Piet" {
		t.Errorf("partial user: %+v", c.Items)
	}
	c, _ = p.Consent(context.Background(), userRequest(rp, full, []string{"openid", "com.vendor.id_number"}))
	if len(c.Items) != 1 || c.Items[0].Value != "NX1234567" {
		t.Errorf("id_number only: %+v", c.Items)
	}
}

// Item 16 through the profile: Issue makes a Bearer access token and
// TokenResponse adds id_token (with the pairwise sub, nonce and at_hash of
// the minted token) and scope.
func TestItem16TokenResponse(t *testing.T) {
	f := newFixture(t)
	if _, err := f.keys.Ensure(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	p := &oidc.Profile{Provider: f.p}
	rp := &store.Client{ID: "rp", RedirectURIs: []string{"https://rp.example.com/cb"}, Scopes: allScopes}
	user := &store.User{ID: "id-1", Email: "anne@example.com", EmailVerified: true}
	r := userRequest(rp, user, []string{"openid", "email"})
	r.Nonce = "n-1"
	iss, err := p.Issue(r)
	if err != nil || iss.Kind != store.TokenAccess || iss.TokenType != "Bearer" || iss.TTL != 0 || iss.Scopes != nil {
		t.Fatalf("Issue = %+v, %v", iss, err)
	}
	tok := &oauth.IssuedToken{Value: "access-token-value", Kind: store.TokenAccess, TokenType: "Bearer",
		Scopes: []string{"openid", "email"}, IssuedAt: f.clock.Now(), ExpiresAt: f.clock.Now().Add(time.Hour)}
	extra, err := p.TokenResponse(context.Background(), r, tok)
	if err != nil {
		t.Fatal(err)
	}
	if extra["scope"] != "openid email" || len(extra) != 2 {
		t.Errorf("extra = %v", extra)
	}
	raw, _ := extra["id_token"].(string)
	jws, err := jose.ParseSignedCompact(raw, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		t.Fatal(err)
	}
	set := f.fetchJWKS()
	keys := set.Key(jws.Signatures[0].Header.KeyID)
	if len(keys) != 1 {
		t.Fatal("kid not published")
	}
	payload, err := jws.Verify(keys[0].Key)
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	_ = json.Unmarshal(payload, &c)
	sub, _ := f.p.Subject(rp, user)
	if c["sub"] != sub || c["nonce"] != "n-1" || c["at_hash"] != oidc.AtHash("access-token-value") ||
		c["aud"] != "rp" || c["auth_time"] != float64(r.AuthTime.Unix()) {
		t.Errorf("claims %v", c)
	}
}

// ConsentDigest is SHA-256 over length-prefixed parts (8-byte big-endian
// lengths) after a domain label, so that no two different claim/value
// lists share a digest.
func TestConsentDigest(t *testing.T) {
	h := sha256.New()
	for _, part := range []string{"signd oidc consent v1", "email", "a@x.example", "true"} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(part)))
		h.Write(n[:])
		h.Write([]byte(part))
	}
	if got := oidc.ConsentDigest("email", "a@x.example", "true"); !bytes.Equal(got, h.Sum(nil)) {
		t.Errorf("ConsentDigest = %x, want %x", got, h.Sum(nil))
	}
	distinct := [][]byte{
		oidc.ConsentDigest("given_name", "Anne"),
		oidc.ConsentDigest("given_nam", "eAnne"),
		oidc.ConsentDigest("given_name", "Ann", "e"),
		oidc.ConsentDigest("given_name", "Anne", ""),
		oidc.ConsentDigest("com.vendor.nl_brp_voornaam", "Anne"),
		oidc.ConsentDigest("email", "a@x.example", "true"),
		oidc.ConsentDigest("email", "a@x.example", "false"),
		oidc.ConsentDigest("email", "b@x.example", "true"),
	}
	for i := range distinct {
		for j := range i {
			if bytes.Equal(distinct[i], distinct[j]) {
				t.Errorf("digests %d and %d collide", i, j)
			}
		}
	}
}
