package oidc

import (
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"fmt"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// hsmSigner is a go-jose OpaqueSigner over an HSM key: go-jose builds the
// JWS, the HSM makes the RS256 signature. It lives for one signature, so
// it can carry the request's context to the HSM.
type hsmSigner struct {
	ctx   context.Context
	hsm   KeyStore
	kid   string           // the signing key's kid, for errors
	keyID []byte           // the HSM ID of the key
	jwk   *jose.JSONWebKey // public key with kid, alg and use
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
	sig, err := s.hsm.SignDigest(s.ctx, s.keyID, crypto.SHA256, digest[:])
	if err != nil {
		return nil, fmt.Errorf("oidc: signing key %s: %w", s.kid, err)
	}
	// A signature the published key does not verify never leaves: the HSM
	// key under this ID is not the one relying parties know.
	if pub, ok := s.jwk.Key.(*rsa.PublicKey); !ok || rsa.VerifyPKCS1v15(pub, crypto.SHA256, digest[:], sig) != nil {
		return nil, fmt.Errorf("oidc: signing key %s: the HSM key %x is not the published key", s.kid, s.keyID)
	}
	return sig, nil
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
