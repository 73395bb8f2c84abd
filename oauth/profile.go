package oauth

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"time"

	"github.com/signd/signd/store"
)

// Profile is a scope profile: the part of an authorization code flow that
// depends on what is being authorized. The authorization server (this
// package) does everything generic — client and redirect URI checks,
// response_type, state, PKCE, nonce, the login page (password, TOTP,
// lockout, login sessions), the consent page (rendering, CSRF, signing PIN,
// Approve/Deny), the three timeouts, codes, the token endpoint, client
// authentication and error rendering — and asks the one profile that
// matches the requested scopes for the rest. signd has three profiles:
// "service" and "credential" (package csc) and "openid" (package oidc);
// package oauth imports none of them.
//
// The server calls a profile in this order during one flow:
//
//  1. Match, on every profile, at /oauth2/authorize. Exactly one profile
//     must match the requested scopes; none, or more than one (a request
//     mixing "service" with "credential" or "openid"), is invalid_scope.
//  2. Info, to learn whether redirect_uri may be omitted.
//  3. Authorize, before any login, with the request's parameters. It
//     validates the profile's own parameters and returns what the request
//     binds (authorization details, profile parameters), the granted
//     scopes and how the login must behave (LoginPolicy). A returned *Error
//     is redirected to the client.
//  4. After the user authenticated (by password, or by a login session when
//     LoginPolicy.SSO allows it): CheckUser, then Consent. CheckUser refuses
//     a user who may not continue (an *Error, normally access_denied,
//     redirected to the client). Consent describes the consent page, or
//     returns nil when the profile needs none (the code is then issued
//     right away). Both are called again when the consent page is answered,
//     because the world may have changed meanwhile (an admin disabled the
//     credential). The named items of the page shown (ConsentItem.Name,
//     Digest) are recorded with the request, the code and its tokens; if
//     they differ when the page is answered, the page is shown again with
//     the new values instead of issuing a code.
//  5. At /oauth2/token, when a code is redeemed: Issue, inside the store's
//     write transaction that redeems the code, decides what the code turns
//     into (access token or SAD, token_type, lifetime, stored scopes).
//  6. TokenResponse, with the raw value of the minted token, while that
//     transaction commits: it returns extra members of the JSON response
//     (the OIDC profile returns id_token, computed over the raw access token
//     for at_hash, and scope), which are sent only if the transaction
//     committed.
//
// Every method must be safe for concurrent use. Errors: a *Error is a
// protocol answer and is sent to the client as it is (its Description must
// be ASCII English without '"' or '\'); any other error is logged and
// answered as server_error, so it may carry internal detail.
type Profile interface {
	// Info returns static facts about the profile. It is called once, by
	// New.
	Info() ProfileInfo

	// Match reports whether the requested scopes (the scope parameter split
	// on spaces, in request order, without duplicates) belong to this
	// profile: "service" contains service, "credential" contains credential,
	// "openid" contains openid. Match must not reject extra scopes itself;
	// Authorize does that, so that a mixed request is recognised as mixed.
	Match(scopes []string) bool

	// Authorize validates the profile's own authorize parameters before the
	// login page is shown and returns what the code will be bound to. It
	// runs once per authorization request, after the generic checks
	// (client, redirect_uri, response_type, state, PKCE, duplicated
	// parameters). Examples: the credential profile requires credentialID,
	// numSignatures and as many 32-byte hashes; the openid profile reads
	// prompt, max_age and the identity scopes. It must not consult the user
	// (there is none yet) and should not touch the store.
	Authorize(ctx context.Context, r *AuthorizeRequest) (*Authorization, error)

	// CheckUser decides whether the authenticated user may continue:
	// r.User and r.AuthTime are set. Examples: the credential profile
	// answers access_denied when the credential is not the user's or is not
	// enabled (the same answer whether the ID exists or not); the openid
	// profile answers access_denied "user email is unverified".
	CheckUser(ctx context.Context, r *Request) error

	// Consent describes the consent page for r (after CheckUser passed), or
	// returns nil, nil when the profile shows no consent page. Under
	// prompt=none (LoginPolicy.Prompt == PromptNone) a non-nil Consent ends
	// the flow with consent_required. Items with a Name are recorded (see
	// ConsentItem.Name); a flow without a consent page records nothing.
	Consent(ctx context.Context, r *Request) (*Consent, error)

	// Issue decides what the redeemed code turns into. r is the code's
	// request with r.User freshly loaded. It runs inside the write
	// transaction that redeems the code: it must be fast and must not use
	// the store, the HSM or the network.
	Issue(r *Request) (*Issuance, error)

	// TokenResponse returns extra members for the token response, computed
	// while the token is being stored, in a goroutine of its own: tok.Value
	// is the raw access token (or SAD). The members are sent only once the
	// token is stored, and dropped if storing it failed; TokenResponse must
	// have no other effect. It may return nil. The members access_token, token_type,
	// expires_in and refresh_token are the server's and are refused. An
	// error here revokes the just-minted token and answers server_error (or
	// the *Error returned).
	TokenResponse(ctx context.Context, r *Request, tok *IssuedToken) (map[string]any, error)
}

