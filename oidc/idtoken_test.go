package oidc_test

import (
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/signd/signd/oidc"
)

// Item 16 of reference/oidc.md §8: RS256; iss, sub, aud, exp, iat,
// auth_time; nonce only when sent; at_hash correct; seconds, not
// milliseconds. The signature is checked with go-jose and with crypto/rsa.
func TestItem16IDToken(t *testing.T) {
	f := newFixture(t)
	key, err := f.keys.Ensure(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	authTime := f.clock.Now().Add(-90 * time.Second)
	tests := []struct {
		name, nonce string
	}{
		{"with nonce", "n-0S6_WzA2Mj"},
		{"without nonce", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := f.p.Sign(context.Background(), oidc.IDToken{
				ClientID: "rp-1", Subject: "pairwise-sub", AuthTime: authTime, Nonce: tt.nonce,
				AccessToken: "jHkWEdUXMU1BwAsC4vtUsZwnNvTIxEl0z9K3vx5KF0Y",
			})
			if err != nil {
				t.Fatal(err)
			}
			jws, err := jose.ParseSignedCompact(raw, []jose.SignatureAlgorithm{jose.RS256})
			if err != nil {
				t.Fatal(err)
			}
			set := f.fetchJWKS()
			jwk := set.Key(key.KID)
			payload, err := jws.Verify(jwk[0].Key)
			if err != nil {
				t.Fatal(err)
			}
			// The same signature, checked with crypto/rsa alone.
			parts := strings.Split(raw, ".")
			sig, err := base64.RawURLEncoding.DecodeString(parts[2])
			if err != nil {
				t.Fatal(err)
			}
			digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
			if err := rsa.VerifyPKCS1v15(jwk[0].Key.(*rsa.PublicKey), crypto.SHA256, digest[:], sig); err != nil {
				t.Errorf("crypto/rsa verify: %v", err)
			}

			var c map[string]any
			if err := json.Unmarshal(payload, &c); err != nil {
				t.Fatal(err)
			}
			now := f.clock.Now().Unix()
			want := map[string]any{
				"iss": testIssuer, "sub": "pairwise-sub", "aud": "rp-1",
				"iat": float64(now), "exp": float64(now + int64(idTokenTTL/time.Second)),
				"auth_time": float64(authTime.Unix()),
				"at_hash":   "77QmUPtjPfzWtF2AnpK9RQ", // OIDC Core A.3 example token
			}
			if tt.nonce != "" {
				want["nonce"] = tt.nonce
			}
			if len(c) != len(want) {
				t.Errorf("claims %v, want exactly %v", c, want)
			}
			for k, v := range want {
				if c[k] != v {
					t.Errorf("%s = %v, want %v", k, c[k], v)
				}
			}
			if _, ok := c["nonce"]; ok != (tt.nonce != "") {
				t.Errorf("nonce present = %v, sent = %q", ok, tt.nonce)
			}
			if exp := c["exp"].(float64); exp > float64(time.Now().Add(50*365*24*time.Hour).Unix()) {
				t.Errorf("exp %v looks like milliseconds", exp)
			}
		})
	}
}

func TestAtHash(t *testing.T) {
	// OpenID Connect Core, Appendix A.3.
	if got := oidc.AtHash("jHkWEdUXMU1BwAsC4vtUsZwnNvTIxEl0z9K3vx5KF0Y"); got != "77QmUPtjPfzWtF2AnpK9RQ" {
		t.Errorf("AtHash = %s", got)
	}
}
