package store

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"fmt"
	"slices"
	"time"
)

// The JWS algorithms (RFC 7518 §3.1) signd signs ID tokens with. Only
// asymmetric algorithms with a key in the HSM: "none" and the HMAC
// algorithms (HS256, …) are never among them.
const (
	// JWSRS256 is RSASSA-PKCS1-v1_5 with SHA-256 (RFC 7518 §3.3), the
	// algorithm every OpenID provider must offer (OIDC Core §15.1).
	JWSRS256 = "RS256"
	// JWSPS256 is RSASSA-PSS with SHA-256, MGF1 SHA-256 and a 32-byte salt
	// (RFC 7518 §3.5).
	JWSPS256 = "PS256"
	// JWSES256 is ECDSA on P-256 with SHA-256 (RFC 7518 §3.4).
	JWSES256 = "ES256"
)

// JWSAlgorithms lists the ID-token signing algorithms, RS256 first.
func JWSAlgorithms() []string { return []string{JWSRS256, JWSPS256, JWSES256} }

// ValidJWSAlgorithm reports whether alg is one of JWSAlgorithms, spelt
// exactly (JWS "alg" values are case-sensitive, RFC 7515 §4.1.1).
func ValidJWSAlgorithm(alg string) bool { return slices.Contains(JWSAlgorithms(), alg) }

// checkJWSKey reports whether pub is a key for alg: RSA for RS256 and
// PS256, ECDSA on P-256 for ES256.
func checkJWSKey(alg string, pub any) bool {
	switch alg {
	case JWSRS256, JWSPS256:
		_, ok := pub.(*rsa.PublicKey)
		return ok
	case JWSES256:
		k, ok := pub.(*ecdsa.PublicKey)
		return ok && k.Curve == elliptic.P256()
	}
	return false
}

// SigningKeyState is the life-cycle state of an OIDC signing key.
type SigningKeyState string

// Signing key states. A key moves next → active → retired and is deleted
// once every ID token it signed has expired.
const (
	// SigningKeyNext: published in the JWKS, not yet signing. Relying
	// parties pick it up before it signs the first token.
	SigningKeyNext SigningKeyState = "next"
	// SigningKeyActive: signs ID tokens (at most one key is active).
	SigningKeyActive SigningKeyState = "active"
	// SigningKeyRetired: no longer signs, still published until the ID
	// tokens it signed have expired.
	SigningKeyRetired SigningKeyState = "retired"
)

// SigningKey is an OIDC ID-token signing key: a key pair generated inside
// the HSM (found by KeyID) and the metadata the provider needs to publish it
// and pick the key that signs. The store keeps the state so that every
// process (daemon, admin CLI, later several appliances) agrees on it.
type SigningKey struct {
	// KID is the JWK key ID: the RFC 7638 thumbprint (SHA-256, base64url)
	// of the public key. It is the record's key.
	KID string
	// KeyID is the HSM CKA_ID of the key pair, 1–64 bytes.
	KeyID []byte
	// Label is the HSM CKA_LABEL.
	Label string
	// Algorithm is the JWS algorithm the key signs with: one of
	// JWSAlgorithms. The key type follows it (RSA, or EC P-256 for ES256).
	Algorithm string
	// PublicKey is the PKIX DER of the public key, so the JWKS is served
	// without asking the HSM.
	PublicKey []byte
	State     SigningKeyState
	// CreatedAt is when the key was generated (and first published).
	CreatedAt time.Time
	// ActivatedAt is when the key started signing; zero while next.
	ActivatedAt time.Time
	// RetiredAt is when the key stopped signing; zero unless retired.
	RetiredAt time.Time
}

// Validate checks the fields every backend requires.
func (k *SigningKey) Validate() error {
	if err := validateKey("signing key ID", k.KID); err != nil {
		return err
	}
	if err := validateText("signing key label", k.Label, maxTextLen); err != nil {
		return err
	}
	switch {
	case len(k.KeyID) == 0 || len(k.KeyID) > maxKeyIDLen:
		return fmt.Errorf("%w: signing key %q: HSM key ID must be 1 to %d bytes", ErrInvalid, k.KID, maxKeyIDLen)
	case !ValidJWSAlgorithm(k.Algorithm):
		return fmt.Errorf("%w: signing key %q: algorithm %q (RS256, PS256 or ES256)", ErrInvalid, k.KID, k.Algorithm)
	case k.CreatedAt.IsZero():
		return fmt.Errorf("%w: signing key %q has no creation time", ErrInvalid, k.KID)
	}
	pub, err := x509.ParsePKIXPublicKey(k.PublicKey)
	if err != nil {
		return fmt.Errorf("%w: signing key %q: public key: %v", ErrInvalid, k.KID, err)
	}
	if !checkJWSKey(k.Algorithm, pub) {
		return fmt.Errorf("%w: signing key %q: a %T cannot sign %s", ErrInvalid, k.KID, pub, k.Algorithm)
	}
	switch k.State {
	case SigningKeyNext:
		if !k.ActivatedAt.IsZero() || !k.RetiredAt.IsZero() {
			return fmt.Errorf("%w: signing key %q: a next key has no activation or retirement time", ErrInvalid, k.KID)
		}
	case SigningKeyActive:
		if k.ActivatedAt.IsZero() || !k.RetiredAt.IsZero() {
			return fmt.Errorf("%w: signing key %q: an active key has an activation time and no retirement time", ErrInvalid, k.KID)
		}
	case SigningKeyRetired:
		if k.ActivatedAt.IsZero() || k.RetiredAt.IsZero() {
			return fmt.Errorf("%w: signing key %q: a retired key has activation and retirement times", ErrInvalid, k.KID)
		}
	default:
		return fmt.Errorf("%w: signing key %q: state %q", ErrInvalid, k.KID, k.State)
	}
	return nil
}

// OIDCTx is the part of Tx that holds the OpenID Connect provider's records.
// The store checks each record; the rules across records (at most one
// active and one next key per algorithm) belong to the caller, who reads and writes the
// whole set in one Update.
type OIDCTx interface {
	// SigningKeys returns every signing key, oldest first (by CreatedAt,
	// then KID).
	SigningKeys() ([]SigningKey, error)
	// CreateSigningKey stores a new signing key; ErrAlreadyExists if the KID
	// is taken.
	CreateSigningKey(k *SigningKey) error
	// PutSigningKey replaces an existing signing key (ErrNotFound if
	// absent). KeyID, PublicKey and CreatedAt cannot change.
	PutSigningKey(k *SigningKey) error
	// DeleteSigningKey removes a signing key, or returns ErrNotFound.
	DeleteSigningKey(kid string) error
}
