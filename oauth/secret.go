package oauth

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
)

// SecretBytes is the entropy of every code, token, SAD, session cookie,
// request handle and CSRF token: 256 bits.
const SecretBytes = 32

// NewSecret returns 256 random bits, base64url without padding (43
// characters, all of the RFC 6750 b64token alphabet).
func NewSecret() (string, error) {
	var b [SecretBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("oauth: random: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// sameSecret compares two secrets in constant time (the lengths may
// differ: both are hashed first).
func sameSecret(a, b string) bool {
	ha, hb := sha256.Sum256([]byte(a)), sha256.Sum256([]byte(b))
	return subtle.ConstantTimeCompare(ha[:], hb[:]) == 1
}

// MatchesFingerprint reports whether value's SHA-256 is fp, in constant
// time.
func MatchesFingerprint(value string, fp []byte) bool {
	h := sha256.Sum256([]byte(value))
	return subtle.ConstantTimeCompare(h[:], fp) == 1
}
