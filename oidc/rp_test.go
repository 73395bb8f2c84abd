package oidc_test

import (
	"context"
	"strings"
	"testing"

	gooidc "github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// Acceptance (and item 21): a relying party built from go-oidc and
// x/oauth2 against the real router: discovery with the exact issuer, the
// login and consent through the HTML forms, the ID token verified against
// the JWKS, nonce and at_hash checked, /userinfo's sub equal to the ID
// token's.
func TestRelyingPartyGoOIDC(t *testing.T) {
	tests := []struct {
		name   string
		scopes []string
		auth   oauth2.AuthStyle
		want   map[string]any // userinfo claims beyond the protocol ones
	}{
		{"openid only, basic", []string{gooidc.ScopeOpenID}, oauth2.AuthStyleInHeader, map[string]any{}},
		{"every scope, post", allScopes, oauth2.AuthStyleInParams, map[string]any{
			"email": "alice@example.com", "email_verified": true, "given_name": "Anne",
			"com.vendor.last_name": "Jansen", "com.vendor.id_number": "NX1234567",
		}},
		{"email, auto-detected auth", []string{"openid", "email"}, oauth2.AuthStyleAutoDetect, map[string]any{
			"email": "alice@example.com", "email_verified": true,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := newFlowEnv(t)
			ctx := gooidc.ClientContext(context.Background(), ev.ts.Client())
			provider, err := gooidc.NewProvider(ctx, ev.issuer) // exact issuer match
			if err != nil {
				t.Fatal(err)
			}
			conf := ev.oauth2Config(provider, "rp", tt.scopes...)
			conf.Endpoint.AuthStyle = tt.auth
			state, nonce := "st-"+strings.ReplaceAll(tt.name, " ", "-"), "n-0S6_WzA2Mj"
			b := ev.browser()
			s := ev.must(b.Get(conf.AuthCodeURL(state, gooidc.Nonce(nonce))))
			s = ev.login(b, s, "alice", alicePassword)
			if len(tt.scopes) > 1 {
				s = ev.answer(b, s, "approve")
			}
			if !s.Redirected() || s.Query().Get("state") != state || s.Query().Get("iss") != ev.issuer {
				t.Fatalf("redirect %v", s.Location)
			}
			tok, err := conf.Exchange(ctx, s.Query().Get("code"))
			if err != nil {
				t.Fatal(err)
			}
			if tok.TokenType != "Bearer" || tok.Expiry.IsZero() {
				t.Errorf("token type %q expiry %v", tok.TokenType, tok.Expiry)
			}
			if got, want := tok.Extra("scope"), strings.Join(tt.scopes, " "); got != want {
				t.Errorf("scope = %v, want %q", got, want)
			}
			raw, _ := tok.Extra("id_token").(string)
			idt, err := provider.Verifier(&gooidc.Config{ClientID: "rp", Now: ev.clock.Now}).Verify(ctx, raw)
			if err != nil {
				t.Fatal(err)
			}
			if idt.Nonce != nonce {
				t.Errorf("nonce %q, want %q", idt.Nonce, nonce)
			}
			if idt.AccessTokenHash == "" {
				t.Error("no at_hash")
			}
			if err := idt.VerifyAccessToken(tok.AccessToken); err != nil {
				t.Errorf("at_hash: %v", err)
			}
			if idt.Issuer != ev.issuer || len(idt.Audience) != 1 || idt.Audience[0] != "rp" {
				t.Errorf("iss %s aud %v", idt.Issuer, idt.Audience)
			}
			ui, err := provider.UserInfo(ctx, oauth2.StaticTokenSource(tok))
			if err != nil {
				t.Fatal(err)
			}
			if ui.Subject != idt.Subject || ui.Subject == "" {
				t.Errorf("userinfo sub %q, ID token sub %q", ui.Subject, idt.Subject)
			}
			var claims map[string]any
			if err := ui.Claims(&claims); err != nil {
				t.Fatal(err)
			}
			rat, _ := claims["rat"].(float64)
			authTime, _ := claims["auth_time"].(float64)
			iat, _ := claims["iat"].(float64)
			if rat == 0 || rat > authTime || authTime > iat || claims["iss"] != ev.issuer ||
				len(claims["aud"].([]any)) != 1 || claims["aud"].([]any)[0] != "rp" {
				t.Errorf("userinfo protocol claims: rat %v auth_time %v iat %v iss %v aud %v", rat, authTime, iat, claims["iss"], claims["aud"])
			}
			if idc := claimsOf(t, idt); idc["auth_time"] != authTime {
				t.Errorf("userinfo auth_time %v, ID token %v", authTime, idc["auth_time"])
			}
			for k, v := range tt.want {
				if claims[k] != v {
					t.Errorf("userinfo %s = %#v, want %#v", k, claims[k], v)
				}
			}
			if n := len(claims) - len(protocolKeys); n != len(tt.want) && len(tt.scopes) != len(allScopes) {
				t.Errorf("userinfo has %d identity claims, want %d: %v", n, len(tt.want), claims)
			}
		})
	}
}

// A request without a nonce succeeds and its ID token has none
// (oidcc-ensure-request-without-nonce-succeeds-for-code-flow; strict RPs
// reject a nonce they did not send).
func TestItem16NoNonce(t *testing.T) {
	ev := newFlowEnv(t)
	code := ev.code("rp", "openid", "nonce", "")
	tr := ev.redeem("rp", code)
	if c := claimsOf(t, ev.idToken(tr, "rp")); c["nonce"] != nil {
		t.Errorf("nonce %v in an ID token whose request had none", c["nonce"])
	}
}
