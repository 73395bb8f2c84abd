package store

import (
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"net/mail"
	"net/url"
	"strings"
	"unicode/utf8"
)

// Validation limits.
const (
	maxUsernameLen = 64
	maxKeyLen      = 128  // client, credential, proof and user IDs
	maxTextLen     = 1024 // names, labels, descriptions, claim values, URIs
	maxEmailLen    = 254
	maxKeyIDLen    = 64
	maxClaimName   = 128
)

func invalid(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, a...)...)
}

// A rule is one condition a record must meet (ok). A record that does not
// is refused with ErrInvalid and the reason, format applied to arg: it is
// formatted only then, so checking a valid record formats nothing.
type rule struct {
	ok     bool
	format string // one verb, for arg
	arg    string
}

// must is a rule with a fixed reason.
func must(ok bool, reason string) rule { return rule{ok, "%s", reason} }

// fingerprint is the rule that field (named name) is a SHA-256 fingerprint.
func fingerprint(name string, field []byte) rule {
	return rule{len(field) == sha256.Size, "%s must be 32 bytes", name}
}

// firstBroken returns the error of the first rule not met, in order.
func firstBroken(rules ...rule) error {
	for _, r := range rules {
		if !r.ok {
			return invalid(r.format, r.arg)
		}
	}
	return nil
}

// ValidateUsername checks that name is 1–64 characters of [A-Za-z0-9._@-].
func ValidateUsername(name string) error {
	if name == "" {
		return invalid("username is empty")
	}
	if len(name) > maxUsernameLen {
		return invalid("username is longer than %d characters", maxUsernameLen)
	}
	for _, c := range []byte(name) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '.' || c == '_' || c == '@' || c == '-') {
			return invalid("username %q has a character outside [A-Za-z0-9._@-]", name)
		}
	}
	return nil
}

// validateKey checks an identifier used as a database key: 1–128 printable
// ASCII characters without spaces.
func validateKey(what, s string) error {
	if s == "" {
		return invalid("%s is empty", what)
	}
	if len(s) > maxKeyLen {
		return invalid("%s is longer than %d characters", what, maxKeyLen)
	}
	for _, c := range []byte(s) {
		if c <= ' ' || c > '~' {
			return invalid("%s %q has a character that is not printable ASCII or is a space", what, s)
		}
	}
	return nil
}

// validateText checks free text: valid UTF-8, at most max bytes, no control
// characters other than tab.
func validateText(what, s string, max int) error {
	if len(s) > max {
		return invalid("%s is longer than %d bytes", what, max)
	}
	if !utf8.ValidString(s) {
		return invalid("%s is not valid UTF-8", what)
	}
	for _, r := range s {
		if r < ' ' && r != '\t' || r == 0x7f {
			return invalid("%s has a control character", what)
		}
	}
	return nil
}

// Validate checks every field of u except CreatedAt, UpdatedAt and Proofs
// (which only the store writes). Errors wrap ErrInvalid.
func (u *User) Validate() error {
	if err := validateKey("user ID", u.ID); err != nil {
		return err
	}
	if err := ValidateUsername(u.Username); err != nil {
		return err
	}
	if u.Status != UserActive && u.Status != UserDisabled {
		return invalid("user status %q is not %q or %q", u.Status, UserActive, UserDisabled)
	}
	if u.PasswordHash != "" {
		if _, err := ParseArgon2Params(u.PasswordHash); err != nil {
			return invalid("password hash is not a PHC argon2id string")
		}
	}
	if u.PINHash != "" {
		if _, err := ParseArgon2Params(u.PINHash); err != nil {
			return invalid("PIN hash is not a PHC argon2id string")
		}
	}
	if u.TOTPSecret != "" {
		s := strings.TrimRight(strings.ToUpper(u.TOTPSecret), "=")
		if _, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(s); err != nil {
			return invalid("TOTP secret is not base32")
		}
	}
	if err := firstBroken(
		must(len(u.EnrollmentHash) == 0 || len(u.EnrollmentHash) == sha256.Size, "enrollment hash must be 32 bytes"),
		must(len(u.EnrollmentHash) == 0 || !u.EnrollmentExpires.IsZero(), "an enrollment link needs an expiry"),
	); err != nil {
		return err
	}
	if u.FailedPasswords < 0 || u.FailedPINs < 0 || u.PasswordLockouts < 0 {
		return invalid("failure counters are negative")
	}
	if u.Email != "" {
		if len(u.Email) > maxEmailLen {
			return invalid("email is longer than %d bytes", maxEmailLen)
		}
		a, err := mail.ParseAddress(u.Email)
		if err != nil || a.Name != "" || a.Address != u.Email {
			return invalid("email %q is not a plain address", u.Email)
		}
	} else if u.EmailVerified {
		return invalid("email_verified is set without an email")
	}
	for name, value := range u.Claims {
		if name == "" || len(name) > maxClaimName || strings.ContainsAny(name, " \t\r\n") {
			return invalid("claim name %q is empty, too long or has white space", name)
		}
		if err := validateText("claim "+name, value, maxTextLen); err != nil {
			return err
		}
	}
	return nil
}

