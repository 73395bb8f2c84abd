package oauth

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
)

// RFC 7636: signd supports S256 only (plain is refused at authorize).

// ValidChallenge reports whether c can be an S256 challenge: the base64url
// (unpadded) encoding of 32 bytes.
func ValidChallenge(c string) bool {
	if len(c) != 43 {
		return false
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	return err == nil && len(b) == sha256.Size
}

// validVerifier reports whether v has the RFC 7636 §4.1 syntax: 43–128
// characters of [A-Za-z0-9-._~].
func validVerifier(v string) bool {
	if len(v) < 43 || len(v) > 128 {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~') {
			return false
		}
	}
	return true
}

// verifyS256 reports whether BASE64URL(SHA256(verifier)) equals challenge,
// in constant time.
func verifyS256(verifier, challenge string) bool {
	sum := sha256.Sum256([]byte(verifier))
	got := base64.RawURLEncoding.EncodeToString(sum[:])
	return subtle.ConstantTimeCompare([]byte(got), []byte(challenge)) == 1
}
