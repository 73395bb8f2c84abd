package store

import (
	"errors"
	"fmt"
	"time"
)

// The records of a running authorization code flow: the pending
// authorization request (between /oauth2/authorize and the redirect back),
// the authorization code (between the redirect and /oauth2/token) and the
// login session (single sign-on). Each is stored under the SHA-256
// fingerprint of its bearer value (request handle, code, session cookie);
// the value itself is never stored.

// ErrCodeRedeemed is returned by RedeemCode for a code that was redeemed
// before. The code record stays (a tombstone) until its ExpiresAt, so that
// a second redemption is detected and can revoke what the first issued.
var ErrCodeRedeemed = errors.New("store: authorization code already redeemed")

// Grant is what an authorization request and its code are bound to. Both
// AuthRequest and AuthCode embed it; the code copies it from the request.
type Grant struct {
	ClientID    string
	RedirectURI string // the effective redirect URI
	// RedirectURISent is false when the client omitted redirect_uri (then
	// the token request may omit it too).
	RedirectURISent bool
	Scopes          []string // granted scopes
	Profile         string   // name of the scope profile (service, credential, openid)
	CredentialID    string   // credential profile: the credential the SAD will be bound to
	Hashes          [][]byte // credential profile: the raw digests
	Params          map[string]string
	// CodeChallenge is the PKCE challenge (RFC 7636), "" without PKCE;
	// CodeChallengeMethod is then "S256" (signd refuses plain).
	CodeChallenge       string
	CodeChallengeMethod string
	Nonce               string
	Lang                string // page language, nl or en
	// Login policy of the profile: SSO allowed, prompt ("", "none",
	// "login"), max_age.
	SSO       bool
	Prompt    string
	MaxAge    time.Duration
	HasMaxAge bool
	// Username and AuthTime are set once the user authenticated.
	Username    string
	AuthTime    time.Time
	RequestedAt time.Time // when the authorization request arrived (OIDC "rat")
	// Consented is what the user approved on the consent page: item name →
	// digest of the value the page showed (see ConsentRecord). It is set
	// when the page is shown and travels unchanged from the request to the
	// code to the tokens. Nil when no consent page was shown: then nothing
	// that needs consent was approved.
	Consented ConsentRecord
	// PINVerified is set when the consent page checked the user's signing
	// PIN for this grant: the code is then refused at the token endpoint if
	// the PIN has been locked since.
	PINVerified bool
}

func (g *Grant) validate(what string) error {
	switch {
	case g.ClientID == "":
		return fmt.Errorf("%w: %s needs a client", ErrInvalid, what)
	case g.RedirectURI == "":
		return fmt.Errorf("%w: %s needs a redirect URI", ErrInvalid, what)
	case g.Profile == "":
		return fmt.Errorf("%w: %s needs a profile", ErrInvalid, what)
	case g.RequestedAt.IsZero():
		return fmt.Errorf("%w: %s needs the time it was requested", ErrInvalid, what)
	case g.CodeChallenge != "" && g.CodeChallengeMethod != "S256":
		return fmt.Errorf("%w: %s: PKCE method %q", ErrInvalid, what, g.CodeChallengeMethod)
	case len(g.Hashes) != 0 && g.CredentialID == "":
		return fmt.Errorf("%w: %s: hashes without a credential", ErrInvalid, what)
	}
	return g.Consented.validate(what)
}

// AuthStage is where a pending authorization request stands.
type AuthStage string

// Stages of a pending authorization request.
const (
	StageLogin   AuthStage = "login"   // the login page is shown
	StageConsent AuthStage = "consent" // the user authenticated; the consent page is shown
)

// AuthRequest is a pending authorization request: the state of one flow
// between /oauth2/authorize and the redirect back to the client.
type AuthRequest struct {
	Hash []byte // Fingerprint of the request handle; the key
	Grant
	State    string
	CSRFHash []byte // Fingerprint of the CSRF token of the request's forms
	// BindingHash is the Fingerprint of the browser binding cookie set when
	// the request's first page was shown: only a post from that browser
	// may answer the request's forms (OWASP CSRF Prevention Cheat Sheet,
	// login CSRF).
	BindingHash []byte
	Stage       AuthStage
	// ConsentShownAt is when the consent page was first shown (the consent
	// timeout runs from there); zero before.
	ConsentShownAt time.Time
	// ExpiresAt is when the sweeper may remove the record; the flow's own
	// timeouts end it earlier.
	ExpiresAt time.Time
	CreatedAt time.Time // set by the store
}

