package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"testing"

	gooidc "github.com/coreos/go-oidc/v3/oidc"
	"github.com/go-jose/go-jose/v4"
	"github.com/labstack/echo/v4"
	"github.com/miekg/pkcs11"
	"golang.org/x/oauth2"

	"github.com/signd/signd/config"
	"github.com/signd/signd/hsm"
	"github.com/signd/signd/hsm/hsmtest"
	"github.com/signd/signd/oauth/oauthtest"
)

// oidc.signing_alg ES256 end to end on SoftHSM2: `client add
// --id-token-alg PS256` makes the provider's first PS256 key, the daemon
// makes the ES256 and RS256 keys on start; discovery offers ES256 first,
// the JWKS has an EC P-256 key, rp's ID token is ES256 and rp-ps's PS256,
// each verified by go-oidc accepting only that algorithm.
func TestOIDCSigningAlgES256Daemon(t *testing.T) {
	e := newEnv(t, "  signing_alg: ES256\n")
	secret := addAliceAndRP(e, "openid")
	e.must(secret+"\n", "client", "add", "rp-ps", "--redirect-uri", "https://rp-ps.example.com/cb", "--secret-file", "-",
		"--scope", "openid", "--id-token-alg", "PS256")
	if out := e.must("", "client", "show", "rp-ps"); !strings.Contains(out, "ID-token alg:      PS256") {
		t.Errorf("client show rp-ps:\n%s", out)
	}
	if ks := e.oidcKeys(); len(ks) != 1 || ks[0].Algorithm != "PS256" || ks[0].State != "active" {
		t.Fatalf("keys after client add: %+v", ks)
	}

	d := serveRouter(t, e, func(cfg *config.Config, logger *slog.Logger) (*hsm.Token, error) { return openToken(cfg, logger, nil) })
	ts, cfg := d.ts, d.cfg
	ctx := gooidc.ClientContext(context.Background(), ts.Client())
	provider, err := gooidc.NewProvider(ctx, cfg.Server.BaseURL)
	if err != nil {
		t.Fatal(err)
	}
	var md struct {
		Algs []string `json:"id_token_signing_alg_values_supported"`
	}
	if err := provider.Claims(&md); err != nil || !slices.Equal(md.Algs, []string{"ES256", "RS256", "PS256"}) {
		t.Errorf("id_token_signing_alg_values_supported = %v, %v", md.Algs, err)
	}
	res, err := ts.Client().Get(cfg.Server.BaseURL + "/.well-known/jwks.json")
	if err != nil {
		t.Fatal(err)
	}
	var set jose.JSONWebKeySet
	err = json.NewDecoder(res.Body).Decode(&set)
	res.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	byAlg := map[string]jose.JSONWebKey{}
	for _, k := range set.Keys {
		byAlg[k.Algorithm] = k
	}
	if es, ok := byAlg["ES256"]; len(set.Keys) != 3 || !ok || es.Use != "sig" || !es.Valid() || !es.IsPublic() {
		t.Fatalf("JWKS %+v", set.Keys)
	}

	for client, alg := range map[string]string{"rp": "ES256", "rp-ps": "PS256"} {
		redirect := "https://" + client + ".example.com/cb"
		conf := &oauth2.Config{ClientID: client, ClientSecret: secret, RedirectURL: redirect, Endpoint: provider.Endpoint(), Scopes: []string{"openid"}}
		b := oauthtest.NewBrowser(ts.Client().Transport)
		s, err := b.Get(conf.AuthCodeURL("st-"+client, gooidc.Nonce("n-"+client)))
		if err != nil || s.Form == nil {
			t.Fatalf("%s: authorize: %v %+v", client, err, s)
		}
		if s, err = b.Submit(s.Form, map[string]string{"username": "alice", "password": "a password!"}, "approve"); err != nil || !s.Redirected() {
			t.Fatalf("%s: login: %v %+v", client, err, s)
		}
		tok, err := conf.Exchange(ctx, s.Query().Get("code"))
		if err != nil {
			t.Fatalf("%s: %v", client, err)
		}
		raw := tok.Extra("id_token").(string)
		jws, err := jose.ParseSignedCompact(raw, []jose.SignatureAlgorithm{jose.SignatureAlgorithm(alg)})
		if err != nil {
			t.Fatalf("%s: not a %s JWS: %v", client, alg, err)
		}
		if kid := jws.Signatures[0].Header.KeyID; kid != byAlg[alg].KeyID {
			t.Errorf("%s: kid %s, the JWKS's %s key is %s", client, kid, alg, byAlg[alg].KeyID)
		}
		idt, err := provider.Verifier(&gooidc.Config{ClientID: client, SupportedSigningAlgs: []string{alg}}).Verify(ctx, raw)
		if err != nil {
			t.Fatalf("%s: go-oidc (%s only): %v", client, alg, err)
		}
		if idt.Nonce != "n-"+client || idt.VerifyAccessToken(tok.AccessToken) != nil {
			t.Errorf("%s: nonce %q at_hash %v", client, idt.Nonce, idt.VerifyAccessToken(tok.AccessToken))
		}
	}
	if !strings.Contains(d.logs.String(), `"alg":"ES256"`) {
		t.Errorf("the start did not log the ES256 key:\n%s", d.logs.String())
	}
}