// ProfileInfo holds the static facts of a profile.
type ProfileInfo struct {
	// Name identifies the profile in stored requests and codes, and in
	// logs: "service", "credential", "openid". Unique among the profiles
	// of one server.
	Name string
	// RedirectURIOptional allows omitting redirect_uri when the client has
	// exactly one registered URI (OpenID Connect); otherwise a missing
	// redirect_uri is the HTML error page (CSC requires it).
	RedirectURIOptional bool
	// DetailType is the RFC 9396 §2 type of the authorization details the
	// profile binds (AuthorizationDetail.Type); "" when it binds none.
	DetailType string
	// ErrorPage shows an error the flow sends back to the client first as
	// a page in the request's language, with a button back to the
	// application and the same redirect after a short delay (errorpage.go).
	// Only a browser's top-level navigation gets the page; every other
	// request, and a request with prompt=none, gets the redirect itself.
	ErrorPage bool
}

// AuthorizeRequest is what Profile.Authorize sees of an authorization
// request that passed the generic checks.
type AuthorizeRequest struct {
	Client *store.Client
	// Scopes is the scope parameter split on spaces, in order, without
	// duplicates and empty entries.
	Scopes      []string
	RedirectURI string
	// Params holds every parameter of the request (query for GET, form body
	// for POST), each with exactly one non-empty value: duplicated
	// parameters were already refused, empty ones dropped (RFC 6749 §3.1).
	// Unknown parameters are the profile's to use or ignore.
	Params url.Values
	// Lang is the page language the server picked: "nl" or "en".
	Lang        string
	RequestedAt time.Time // when the request arrived (OIDC "rat")
}

// Authorization is a profile's answer to an authorize request.
type Authorization struct {
	// Scopes are the scopes granted and stored with the code and token;
	// nil means the requested scopes. Every scope must be registered for
	// the client (checked by the server: invalid_scope otherwise).
	Scopes []string
	// Binding is stored with the request and the code and given back to
	// CheckUser, Consent, Issue and TokenResponse.
	Binding Binding
	// Login says how the user must authenticate.
	Login LoginPolicy
}

// Binding is what a request and its code are bound to beyond the generic
// parts (client, redirect URI, user, scope, PKCE, nonce).
type Binding struct {
	// Details are the authorization details (RFC 9396) the request binds:
	// at most one, of the profile's DetailType (the store keeps one per
	// grant). A token of kind store.TokenSAD is bound to it, and it must
	// then carry digests.
	Details []AuthorizationDetail
	// Params holds any other profile value (claims asked for, max_age,
	// description shown on the consent page). Keys and values are opaque
	// to the server; keep them small, they are stored with every request
	// and code.
	Params map[string]string
}

// Prompt is the OpenID Connect prompt behaviour (OIDC Core §3.1.2.1),
// generic so that any profile can ask for it.
type Prompt int

// Prompt values.
const (
	// PromptDefault: use a valid login session when LoginPolicy.SSO allows
	// it, otherwise show the login page; show the consent page when the
	// profile describes one.
	PromptDefault Prompt = iota
	// PromptNone: never show a page. Without a usable login session the
	// flow ends with login_required; when a consent page would be shown,
	// with consent_required.
	PromptNone
	// PromptLogin: always show the login page, even with a login session.
	PromptLogin
)

// LoginPolicy says how the user must authenticate for one request.
type LoginPolicy struct {
	// SSO lets a valid login session cookie replace the password (service
	// and openid). Without it the password (and TOTP) is always asked
	// (credential).
	SSO bool
	// Prompt is PromptDefault unless the profile read a prompt parameter.
	Prompt Prompt
	// MaxAge, when HasMaxAge is set, is the largest accepted age of the
	// authentication (OIDC max_age): an older login session is not used.
	// HasMaxAge with MaxAge 0 forces a fresh login.
	MaxAge    time.Duration
	HasMaxAge bool
}

