package oidc

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"time"
)

// IDToken is what one ID token says: the protocol claims only; identity
// claims come from /userinfo (DESIGN.md "OIDC claims").
type IDToken struct {
	ClientID string    // aud
	Subject  string    // sub: the pairwise subject of the user for this client
	AuthTime time.Time // auth_time: when the user authenticated
	Nonce    string    // nonce: only when the authorization request had one
	// AccessToken is the access token issued beside the ID token; at_hash
	// is computed from it.
	AccessToken string
	// Alg is the client's id_token_signed_response_alg; "" is the
	// provider's default (oidc.signing_alg).
	Alg string
}

// idTokenClaims is the ID token payload. Times are NumericDate seconds.
type idTokenClaims struct {
	Issuer   string `json:"iss"`
	Subject  string `json:"sub"`
	Audience string `json:"aud"`
	Expiry   int64  `json:"exp"`
	IssuedAt int64  `json:"iat"`
	AuthTime int64  `json:"auth_time"`
	Nonce    string `json:"nonce,omitempty"`
	AtHash   string `json:"at_hash,omitempty"`
}

// AtHash returns the at_hash of an access token (OpenID Connect Core
// §3.1.3.6): base64url of the left half of SHA-256 of its ASCII octets,
// SHA-256 being the hash of each of RS256, PS256 and ES256.
func AtHash(accessToken string) string {
	sum := sha256.Sum256([]byte(accessToken))
	return base64.RawURLEncoding.EncodeToString(sum[:len(sum)/2])
}

// Sign issues an ID token: iss, sub, aud (the client ID, one audience, so
// no azp), exp = now + TTL, iat, auth_time (always: max_age and strict
// relying parties need it), nonce when sent and at_hash, signed in the HSM
// by t.Alg's active key (the default algorithm's when t.Alg is "") with
// header kid.
func (p *Provider) Sign(ctx context.Context, t IDToken) (string, error) {
	if t.ClientID == "" || t.Subject == "" || t.AuthTime.IsZero() {
		return "", errors.New("oidc: ID token needs a client, a subject and an authentication time")
	}
	now := p.now()
	c := idTokenClaims{
		Issuer: p.Issuer, Subject: t.Subject, Audience: t.ClientID,
		Expiry: now.Add(p.IDTokenTTL).Unix(), IssuedAt: now.Unix(), AuthTime: t.AuthTime.Unix(),
		Nonce: t.Nonce,
	}
	if t.AccessToken != "" {
		c.AtHash = AtHash(t.AccessToken)
	}
	return p.Keys.Sign(ctx, t.Alg, c)
}
