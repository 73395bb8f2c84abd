package oidc

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/asn1"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"

	"github.com/signd/signd/store"
)

// signingKey is a key record prepared for signing ID tokens: the parsed
// published key and the JWS protected header are built once per record
// (the KeyRing keeps the active one of each algorithm) and shared by
// concurrent requests.
type signingKey struct {
	kid    string
	alg    string           // RS256, PS256 or ES256
	keyID  []byte           // the HSM ID of the key
	der    []byte           // the record's public key (PKIX DER): which record it was built from
	pub    crypto.PublicKey // the published key; every signature is verified with it
	header string           // base64url of the protected header: alg, kid, typ JWT
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
	hdr, err := json.Marshal(jwsHeader{Alg: k.Algorithm, Kid: k.KID, Typ: "JWT"})
	if err != nil {
		return nil, err
	}
	return &signingKey{
		kid: k.KID, alg: k.Algorithm, keyID: bytes.Clone(k.KeyID), der: bytes.Clone(k.PublicKey),
		pub: jwk.Key, header: base64.RawURLEncoding.EncodeToString(hdr),
	}, nil
}

// matches reports whether sk was built from the record k as it is now.
func (sk *signingKey) matches(k *store.SigningKey) bool {
	return sk.kid == k.KID && sk.alg == k.Algorithm && bytes.Equal(sk.keyID, k.KeyID) && bytes.Equal(sk.der, k.PublicKey)
}

// pssOptions are PS256's: RSASSA-PSS with SHA-256, MGF1 with SHA-256 and a
// salt as long as the hash, 32 bytes (RFC 7518 §3.5).
var pssOptions = &rsa.PSSOptions{SaltLength: sha256.Size, Hash: crypto.SHA256}

// sign serializes claims as a JWS in the compact serialization (RFC 7515
// §7.1), signed in the HSM by the key's algorithm: RSASSA-PKCS1-v1_5
// SHA-256 (RS256, RFC 7518 §3.3), RSASSA-PSS SHA-256 (PS256, §3.5) or
// ECDSA P-256 SHA-256 (ES256, §3.4, the signature as the 64 bytes of R and
// S); ctx bounds the wait for an HSM session.
func (sk *signingKey) sign(ctx context.Context, hsm KeyStore, claims any) (string, error) {
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", fmt.Errorf("oidc: sign: %w", err)
	}
	enc := base64.RawURLEncoding
	jws := make([]byte, 0, len(sk.header)+2+enc.EncodedLen(len(payload))+enc.EncodedLen(512))
	jws = append(jws, sk.header...)
	jws = append(jws, '.')
	jws = enc.AppendEncode(jws, payload)
	digest := sha256.Sum256(jws) // the JWS signing input
	var opts crypto.SignerOpts = crypto.SHA256
	if sk.alg == store.JWSPS256 {
		opts = pssOptions
	}
	sig, err := hsm.SignDigestOpts(ctx, sk.keyID, opts, digest[:])
	if err != nil {
		return "", fmt.Errorf("oidc: signing key %s: %w", sk.kid, err)
	}
	if pub, ok := sk.pub.(*ecdsa.PublicKey); ok {
		if sig, err = jwsECDSA(pub, sig); err != nil {
			return "", fmt.Errorf("oidc: signing key %s: %w", sk.kid, err)
		}
	}
	// A signature the published key does not verify, in the form it is
	// sent, never leaves: the HSM key under this ID is not the one
	// relying parties know, or the signature was mangled on its way.
	if err := sk.verify(digest[:], sig); err != nil {
		return "", fmt.Errorf("oidc: signing key %s: the HSM key %x is not the published key: %w", sk.kid, sk.keyID, err)
	}
	jws = append(jws, '.')
	jws = enc.AppendEncode(jws, sig)
	return string(jws), nil
}

// verify checks a JWS signature over digest with the published key.
func (sk *signingKey) verify(digest, sig []byte) error {
	switch pub := sk.pub.(type) {
	case *rsa.PublicKey:
		if sk.alg == store.JWSPS256 {
			return rsa.VerifyPSS(pub, crypto.SHA256, digest, sig, pssOptions)
		}
		return rsa.VerifyPKCS1v15(pub, crypto.SHA256, digest, sig)
	case *ecdsa.PublicKey:
		n := len(sig) / 2
		if len(sig) != 2*ecSize(pub) || !ecdsa.Verify(pub, digest, new(big.Int).SetBytes(sig[:n]), new(big.Int).SetBytes(sig[n:])) {
			return errors.New("ECDSA verification failed")
		}
		return nil
	}
	return fmt.Errorf("key type %T", sk.pub)
}

// ecSize is the byte length of the curve's order: 32 for P-256.
func ecSize(pub *ecdsa.PublicKey) int { return (pub.Curve.Params().BitSize + 7) / 8 }

// jwsECDSA turns the DER ECDSA-Sig-Value the HSM returns (RFC 3279
// §2.2.3) into the JWS form (RFC 7518 §3.4): R and S as unsigned
// big-endian integers of the curve's size each, concatenated. Anything
// but one well-formed SEQUENCE of two integers in 1..N-1 is refused.
func jwsECDSA(pub *ecdsa.PublicKey, der []byte) ([]byte, error) {
	var v struct{ R, S *big.Int }
	rest, err := asn1.Unmarshal(der, &v)
	switch {
	case err != nil:
		return nil, fmt.Errorf("ECDSA signature: %w", err)
	case len(rest) != 0:
		return nil, errors.New("ECDSA signature: trailing bytes after the DER value")
	}
	n := pub.Curve.Params().N
	for _, x := range []*big.Int{v.R, v.S} {
		if x.Sign() <= 0 || x.Cmp(n) >= 0 {
			return nil, errors.New("ECDSA signature: R or S out of range")
		}
	}
	size := ecSize(pub)
	out := make([]byte, 2*size)
	v.R.FillBytes(out[:size])
	v.S.FillBytes(out[size:])
	return out, nil
}