// Request is an authorization request as profiles see it after the user
// authenticated (CheckUser, Consent) and when its code is redeemed (Issue,
// TokenResponse). Profiles must not modify it.
type Request struct {
	Client      *store.Client
	User        *store.User // a copy, never nil
	Scopes      []string    // granted scopes
	RedirectURI string
	Binding     Binding
	Nonce       string // the nonce parameter, "" when absent
	Lang        string // "nl" or "en"
	RequestedAt time.Time
	// AuthTime is when the user entered the password: now after a login,
	// the session's login time after single sign-on.
	AuthTime time.Time
	// Login repeats the LoginPolicy Authorize returned (an ID token needs
	// auth_time when max_age was asked).
	Login LoginPolicy
}

// Text is a user-facing string in both page languages. Both must be set.
type Text struct {
	NL, EN string
}

// In returns the text in lang ("nl" or "en"); anything else gives Dutch.
func (t Text) In(lang string) string {
	if lang == "en" {
		return t.EN
	}
	return t.NL
}

// Consent describes a profile's consent page. The server adds the client's
// name, the form, the CSRF token and the Approve and Deny buttons.
type Consent struct {
	// Title is the page heading, e.g. "Sign with your key".
	Title Text
	// Permissions lists what the client may do once approved, one sentence
	// each ("list your credentials and read their details").
	Permissions []Text
	// Items are labelled values shown in a definition list: the credential
	// label, the certificate subject, the hash in hex.
	Items []ConsentItem
	// RequirePIN asks the user to confirm with their signing PIN, a second
	// secret beside the password, on the consent page (the `pin` field):
	// it is checked, and wrong PINs counted toward the PIN lock, before the
	// code is issued. A user whose PIN is locked gets access_denied; so
	// does a right PIN when the lock is set before the code is issued, and
	// such a code is invalid_grant at the token endpoint if the PIN is
	// locked before it is redeemed.
	RequirePIN bool
}

// ConsentItem is one labelled value on the consent page.
type ConsentItem struct {
	Label Text
	Value string // shown verbatim (escaped); not translated
	// Code renders Value in a monospace font and lets it wrap anywhere
	// (hashes, identifiers).
	Code bool
	// Name, when set, records the item: when the page is shown the server
	// stores Name → Digest of every named item (Consent.Record) with the
	// request, and the code and the tokens it turns into carry that record
	// (store.Grant.Consented, store.Token.Consented). A resource server
	// then releases only data whose current digest equals the recorded one:
	// what the user saw is what the client gets. Names are unique within
	// one Consent.
	Name string
	// Digest identifies the data behind the item as shown (the profile's
	// choice, e.g. SHA-256 over a canonical encoding of the name and the
	// value); required with Name, 1 to store.MaxConsentDigest bytes.
	Digest []byte
}

// Record returns what c records in the grant: Name → Digest of each named
// item, or nil when no item is named. Two items with one name, or a name
// without a digest, are a profile bug (an error, answered server_error).
func (c *Consent) Record() (store.ConsentRecord, error) {
	if c == nil {
		return nil, nil
	}
	var rec store.ConsentRecord
	for _, it := range c.Items {
		if it.Name == "" {
			continue
		}
		if len(it.Digest) == 0 || len(it.Digest) > store.MaxConsentDigest {
			return nil, fmt.Errorf("oauth: consent item %q has a digest of %d bytes", it.Name, len(it.Digest))
		}
		if _, dup := rec[it.Name]; dup {
			return nil, fmt.Errorf("oauth: two consent items are named %q", it.Name)
		}
		if rec == nil {
			rec = store.ConsentRecord{}
		}
		rec[it.Name] = slices.Clone(it.Digest)
	}
	return rec, nil
}

// Issuance is what a redeemed code turns into.
type Issuance struct {
	// Kind is store.TokenAccess (a Bearer access token) or store.TokenSAD
	// (bound to the authorization detail of Request.Binding, which must be
	// set, with digests).
	Kind store.TokenKind
	// TokenType is the token_type of the response: "Bearer" or "SAD".
	TokenType string
	// TTL is the lifetime; 0 means the server's default for Kind
	// (oauth.access_token_ttl or oauth.sad_ttl).
	TTL time.Duration
	// Scopes stored with the token; nil means Request.Scopes.
	Scopes []string
}

// IssuedToken is the token minted for a redeemed code, given to
// Profile.TokenResponse.
type IssuedToken struct {
	Value     string // the raw token or SAD, as sent to the client
	Kind      store.TokenKind
	TokenType string
	Scopes    []string
	IssuedAt  time.Time
	ExpiresAt time.Time
}