// validateProofRef checks a proof's ID and content type.
func validateProofRef(p ProofRef) error {
	if err := validateKey("proof ID", p.ID); err != nil {
		return err
	}
	switch p.ContentType {
	case ProofJPEG, ProofPNG, ProofPDF:
	default:
		return invalid("proof content type %q is not one of %s, %s, %s", p.ContentType, ProofJPEG, ProofPNG, ProofPDF)
	}
	return nil
}

// Validate checks a proof document's ID, content type and size, and that
// non-zero Size and SHA256 fields match the content. Errors wrap ErrInvalid.
func (p *Proof) Validate() error {
	if err := validateProofRef(p.ProofRef); err != nil {
		return err
	}
	if len(p.Content) == 0 {
		return invalid("proof %q is empty", p.ID)
	}
	if len(p.Content) > MaxProofSize {
		return invalid("proof %q is %d bytes, more than %d", p.ID, len(p.Content), MaxProofSize)
	}
	if p.Size != 0 && p.Size != int64(len(p.Content)) {
		return invalid("proof %q size %d does not match its %d bytes of content", p.ID, p.Size, len(p.Content))
	}
	if p.SHA256 != "" && p.SHA256 != ProofDigest(p.Content) {
		return invalid("proof %q SHA-256 does not match its content", p.ID)
	}
	return nil
}

// Validate checks every field of c except CreatedAt and UpdatedAt. Errors
// wrap ErrInvalid.
func (c *Client) Validate() error {
	if err := validateKey("client ID", c.ID); err != nil {
		return err
	}
	if err := validateText("client name", c.Name, maxTextLen); err != nil {
		return err
	}
	if c.SecretHash == "" {
		return invalid("client %q has no secret hash", c.ID)
	}
	if !validSecretHash(c.SecretHash) {
		return invalid("client %q secret hash is not a HashSecret encoding", c.ID)
	}
	if len(c.RedirectURIs) == 0 {
		return invalid("client %q has no redirect URI", c.ID)
	}
	for _, u := range c.RedirectURIs {
		if err := ValidateRedirectURI(u); err != nil {
			return err
		}
	}
	for _, s := range c.Scopes {
		if !validScope(s) {
			return invalid("scope %q is not a scope token", s)
		}
	}
	if c.SectorIdentifier != "" {
		if err := validateKey("sector identifier", c.SectorIdentifier); err != nil {
			return err
		}
	}
	if c.IDTokenSignedResponseAlg != "" && !ValidJWSAlgorithm(c.IDTokenSignedResponseAlg) {
		return invalid("client %q: ID-token algorithm %.20q is not RS256, PS256 or ES256", c.ID, c.IDTokenSignedResponseAlg)
	}
	return nil
}

