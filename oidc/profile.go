package oidc

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/signd/signd/oauth"
	"github.com/signd/signd/store"
)

// ProfileName is the name of the openid scope profile.
const ProfileName = "openid"

// Keys of oauth.Binding.Params the profile stores with a request.
const (
	paramPromptConsent = "prompt_consent" // "1": prompt=consent was asked
	paramHintSubject   = "hint_sub"       // sub of the id_token_hint
)

// maxMaxAge bounds max_age (a year); larger values mean the same thing.
const maxMaxAge = 365 * 24 * time.Hour

// Profile is the openid scope profile of the authorization server: it
// turns an authorization code flow whose scope contains openid into an
// OpenID Connect authentication with an ID token.
type Profile struct {
	Provider *Provider
}

var _ oauth.Profile = (*Profile)(nil)

// Info implements oauth.Profile: redirect_uri may be omitted when the
// client has exactly one registered URI (the service specification makes it optional).
func (p *Profile) Info() oauth.ProfileInfo {
	return oauth.ProfileInfo{Name: ProfileName, RedirectURIOptional: true, ErrorPage: true}
}

// Match implements oauth.Profile: the request is OpenID Connect when its
// scope contains openid.
func (p *Profile) Match(scopes []string) bool { return slices.Contains(scopes, ScopeOpenID) }

func protocolError(code, desc string) *oauth.Error {
	return &oauth.Error{Code: code, Description: desc}
}

// Authorize implements oauth.Profile. It
//   - refuses openid mixed with service or credential (invalid_scope);
//   - grants openid plus the requested identity scopes the client is
//     registered for, and ignores any other scope (the service specification: "the request
//     may contain further scopes"; RFC 6749 §3.3 lets the server narrow);
//   - reads prompt (none, login, consent; select_account is accepted and
//     means nothing with one account per login) and max_age;
//   - refuses request and request_uri, and a response_mode other than
//     query (not supported, as discovery says);
//   - accepts nonce (bound by the server), login_hint, display,
//     claims_locales, acr_values, claims, ui_locales and lang without error;
//   - reads the sub of id_token_hint, which CheckUser compares with the
//     user (the hint can only make the flow fail, so it need not verify);
//   - refuses a client without a pairwise sector (unauthorized_client).
func (p *Profile) Authorize(_ context.Context, r *oauth.AuthorizeRequest) (*oauth.Authorization, error) {
	cl := p.Provider.Claims
	if slices.Contains(r.Scopes, "service") || slices.Contains(r.Scopes, "credential") {
		return nil, protocolError(oauth.CodeInvalidScope, "The openid scope cannot be combined with service or credential")
	}
	if m := r.Params.Get("response_mode"); m != "" && m != "query" {
		return nil, protocolError(oauth.CodeInvalidRequest, "Only response_mode query is supported")
	}
	if _, ok := r.Params["request"]; ok {
		return nil, protocolError("request_not_supported", "The request parameter is not supported")
	}
	if _, ok := r.Params["request_uri"]; ok {
		return nil, protocolError("request_uri_not_supported", "The request_uri parameter is not supported")
	}
	if _, err := Sector(r.Client); err != nil {
		return nil, protocolError(oauth.CodeUnauthorizedClient,
			"The client has redirect URIs on several hosts and no sector identifier for pairwise subjects")
	}
	granted := []string{ScopeOpenID}
	for _, s := range r.Scopes {
		if s != ScopeOpenID && cl.IsScope(s) && slices.Contains(r.Client.Scopes, s) {
			granted = append(granted, s)
		}
	}
	auth := &oauth.Authorization{
		Scopes:  granted,
		Login:   oauth.LoginPolicy{SSO: true},
		Binding: oauth.Binding{Params: map[string]string{}},
	}
	if err := readPrompt(r.Params.Get("prompt"), auth); err != nil {
		return nil, err
	}
	if v := r.Params.Get("max_age"); v != "" {
		n, err := strconv.ParseUint(v, 10, 63)
		if err != nil {
			return nil, protocolError(oauth.CodeInvalidRequest, "max_age must be a non-negative integer")
		}
		auth.Login.HasMaxAge = true
		auth.Login.MaxAge = maxMaxAge
		if n < uint64(maxMaxAge/time.Second) {
			auth.Login.MaxAge = time.Duration(n) * time.Second
		}
	}
	if v := r.Params.Get("id_token_hint"); v != "" {
		sub, ok := hintSubject(v, r.Client.ID)
		if !ok {
			return nil, protocolError(oauth.CodeInvalidRequest, "id_token_hint is not an ID token of this client")
		}
		auth.Binding.Params[paramHintSubject] = sub
	}
	if len(auth.Binding.Params) == 0 {
		auth.Binding.Params = nil
	}
	return auth, nil
}

// readPrompt sets auth's login policy from the prompt parameter (OIDC Core
// §3.1.2.1): a space-separated list where none stands alone.
func readPrompt(v string, auth *oauth.Authorization) error {
	if v == "" {
		return nil
	}
	values := strings.Fields(v)
	for _, pv := range values {
		switch pv {
		case "none":
			if len(values) > 1 {
				return protocolError(oauth.CodeInvalidRequest, "prompt=none cannot be combined with other prompt values")
			}
			auth.Login.Prompt = oauth.PromptNone
		case "login":
			auth.Login.Prompt = oauth.PromptLogin
		case "consent":
			auth.Binding.Params[paramPromptConsent] = "1"
		case "select_account":
		default:
			return protocolError(oauth.CodeInvalidRequest, "Unsupported prompt value (none, login, consent, select_account)")
		}
	}
	return nil
}

