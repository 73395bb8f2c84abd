package oidc

import (
	"context"
	"crypto"
	"crypto/sha256"
	"fmt"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// digestSigner is the part of *hsm.Key hsmSigner uses.
type digestSigner interface {
	SignDigest(ctx context.Context, hash crypto.Hash, digest []byte) ([]byte, error)
}

// hsmSigner is a go-jose OpaqueSigner over an HSM key: go-jose builds the
// JWS, the HSM makes the RS256 signature. It lives for one signature, so
// it can carry the request's context to the HSM.
type hsmSigner struct {
	ctx context.Context
	key digestSigner
	jwk *jose.JSONWebKey // public key with kid, alg and use
}

var _ jose.OpaqueSigner = (*hsmSigner)(nil)

// Public returns the public JWK; go-jose copies its kid into the header.
func (s *hsmSigner) Public() *jose.JSONWebKey { return s.jwk }

// Algs returns RS256, the only algorithm signd signs with.
func (s *hsmSigner) Algs() []jose.SignatureAlgorithm { return []jose.SignatureAlgorithm{jose.RS256} }

// SignPayload signs the JWS signing input with RSASSA-PKCS1-v1_5 SHA-256.
func (s *hsmSigner) SignPayload(payload []byte, alg jose.SignatureAlgorithm) ([]byte, error) {
	if alg != jose.RS256 {
		return nil, fmt.Errorf("oidc: algorithm %s is not supported", alg)
	}
	digest := sha256.Sum256(payload)
	return s.key.SignDigest(s.ctx, crypto.SHA256, digest[:])
}

// signJWT serializes claims as a compact JWS signed by s with typ JWT.
func signJWT(s jose.OpaqueSigner, claims any) (string, error) {
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: s}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		return "", fmt.Errorf("oidc: signer: %w", err)
	}
	token, err := jwt.Signed(signer).Claims(claims).Serialize()
	if err != nil {
		return "", fmt.Errorf("oidc: sign: %w", err)
	}
	return token, nil
}