// `client add --id-token-alg` takes RS256, PS256 or ES256 spelt exactly,
// for an openid client; anything else is refused with the list, and no
// client or key is left behind.
func TestClientAddIDTokenAlgCLI(t *testing.T) {
	e := newEnv(t, "")
	add := func(id string, extra ...string) error {
		_, _, err := e.run("", append([]string{"client", "add", id, "--redirect-uri", "https://" + id + ".example.com/cb", "--scope", "openid"}, extra...)...)
		return err
	}
	bad := []struct {
		name, alg, want string
	}{
		{"none", "none", `ID-token algorithm "none" is not one signd signs with (RS256, PS256, ES256; case-sensitive)`},
		{"hmac", "HS256", `ID-token algorithm "HS256" is not one signd signs with`},
		{"lower case", "es256", `ID-token algorithm "es256" is not one signd signs with`},
		{"padded", " RS256", `ID-token algorithm " RS256" is not one signd signs with`},
		{"empty", "", "--id-token-alg is empty"},
		{"1000 bytes", strings.Repeat("E", 1000), `ID-token algorithm "EEEEEEEEEEEEEEEEEEEE" is not one signd signs with`},
	}
	for _, tt := range bad {
		err := add("rp", "--id-token-alg", tt.alg)
		if err == nil || !strings.Contains(err.Error(), tt.want) || len(err.Error()) > 300 {
			t.Errorf("%s: %.400v, want %q", tt.name, err, tt.want)
		}
	}
	_, _, err := e.run("", "client", "add", "svc", "--redirect-uri", "https://svc.example.com/cb", "--scope", "service", "--id-token-alg", "ES256")
	if err == nil || !strings.Contains(err.Error(), "an ID-token algorithm needs scope openid") {
		t.Errorf("service client with an ID-token alg: %v", err)
	}
	if out := e.must("", "client", "list"); strings.Contains(out, "rp") || strings.Contains(out, "svc") {
		t.Errorf("a refused client was stored:\n%s", out)
	}
	if ks := e.oidcKeys(); len(ks) != 0 {
		t.Errorf("refused clients made keys: %+v", ks)
	}
	if err := add("rp", "--id-token-alg", "ES256"); err != nil {
		t.Fatal(err)
	}
	if err := add("rp2", "--id-token-alg", "ES256"); err != nil {
		t.Fatal(err)
	}
	if ks := e.oidcKeys(); len(ks) != 1 || ks[0].Algorithm != "ES256" || ks[0].State != "active" {
		t.Errorf("two ES256 clients: keys %+v, want one active ES256 key", ks)
	}
	out := e.must("", "oidc", "keys", "create", "--alg", "ES256")
	if !strings.Contains(out, "algorithm:  ES256") || !strings.Contains(out, "state:      next") {
		t.Errorf("keys create --alg ES256:\n%s", out)
	}
	if _, _, err := e.run("", "oidc", "keys", "create", "--alg", "HS256"); err == nil || !strings.Contains(err.Error(), "not an ID-token signing algorithm") {
		t.Errorf("keys create --alg HS256: %v", err)
	}
	if _, _, err := e.run("", "oidc", "keys", "rotate", "--alg", "PS256"); err == nil || !strings.Contains(err.Error(), "(PS256)") {
		t.Errorf("keys rotate --alg PS256 without a PS256 key: %v", err)
	}
	if table := e.must("", "oidc", "keys", "list"); !strings.Contains(table, "ALG") || strings.Count(table, "ES256") != 2 {
		t.Errorf("list:\n%s", table)
	}
}

// A token that answers CKR_MECHANISM_INVALID to the generation of the
// configured algorithm's key (as opencryptoki's soft token does for
// CKM_EC_KEY_PAIR_GEN) stops the start with the setting, the mechanism,
// the token and the algorithms to choose instead; the token itself is not
// taken for broken.
func TestOIDCSigningAlgUnsupportedStart(t *testing.T) {
	e := newEnv(t, "  signing_alg: ES256\n")
	logs := &syncBuffer{}
	logger := slog.New(slog.NewJSONHandler(logs, nil))
	cfg, db, tok, faults := openFaulty(t, e, logger)
	// The ES256 key is the first generated (the default comes first).
	faults.Inject("GenerateKeyPair", hsmtest.Fault{Code: pkcs11.CKR_MECHANISM_INVALID})
	a := newApp(strings.NewReader(""), &bytes.Buffer{}, logs)
	svc := &services{cfg: cfg, store: db, token: tok, logger: logger, now: a.clock}
	err := svc.mount(echo.New())
	want := `oidc.signing_alg ES256 needs CKM_EC_KEY_PAIR_GEN, which token "` + token.Label + `" lacks; choose RS256 or PS256`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("start: %v\nwant %q", err, want)
	}
	if !tok.Available() {
		t.Error("a missing mechanism marked the token unavailable")
	}
	if n := faults.Calls("GenerateKeyPair"); n != 1 {
		t.Errorf("%d key generations, want 1", n)
	}
}

// The admin socket keeps a daemon's `client add --id-token-alg` and
// `oidc keys` per algorithm in step with its JWKS.
func TestClientAddIDTokenAlgDaemon(t *testing.T) {
	e := newEnv(t, "")
	addr, _ := e.daemon()
	e.must("", "client", "add", "rp-es", "--redirect-uri", "https://rp-es.example.com/cb", "--scope", "openid", "--id-token-alg", "ES256")
	_, set := jwksKIDs(t, "http://"+addr)
	var algs []string
	for _, k := range set.Keys {
		algs = append(algs, k.Algorithm)
	}
	slices.Sort(algs)
	if !slices.Equal(algs, []string{"ES256", "RS256"}) {
		t.Errorf("JWKS after client add --id-token-alg ES256: %v", algs)
	}
}