// Validate checks the fields every backend requires.
func (r *AuthRequest) Validate() error {
	err := firstBroken(
		fingerprint("request hash", r.Hash),
		fingerprint("CSRF hash", r.CSRFHash),
		fingerprint("browser binding hash", r.BindingHash),
		rule{r.Stage == StageLogin || r.Stage == StageConsent, "request stage %q", string(r.Stage)},
		must(r.Stage != StageConsent || r.Username != "", "a request at consent needs a user"),
		must(!r.ExpiresAt.IsZero(), "request needs an expiry"),
	)
	if err != nil {
		return err
	}
	return r.Grant.validate("request")
}

// AuthCode is an issued authorization code, stored under the fingerprint of
// its value. After redemption it stays as a tombstone until ExpiresAt.
type AuthCode struct {
	Hash []byte // Fingerprint of the code; the key
	Grant
	ExpiresAt time.Time
	// RedeemedAt is zero until the code is redeemed.
	RedeemedAt time.Time
	CreatedAt  time.Time // set by the store
}

// Validate checks the fields every backend requires.
func (c *AuthCode) Validate() error {
	err := firstBroken(
		fingerprint("code hash", c.Hash),
		must(c.Username != "", "code needs a user"),
		must(!c.AuthTime.IsZero(), "code needs the authentication time"),
		must(!c.ExpiresAt.IsZero(), "code needs an expiry"),
		must(c.RedeemedAt.IsZero(), "a new code cannot be redeemed already"),
	)
	if err != nil {
		return err
	}
	return c.Grant.validate("code")
}

// Session is a login session (single sign-on), stored under the
// fingerprint of its cookie value.
type Session struct {
	Hash      []byte // Fingerprint of the cookie value; the key
	Username  string
	AuthTime  time.Time // when the user entered the password
	ExpiresAt time.Time
	CreatedAt time.Time // set by the store
}

// Validate checks the fields every backend requires.
func (s *Session) Validate() error {
	return firstBroken(
		fingerprint("session hash", s.Hash),
		must(s.Username != "", "session needs a user"),
		must(!s.AuthTime.IsZero() && !s.ExpiresAt.IsZero(), "session needs an authentication time and an expiry"),
	)
}

// AuthFlowTx is the part of OAuthTx that holds running flows: pending
// requests, codes and login sessions. Every Delete*Expired method removes
// records whose ExpiresAt is at or before now and costs what it removes (an
// expiry index), not what is stored.
type AuthFlowTx interface {
	// CreateAuthRequest stores a new pending request (ErrAlreadyExists if
	// the hash exists). It sets r.CreatedAt.
	CreateAuthRequest(r *AuthRequest) error
	// AuthRequest returns the pending request with this fingerprint,
	// expired or not; ErrNotFound if absent.
	AuthRequest(hash []byte) (*AuthRequest, error)
	// PutAuthRequest replaces an existing request (ErrNotFound if absent);
	// CreatedAt is kept.
	PutAuthRequest(r *AuthRequest) error
	// DeleteAuthRequest removes a request; ErrNotFound if absent.
	DeleteAuthRequest(hash []byte) error
	// DeleteExpiredAuthRequests removes requests that expired at or before
	// now and returns how many.
	DeleteExpiredAuthRequests(now time.Time) (int, error)

	// CreateCode stores a new, unredeemed code (ErrAlreadyExists if the hash
	// exists). It sets c.CreatedAt.
	CreateCode(c *AuthCode) error
	// Code returns the code with this fingerprint, redeemed (a tombstone)
	// or not, expired or not; ErrNotFound if absent.
	Code(hash []byte) (*AuthCode, error)
	// RedeemCode marks the code redeemed at `at` and keeps the tombstone
	// until keepUntil or the code's ExpiresAt, whichever is later.
	// ErrNotFound if absent, ErrCodeRedeemed if it was redeemed before
	// (nothing changes then). Inside one write transaction this is the
	// single-use gate: of concurrent redemptions exactly one succeeds.
	RedeemCode(hash []byte, at, keepUntil time.Time) error
	// DeleteExpiredCodes removes codes and tombstones that expired at or
	// before now and returns how many.
	DeleteExpiredCodes(now time.Time) (int, error)

	// CreateSession stores a new login session (ErrAlreadyExists if the
	// hash exists). It sets s.CreatedAt.
	CreateSession(s *Session) error
	// Session returns the session with this fingerprint, expired or not;
	// ErrNotFound if absent.
	Session(hash []byte) (*Session, error)
	// DeleteSession removes a session; ErrNotFound if absent.
	DeleteSession(hash []byte) error
	// DeleteExpiredSessions removes sessions that expired at or before now
	// and returns how many.
	DeleteExpiredSessions(now time.Time) (int, error)
}