// ValidateRedirectURI checks a client redirect URI: absolute, http(s) with a
// host or a custom (private-use) scheme, no fragment, no white space or
// control characters, and not a javascript:, data:, vbscript: or file: URI.
func ValidateRedirectURI(s string) error {
	if len(s) > maxTextLen {
		return invalid("redirect URI is longer than %d bytes", maxTextLen)
	}
	for _, c := range []byte(s) {
		if c <= ' ' || c >= 0x7f {
			return invalid("redirect URI %q has white space or a non-ASCII or control character", s)
		}
	}
	if strings.Contains(s, "#") {
		return invalid("redirect URI %q has a fragment", s)
	}
	u, err := url.Parse(s)
	if err != nil {
		return invalid("redirect URI %q: %v", s, err)
	}
	if !u.IsAbs() {
		return invalid("redirect URI %q is not absolute", s)
	}
	switch scheme := strings.ToLower(u.Scheme); scheme {
	case "http", "https":
		if u.Host == "" || u.Hostname() == "" {
			return invalid("redirect URI %q has no host", s)
		}
		if u.User != nil {
			return invalid("redirect URI %q has user information", s)
		}
	case "javascript", "data", "vbscript", "file", "about", "blob":
		return invalid("redirect URI %q has forbidden scheme %s", s, scheme)
	default:
		if u.Opaque == "" && u.Path == "" && u.Host == "" {
			return invalid("redirect URI %q has nothing after the scheme", s)
		}
	}
	return nil
}

// validScope reports whether s is an RFC 6749 §3.3 scope-token.
func validScope(s string) bool {
	if s == "" || len(s) > maxKeyLen {
		return false
	}
	for _, c := range []byte(s) {
		if c < 0x21 || c == 0x22 || c == 0x5c || c > 0x7e {
			return false
		}
	}
	return true
}

// Validate checks every field of c except CreatedAt and UpdatedAt, and except
// that Owner exists (the Tx checks that). Errors wrap ErrInvalid.
func (c *Credential) Validate() error {
	if err := validateKey("credential ID", c.ID); err != nil {
		return err
	}
	if err := ValidateUsername(c.Owner); err != nil {
		return fmt.Errorf("credential owner: %w", err)
	}
	if len(c.KeyID) == 0 || len(c.KeyID) > maxKeyIDLen {
		return invalid("credential %q key ID has %d bytes, want 1–%d", c.ID, len(c.KeyID), maxKeyIDLen)
	}
	if err := validateText("credential label", c.Label, maxTextLen); err != nil {
		return err
	}
	bits := AlgorithmKeyBits(c.Algorithm)
	if bits == 0 {
		return invalid("credential %q algorithm %q is not one of %s", c.ID, c.Algorithm, strings.Join(Algorithms(), ", "))
	}
	if c.KeyBits != bits {
		return invalid("credential %q has %d key bits, algorithm %s needs %d", c.ID, c.KeyBits, c.Algorithm, bits)
	}
	for i, der := range c.Chain {
		if len(der) == 0 {
			return invalid("credential %q certificate %d is empty", c.ID, i)
		}
	}
	switch c.Status {
	case CredentialPending:
		if len(c.Chain) != 0 {
			return invalid("pending credential %q has a certificate chain", c.ID)
		}
	case CredentialEnabled:
		if len(c.Chain) == 0 {
			return invalid("enabled credential %q has no certificate chain", c.ID)
		}
	case CredentialDisabled:
	default:
		return invalid("credential status %q is not %q, %q or %q", c.Status, CredentialPending, CredentialEnabled, CredentialDisabled)
	}
	switch {
	case c.DisabledBy != "" && c.Status != CredentialDisabled:
		return invalid("%s credential %q names who disabled it", c.Status, c.ID)
	case c.DisabledBy != "" && c.DisabledBy != DisabledByAdmin && c.DisabledBy != DisabledByOwner:
		return invalid("credential %q disabled by %q, not %q or %q", c.ID, c.DisabledBy, DisabledByAdmin, DisabledByOwner)
	}
	if c.Multisign < 0 || c.Multisign > MaxMultisign {
		return invalid("credential %q multisign %d is not 1–%d", c.ID, c.Multisign, MaxMultisign)
	}
	switch c.AuthMode {
	case "", AuthOAuth2Code, AuthExplicit:
	default:
		return invalid("credential %q authMode %q is not %q or %q", c.ID, c.AuthMode, AuthOAuth2Code, AuthExplicit)
	}
	return validateText("credential description", c.Description, maxTextLen)
}
