package oidc

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/signd/signd/store"
)

// signingKey is a key record prepared for signing ID tokens: the parsed
// published key and the JWS protected header are built once per record
// (the KeyRing keeps the active one) and shared by concurrent requests.
type signingKey struct {
	kid    string
	keyID  []byte         // the HSM ID of the key
	der    []byte         // the record's public key (PKIX DER): which record it was built from
	pub    *rsa.PublicKey // the published key; every signature is verified with it
	header string         // base64url of the protected header: alg RS256, kid, typ JWT
}

// jwsHeader is the protected header of signd's ID tokens (RFC 7515 §4.1).
type jwsHeader struct {
	Alg string `json:"alg"`
	Kid string `json:"kid"`
	Typ string `json:"typ"`
}

func newSigningKeyFor(k *store.SigningKey) (*signingKey, error) {
	jwk, err := publicJWK(k)
	if err != nil {
		return nil, err
	}
	hdr, err := json.Marshal(jwsHeader{Alg: Algorithm, Kid: k.KID, Typ: "JWT"})
	if err != nil {
		return nil, err
	}
	return &signingKey{
		kid: k.KID, keyID: bytes.Clone(k.KeyID), der: bytes.Clone(k.PublicKey),
		pub: jwk.Key.(*rsa.PublicKey), header: base64.RawURLEncoding.EncodeToString(hdr),
	}, nil
}

// matches reports whether sk was built from the record k as it is now.
func (sk *signingKey) matches(k *store.SigningKey) bool {
	return sk.kid == k.KID && bytes.Equal(sk.keyID, k.KeyID) && bytes.Equal(sk.der, k.PublicKey)
}

// sign serializes claims as a JWS in the compact serialization (RFC 7515
// §7.1) with the RSASSA-PKCS1-v1_5 SHA-256 signature (RFC 7518 §3.3) made
// in the HSM; ctx bounds the wait for an HSM session.
func (sk *signingKey) sign(ctx context.Context, hsm KeyStore, claims any) (string, error) {
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", fmt.Errorf("oidc: sign: %w", err)
	}
	enc := base64.RawURLEncoding
	jws := make([]byte, 0, len(sk.header)+2+enc.EncodedLen(len(payload))+enc.EncodedLen(sk.pub.Size()))
	jws = append(jws, sk.header...)
	jws = append(jws, '.')
	jws = enc.AppendEncode(jws, payload)
	digest := sha256.Sum256(jws) // the JWS signing input
	sig, err := hsm.SignDigest(ctx, sk.keyID, crypto.SHA256, digest[:])
	if err != nil {
		return "", fmt.Errorf("oidc: signing key %s: %w", sk.kid, err)
	}
	// A signature the published key does not verify never leaves: the HSM
	// key under this ID is not the one relying parties know.
	if rsa.VerifyPKCS1v15(sk.pub, crypto.SHA256, digest[:], sig) != nil {
		return "", fmt.Errorf("oidc: signing key %s: the HSM key %x is not the published key", sk.kid, sk.keyID)
	}
	jws = append(jws, '.')
	jws = enc.AppendEncode(jws, sig)
	return string(jws), nil
}
