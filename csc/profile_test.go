package csc_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"errors"
	"log/slog"
	"math/big"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/oauth2"

	"github.com/signd/signd/csc"
	"github.com/signd/signd/csc/certstatus"
	"github.com/signd/signd/oauth"
	"github.com/signd/signd/oauth/oauthtest"
	"github.com/signd/signd/oauth/passwords"
	"github.com/signd/signd/store"
	"github.com/signd/signd/store/memory"
	"github.com/signd/signd/store/storetest/backends"
)

// profileFixture is a store with alice (who owns an enabled, a disabled and
// a pending credential, and one whose certificate is not yet valid) and dave
// (who owns one), for the profile tests. The certificates come from a
// throwaway CA over software keys: the profiles only read them (signing
// with the HSM key is the signHash tests' part).
type profileFixture struct {
	db   *memory.DB
	now  time.Time
	leaf *x509.Certificate
}

func newProfileFixture(t *testing.T) *profileFixture {
	t.Helper()
	db := backends.Memory(t, memory.Options{})
	now := time.Now().UTC().Round(0)
	caKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "Profile Test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour * 48),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	issue := func(cn string, from time.Time) [][]byte {
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(from.UnixNano()), Subject: pkix.Name{CommonName: cn, Organization: []string{"Example BV"}},
			NotBefore: from, NotAfter: from.Add(24 * time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &caKey.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		return [][]byte{der, caDER}
	}
	chain := issue("Alice Example", now.Add(-time.Hour))
	leaf, _ := x509.ParseCertificate(chain[0])
	hasher, _ := store.NewHasher(store.Argon2Params{Time: 1, MemoryKiB: 64, Threads: 1, KeyLen: 32, SaltLen: 16})
	hash := func(s string) string { h, _ := hasher.Hash([]byte(s)); return h }
	err = db.Update(context.Background(), func(tx store.Tx) error {
		for _, name := range []string{"alice", "dave"} {
			if err := tx.CreateUser(&store.User{ID: "id-" + name, Username: name, Status: store.UserActive,
				PasswordHash: hash(name + "-password"), PINHash: hash("2468")}); err != nil {
				return err
			}
		}
		if err := tx.CreateClient(&store.Client{ID: "rp", Name: "RP", SecretHash: store.HashSecret("rp-secret-0123456789abcdef0123456789"),
			RedirectURIs: []string{"https://rp.example/cb"}, Scopes: []string{"service", "credential"}}); err != nil {
			return err
		}
		for _, c := range []struct {
			id, owner string
			status    store.CredentialStatus
			chain     [][]byte
			desc      string
		}{
			{"c-alice", "alice", store.CredentialEnabled, chain, "Work key"},
			{"c-disabled", "alice", store.CredentialDisabled, chain, ""},
			{"c-pending", "alice", store.CredentialPending, nil, ""},
			{"c-future", "alice", store.CredentialEnabled, issue("Alice Future", now.Add(time.Hour)), ""},
			{"c-dave", "dave", store.CredentialEnabled, chain, ""},
			{"c-plain", "alice", store.CredentialEnabled, chain, ""},
		} {
			if err := tx.CreateCredential(&store.Credential{ID: c.id, Owner: c.owner, KeyID: []byte("k-" + c.id), Label: "signd-" + c.id,
				Algorithm: store.AlgRSA2048, KeyBits: 2048, Status: c.status, Chain: c.chain, Description: c.desc}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return &profileFixture{db: db, now: now, leaf: leaf}
}

var profileDigest = bytes.Repeat([]byte{0x5a}, 32)

func profileCredParams(kv ...string) url.Values {
	return oauthtest.With(url.Values{"credentialID": {"c-alice"}, "numSignatures": {"1"}, "hash": {base64.RawURLEncoding.EncodeToString(profileDigest)}}, kv...)
}

// TestCredentialProfileAuthorize checks the credential scope's authorize
// parameters, one case per rule.
func TestCredentialProfileAuthorize(t *testing.T) {
	p := &csc.CredentialProfile{}
	tests := []struct {
		name   string
		scopes []string
		params url.Values
		code   string // "" = accepted
		desc   string
	}{
		{"valid_request_is_accepted", nil, profileCredParams(), "", ""},
		{"padded_hash_is_accepted", nil, profileCredParams("hash", base64.URLEncoding.EncodeToString(profileDigest)), "", ""},
		{"credential_with_service_is_invalid_scope", []string{"credential", "service"}, profileCredParams(), "invalid_scope", ""},
		{"credential_with_openid_is_invalid_scope", []string{"openid", "credential"}, profileCredParams(), "invalid_scope", ""},
		{"missing_credentialID_is_invalid_request", nil, profileCredParams("credentialID", ""), "invalid_request", "credentialID"},
		{"long_credentialID_is_invalid_request", nil, profileCredParams("credentialID", strings.Repeat("c", 129)), "invalid_request", "credentialID"},
		{"missing_numSignatures_is_invalid_request", nil, profileCredParams("numSignatures", ""), "invalid_request", "numSignatures"},
		{"numSignatures_2_is_invalid_request", nil, profileCredParams("numSignatures", "2"), "invalid_request", "numSignatures"},
		{"numSignatures_0_is_invalid_request", nil, profileCredParams("numSignatures", "0"), "invalid_request", "numSignatures"},
		{"numSignatures_not_a_number_is_invalid_request", nil, profileCredParams("numSignatures", "one"), "invalid_request", "numSignatures"},
		{"missing_hash_is_invalid_request", nil, profileCredParams("hash", ""), "invalid_request", "hash"},
		{"hash_of_31_bytes_is_invalid_request", nil, profileCredParams("hash", base64.RawURLEncoding.EncodeToString(profileDigest[:31])), "invalid_request", "hash"},
		{"hash_of_33_bytes_is_invalid_request", nil, profileCredParams("hash", base64.RawURLEncoding.EncodeToString(append(profileDigest, 1))), "invalid_request", "hash"},
		{"sha384_hash_is_accepted", nil, profileCredParams("hash", base64.RawURLEncoding.EncodeToString(bytes.Repeat([]byte{7}, 48))), "", ""},
		{"sha512_hash_is_accepted", nil, profileCredParams("hash", base64.RawURLEncoding.EncodeToString(bytes.Repeat([]byte{7}, 64))), "", ""},
		{"hash_of_47_bytes_is_invalid_request", nil, profileCredParams("hash", base64.RawURLEncoding.EncodeToString(bytes.Repeat([]byte{7}, 47))), "invalid_request", "hash"},
		{"hash_of_65_bytes_is_invalid_request", nil, profileCredParams("hash", base64.RawURLEncoding.EncodeToString(bytes.Repeat([]byte{7}, 65))), "invalid_request", "hash"},
		{"hash_of_20_bytes_is_invalid_request", nil, profileCredParams("hash", base64.RawURLEncoding.EncodeToString(bytes.Repeat([]byte{7}, 20))), "invalid_request", "hash"},
		{"two_hashes_for_one_signature_is_invalid_request", nil, profileCredParams("hash", base64.RawURLEncoding.EncodeToString(profileDigest)+","+base64.RawURLEncoding.EncodeToString(profileDigest)), "invalid_request", "numSignatures"},
		{"standard_base64_hash_is_invalid_request", nil, profileCredParams("hash", strings.Repeat("+/", 21)+"+A"), "invalid_request", "hash"},
		{"long_description_is_invalid_request", nil, profileCredParams("description", strings.Repeat("d", 501)), "invalid_request", "description"},
		{"description_of_500_bytes_is_accepted", nil, profileCredParams("description", strings.Repeat("d", 500)), "", ""},
		{"description_with_accents_is_accepted", nil, profileCredParams("description", "Offerte café 2027.pdf"), "", ""},
		{"description_with_bidi_override_is_invalid_request", nil, profileCredParams("description", "invoice\u202efdp.exe"), "invalid_request", "description"},
		{"description_with_newline_is_invalid_request", nil, profileCredParams("description", "Contract\nPaid in full"), "invalid_request", "description"},
		{"description_with_escape_is_invalid_request", nil, profileCredParams("description", "Contract\x1b[2J"), "invalid_request", "description"},
		{"description_not_utf8_is_invalid_request", nil, profileCredParams("description", "Contract\xff"), "invalid_request", "description"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			scopes := tt.scopes
			if scopes == nil {
				scopes = []string{"credential"}
			}
			if !p.Match(scopes) {
				t.Fatalf("Match(%v) = false", scopes)
			}
			a, err := p.Authorize(context.Background(), &oauth.AuthorizeRequest{Scopes: scopes, Params: tt.params})
			if tt.code == "" {
				if err != nil {
					t.Fatal(err)
				}
				ds := a.Binding.Details
				want, _ := base64.RawURLEncoding.DecodeString(strings.TrimRight(tt.params.Get("hash"), "="))
				if len(ds) != 1 || ds[0].Type != "credential" || ds[0].Identifier != "c-alice" || len(ds[0].Digests) != 1 || !bytes.Equal(ds[0].Digests[0], want) || len(want) < 32 || a.Login.SSO {
					t.Errorf("authorization %+v", a)
				}
				return
			}
			var oe *oauth.Error
			if !errors.As(err, &oe) || oe.Code != tt.code || !strings.Contains(oe.Description, tt.desc) {
				t.Fatalf("error %v, want %s about %s", err, tt.code, tt.desc)
			}
		})
	}
}

// TestServiceProfile: service alone, single sign-on, a Bearer token.
func TestServiceProfile(t *testing.T) {
	p := csc.ServiceProfile{}
	if !p.Match([]string{"service"}) || p.Match([]string{"credential"}) || p.Match([]string{"openid"}) {
		t.Error("Match")
	}
	a, err := p.Authorize(context.Background(), &oauth.AuthorizeRequest{Scopes: []string{"service"}})
	if err != nil || !a.Login.SSO || a.Scopes != nil {
		t.Errorf("Authorize = %+v, %v", a, err)
	}
	for _, scopes := range [][]string{{"service", "credential"}, {"service", "openid"}, {"email", "service"}} {
		if _, err := p.Authorize(context.Background(), &oauth.AuthorizeRequest{Scopes: scopes}); !profileIsCode(err, "invalid_scope") {
			t.Errorf("Authorize(%v) = %v, want invalid_scope", scopes, err)
		}
	}
	c, err := p.Consent(context.Background(), &oauth.Request{})
	if err != nil || c.RequirePIN || len(c.Permissions) != 1 || c.Title.NL == "" || c.Title.EN == "" {
		t.Errorf("Consent = %+v, %v", c, err)
	}
	iss, err := p.Issue(&oauth.Request{})
	if err != nil || iss.Kind != store.TokenAccess || iss.TokenType != "Bearer" {
		t.Errorf("Issue = %+v, %v", iss, err)
	}
}

func profileIsCode(err error, code string) bool {
	var oe *oauth.Error
	return errors.As(err, &oe) && oe.Code == code
}

// TestCredentialProfileUser: after login the credential must be the user's
// and usable; every refusal is the same answer, whether the ID exists or
// not.
func TestCredentialProfileUser(t *testing.T) {
	f := newProfileFixture(t)
	p := &csc.CredentialProfile{Store: credentialStore(f.db), Now: func() time.Time { return f.now }}
	alice := &store.User{Username: "alice"}
	req := func(cred string) *oauth.Request {
		return &oauth.Request{User: alice, Binding: oauth.Binding{
			Details: []oauth.AuthorizationDetail{{Type: "credential", Identifier: cred, Digests: [][]byte{profileDigest}}},
			Params:  map[string]string{"description": "Contract 7"},
		}}
	}
	if err := p.CheckUser(context.Background(), req("c-alice")); err != nil {
		t.Fatalf("own enabled credential: %v", err)
	}
	c, err := p.Consent(context.Background(), req("c-alice"))
	if err != nil {
		t.Fatal(err)
	}
	var items []string
	for _, it := range c.Items {
		if it.Label.NL == "" || it.Label.EN == "" {
			t.Errorf("item %+v lacks a language", it)
		}
		items = append(items, it.Value)
	}
	// The key by its description, the holder by CN and organisation, the
	// document, the hash in groups of four; never the HSM label.
	want := []string{"Work key", "Alice Example, Example BV", "Contract 7", strings.TrimSpace(strings.Repeat("5a5a ", 16))}
	if strings.Join(items, "|") != strings.Join(want, "|") || !c.RequirePIN || c.Title.NL == "" || c.Title.EN == "" {
		t.Errorf("consent items %q, want %q (PIN %v)", items, want, c.RequirePIN)
	}
	if l := c.Items[3].Label.EN; l != "Hash (SHA-256)" {
		t.Errorf("hash label %q", l)
	}
	// Without a description the key is named by its certificate's CN.
	c, err = p.Consent(context.Background(), req("c-plain"))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Items[0].Value; got != "Alice Example" {
		t.Errorf("key of a credential without description shown as %q, want the CN %q", got, "Alice Example")
	}
	for _, it := range c.Items {
		if strings.Contains(it.Value, "signd-c-") || strings.Contains(it.Value, "CN=") {
			t.Errorf("consent item %q shows the HSM label or a raw DN", it.Value)
		}
	}
	var first string
	for _, cred := range []string{"c-nope", "c-dave", "c-disabled", "c-pending", "c-future"} {
		for _, call := range []func() error{
			func() error { return p.CheckUser(context.Background(), req(cred)) },
			func() error { _, err := p.Consent(context.Background(), req(cred)); return err },
		} {
			err := call()
			if !profileIsCode(err, "access_denied") {
				t.Errorf("%s: %v, want access_denied", cred, err)
				continue
			}
			if first == "" {
				first = err.Error()
			}
			if err.Error() != first {
				t.Errorf("%s: %q differs from %q", cred, err, first)
			}
		}
	}
	// The certificate is revoked, suspended, or its status unknown.
	rev := &fakeRevocation{}
	p.Revocation = rev
	for _, st := range []struct {
		s       certstatus.Status
		current bool
	}{{certstatus.Revoked, true}, {certstatus.Suspended, true}, {certstatus.Valid, false}} {
		rev.set(st.s, st.current)
		if err := p.CheckUser(context.Background(), req("c-alice")); !profileIsCode(err, "access_denied") || err.Error() != first {
			t.Errorf("%s (current %v): %v, want the one refusal", st.s, st.current, err)
		}
	}
	rev.set(certstatus.Valid, true)
	if err := p.CheckUser(context.Background(), req("c-alice")); err != nil {
		t.Fatalf("valid again: %v", err)
	}
	// The certificate expires.
	p.Now = func() time.Time { return f.now.Add(24 * time.Hour) }
	if err := p.CheckUser(context.Background(), req("c-alice")); !profileIsCode(err, "access_denied") {
		t.Errorf("expired certificate: %v", err)
	}
	iss, err := p.Issue(req("c-alice"))
	if err != nil || iss.Kind != store.TokenSAD || iss.TokenType != "SAD" {
		t.Errorf("Issue = %+v, %v", iss, err)
	}
}

// TestProfilesThroughTheServer runs both CSC flows through the
// authorization server's real router with golang.org/x/oauth2 as the
// client: service → Bearer, credential → SAD bound to credential and hash.
func TestProfilesThroughTheServer(t *testing.T) {
	f := newProfileFixture(t)
	hasher, _ := store.NewHasher(store.Argon2Params{Time: 1, MemoryKiB: 64, Threads: 1, KeyLen: 32, SaltLen: 16})
	pw, err := passwords.New(passwords.Config{Store: oauthtest.PasswordStore(oauthtest.Store(f.db)), Hasher: hasher})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := oauth.New(oauth.Config{
		Store: oauthtest.Store(f.db), Issuer: "https://signd.example",
		Profiles: []oauth.Profile{csc.ServiceProfile{}, &csc.CredentialProfile{Store: credentialStore(f.db)}},
		Logger:   slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	e := echo.New()
	e.HTTPErrorHandler = oauth.NewRenderer(nil).Handle
	if err := srv.Mount(e.Group("")); err != nil {
		t.Fatal(err)
	}
	if err := oauthtest.MountFlow(e.Group(""), srv, oauthtest.Store(f.db), pw, nil); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(e)
	t.Cleanup(ts.Close)
	conf := &oauth2.Config{
		ClientID: "rp", ClientSecret: "rp-secret-0123456789abcdef0123456789", RedirectURL: "https://rp.example/cb",
		Endpoint: oauth2.Endpoint{AuthURL: ts.URL + "/oauth2/authorize", TokenURL: ts.URL + "/oauth2/token", AuthStyle: oauth2.AuthStyleInHeader},
	}
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, ts.Client())
	b := oauthtest.NewBrowser(ts.Client().Transport)
	run := func(scope, pin string, opts ...oauth2.AuthCodeOption) *oauth2.Token {
		t.Helper()
		c := *conf
		c.Scopes = []string{scope}
		s, err := b.Get(c.AuthCodeURL("st", opts...))
		if err != nil {
			t.Fatal(err)
		}
		if s.Form != nil && s.Form.Has("password") {
			if s, err = b.Submit(s.Form, map[string]string{"username": "alice", "password": "alice-password"}, "approve"); err != nil {
				t.Fatal(err)
			}
		}
		if s.Form == nil {
			t.Fatalf("no consent page: %d %v %s", s.Status, s.Location, oauthtest.Text(s.Body))
		}
		set := map[string]string{}
		if pin != "" {
			set["pin"] = pin
		}
		if s, err = b.Submit(s.Form, set, "approve"); err != nil {
			t.Fatal(err)
		}
		if !s.Redirected() || s.Query().Get("code") == "" {
			t.Fatalf("no code: %d %v %s", s.Status, s.Location, oauthtest.Text(s.Body))
		}
		tok, err := c.Exchange(ctx, s.Query().Get("code"))
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	if tok := run("service", ""); tok.Type() != "Bearer" {
		t.Errorf("service token type %q", tok.Type())
	}
	sad := run("credential", "2468",
		oauth2.SetAuthURLParam("credentialID", "c-alice"), oauth2.SetAuthURLParam("numSignatures", "1"),
		oauth2.SetAuthURLParam("hash", base64.RawURLEncoding.EncodeToString(profileDigest)))
	if sad.Type() != "SAD" {
		t.Errorf("credential token type %q", sad.Type())
	}
	var rec *store.Token
	if err := f.db.View(context.Background(), func(tx store.Tx) (err error) {
		rec, err = tx.Token(store.Fingerprint(sad.AccessToken))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if rec.Kind != store.TokenSAD || rec.CredentialID != "c-alice" || !bytes.Equal(rec.Hashes[0], profileDigest) || rec.Username != "alice" || rec.ClientID != "rp" {
		t.Errorf("SAD record %+v", rec)
	}
	if d := rec.ExpiresAt.Sub(rec.CreatedAt); d < 4*time.Minute || d > 6*time.Minute {
		t.Errorf("SAD lifetime %v", d)
	}
}

// TestCredentialProfileBatch: numSignatures N with N comma-separated
// hashes (any order, duplicates counted) is accepted up to the request
// cap; after login it must fit the credential's multisign, and an explicit
// credential refuses the scope.
func TestCredentialProfileBatch(t *testing.T) {
	d := func(b byte) string { return base64.RawURLEncoding.EncodeToString(bytes.Repeat([]byte{b}, 32)) }
	three := d(1) + "," + d(2) + "," + d(1)
	p := &csc.CredentialProfile{MaxSignatures: 3}
	a, err := p.Authorize(context.Background(), &oauth.AuthorizeRequest{Scopes: []string{"credential"},
		Params: profileCredParams("numSignatures", "3", "hash", three)})
	if err != nil {
		t.Fatal(err)
	}
	if ds := a.Binding.Details[0].Digests; len(ds) != 3 || ds[0][0] != 1 || ds[1][0] != 2 || ds[2][0] != 1 {
		t.Errorf("digests %x", ds)
	}
	for _, tc := range []struct{ num, hash string }{
		{"4", three + "," + d(3)}, // over the request cap
		{"3", d(1) + "," + d(2)},  // fewer hashes
		{"2", three},              // more hashes
		{"3", three + ","},        // an empty entry
	} {
		_, err := p.Authorize(context.Background(), &oauth.AuthorizeRequest{Scopes: []string{"credential"},
			Params: profileCredParams("numSignatures", tc.num, "hash", tc.hash)})
		if !profileIsCode(err, "invalid_request") {
			t.Errorf("numSignatures %s, hash %s: %v", tc.num, tc.hash, err)
		}
	}

	f := newProfileFixture(t)
	cp := &csc.CredentialProfile{Store: credentialStore(f.db), Now: func() time.Time { return f.now }}
	req := &oauth.Request{User: &store.User{Username: "alice"}, Binding: oauth.Binding{
		Details: []oauth.AuthorizationDetail{{Type: "credential", Identifier: "c-alice", Digests: [][]byte{profileDigest, profileDigest}}},
	}}
	if err := cp.CheckUser(context.Background(), req); err == nil || err.Error() != "oauth: invalid_request: Numbers of signatures is too high" {
		t.Errorf("two hashes, multisign 1: %v", err)
	}
	setCred := func(n int, mode store.AuthMode) {
		err := f.db.Update(context.Background(), func(tx store.Tx) error {
			c, err := tx.Credential("c-alice")
			if err != nil {
				return err
			}
			c.Multisign, c.AuthMode = n, mode
			return tx.PutCredential(c)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	setCred(2, store.AuthOAuth2Code)
	if err := cp.CheckUser(context.Background(), req); err != nil {
		t.Errorf("two hashes, multisign 2: %v", err)
	}
	c, err := cp.Consent(context.Background(), req)
	if err != nil || !strings.Contains(c.Permissions[0].EN, "2 signatures") {
		t.Errorf("consent %+v, %v", c, err)
	}
	setCred(2, store.AuthExplicit)
	if err := cp.CheckUser(context.Background(), req); !profileIsCode(err, "access_denied") {
		t.Errorf("explicit credential: %v", err)
	}
}