// hintSubject reads the sub of an ID token given as id_token_hint, if the
// token is a JWS whose aud names clientID. The signature is not checked:
// the hint only ever makes a flow fail (CheckUser), never lets one through.
func hintSubject(token, clientID string) (string, bool) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return "", false
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return "", false
	}
	// Claim names are case-sensitive (RFC 7519 §4), which encoding/json's
	// struct fields are not: read the members by their exact names.
	var claims map[string]json.RawMessage
	var sub string
	if json.Unmarshal(payload, &claims) != nil || json.Unmarshal(claims["sub"], &sub) != nil || sub == "" {
		return "", false
	}
	var one string
	var many []string
	switch aud := claims["aud"]; {
	case json.Unmarshal(aud, &one) == nil && one == clientID:
	case json.Unmarshal(aud, &many) == nil && slices.Contains(many, clientID):
	default:
		return "", false
	}
	return sub, true
}

// CheckUser implements oauth.Profile: a user whose email is not verified
// gets access_denied "user email is unverified" (seed §7 EmailUnverified);
// a user who is not the one id_token_hint names gets login_required.
func (p *Profile) CheckUser(_ context.Context, r *oauth.Request) error {
	if !r.User.EmailVerified {
		return protocolError(oauth.CodeAccessDenied, "user email is unverified")
	}
	if hint := r.Binding.Params[paramHintSubject]; hint != "" {
		sub, err := p.Provider.Subject(r.Client, r.User)
		if err != nil {
			return err
		}
		if sub != hint {
			return protocolError(oauth.CodeLoginRequired, "The logged-in user is not the user of id_token_hint")
		}
	}
	return nil
}

// Consent texts.
var (
	consentTitle     = oauth.Text{NL: "Inloggen en gegevens delen", EN: "Sign in and share your details"}
	consentPseudonym = oauth.Text{
		NL: "u aan te melden met een pseudoniem dat alleen deze toepassing kent;",
		EN: "sign you in with a pseudonym known only to this application;",
	}
	consentDetails = oauth.Text{
		NL: "de volgende gegevens van u te ontvangen:",
		EN: "receive the following details about you:",
	}
)

// Consent implements oauth.Profile. The page is shown when the flow
// releases personal data: it lists each claim the client will receive, in
// the page language, with the user's value (claims the user lacks are
// omitted, as from /userinfo). A flow that releases only the pseudonymous
// sub and the login's metadata (scope openid, or identity scopes for which
// the user has no data) needs no consent page, so prompt=none works with a
// login session; prompt=consent shows the page anyway. Each item records
// its claim and the digest of its value in the grant, and /userinfo
// releases a claim only while its value still has that digest. Consent is
// not remembered: personal data leaves only with an approval in that flow,
// so a claim that changed or appeared after a consent shows the page again
// at the next authorization (and ends prompt=none with consent_required).
func (p *Profile) Consent(_ context.Context, r *oauth.Request) (*oauth.Consent, error) {
	items := p.Provider.Claims.Shared(r.User, r.Scopes)
	if len(items) == 0 && r.Binding.Params[paramPromptConsent] == "" {
		return nil, nil
	}
	c := &oauth.Consent{Title: consentTitle, Permissions: []oauth.Text{consentPseudonym}, Items: items}
	if len(items) > 0 {
		c.Permissions = append(c.Permissions, consentDetails)
	}
	return c, nil
}

// Issue implements oauth.Profile: the code becomes a Bearer access token
// with the granted scopes and the server's access-token lifetime. While
// the HSM is known to be unavailable it answers 503 instead: the redeeming
// transaction rolls back, so the code is not spent and the client can
// redeem it once the HSM is back (within the code's lifetime).
func (p *Profile) Issue(*oauth.Request) (*oauth.Issuance, error) {
	if p.Provider.Keys != nil && !p.Provider.Keys.available() {
		return nil, signerUnavailable()
	}
	return &oauth.Issuance{Kind: store.TokenAccess, TokenType: "Bearer"}, nil
}

// TokenResponse implements oauth.Profile: it adds id_token, signed in the
// HSM over the just-minted access token (at_hash), and scope, the granted
// scopes space-delimited.
func (p *Profile) TokenResponse(ctx context.Context, r *oauth.Request, tok *oauth.IssuedToken) (map[string]any, error) {
	sub, err := p.Provider.Subject(r.Client, r.User)
	if err != nil {
		return nil, err
	}
	idToken, err := p.Provider.Sign(ctx, IDToken{
		ClientID: r.Client.ID, Subject: sub, AuthTime: r.AuthTime, Nonce: r.Nonce, AccessToken: tok.Value,
		Alg: r.Client.IDTokenSignedResponseAlg,
	})
	if err != nil && hsmUnavailable(err) {
		// The HSM failed after the code was redeemed: the server revokes
		// the access token; the code is spent (a new login is needed).
		p.Provider.log().Warn("oidc: ID token not signed: HSM unavailable", "client_id", r.Client.ID, "err", err)
		return nil, signerUnavailable()
	}
	if err != nil {
		return nil, err
	}
	return map[string]any{"id_token": idToken, "scope": strings.Join(tok.Scopes, " ")}, nil
}
