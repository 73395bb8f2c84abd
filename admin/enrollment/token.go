// Package enrollment is the token of signd's one-time enrollment link
// (DESIGN-NOTES.md, "The enrollment link"): package admin's AddUser with
// Enroll creates the user without password and PIN and returns a link; the
// user opens it and sets them (admin's Enroll), so that their first
// secrets never pass through the operator or the onboarding system.
//
// The link is Path + username + "~" + 43 characters of base64url (256
// random bits). Only its store.Fingerprint is kept, in the user record
// with its expiry; Enroll clears both in the transaction that sets the
// secrets, so of two uses (a replay, or two at once) exactly one succeeds.
// The username in the link finds the record in one read; it is the user's
// own name, which they need to sign in anyway.
//
// It imports nothing of admin, which re-exports Path as EnrollPath.
package enrollment

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"regexp"
	"strings"
	"time"

	"github.com/signd/signd/store"
)

// Path is the path of the enrollment page below server.base_url.
const Path = "/oauth2/enroll/"

// sep separates the username from the secret in a link's token: neither
// a username character ([A-Za-z0-9._@-]) nor a base64url one.
const sep = "~"

// maxToken bounds a token: a username (64) and the secret (43).
const maxToken = 64 + len(sep) + 43

// totpSecretRE is a TOTP secret the enrollment page may store: base32
// without padding, 160 to 640 bits.
var totpSecretRE = regexp.MustCompile(`^[A-Z2-7]{32,128}$`)

// New returns a fresh token for username: the username, sep and 256
// random bits in base64url. The caller stores only its store.Fingerprint.
func New(username string) (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return username + sep + base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// Username is the username a token names, "" for a token that cannot be
// one of ours.
func Username(token string) string {
	if len(token) > maxToken {
		return ""
	}
	name, secret, ok := strings.Cut(token, sep)
	if !ok || store.ValidateUsername(name) != nil || len(secret) != 43 {
		return ""
	}
	if _, err := base64.RawURLEncoding.DecodeString(secret); err != nil {
		return ""
	}
	return name
}

// Refusal says why u's link is not token at now ("" when it is open): the
// fingerprint is compared in constant time.
func Refusal(u *store.User, token string, now time.Time) string {
	switch {
	case len(u.EnrollmentHash) == 0:
		return "no enrollment link is open (used, closed, or never issued)"
	case u.Status != store.UserActive:
		return "the user is disabled"
	case subtle.ConstantTimeCompare(u.EnrollmentHash, store.Fingerprint(token)) != 1:
		return "not the user's current enrollment link"
	case !now.Before(u.EnrollmentExpires):
		return "the enrollment link expired at " + u.EnrollmentExpires.UTC().Format(time.RFC3339)
	}
	return ""
}

// ValidTOTPSecret reports whether s is a TOTP secret the enrollment page
// may store: base32 without padding, 160 to 640 bits.
func ValidTOTPSecret(s string) bool { return totpSecretRE.MatchString(s) }
