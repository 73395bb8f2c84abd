package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/store"
)

// reservedMembers are the token response members a profile cannot set.
var reservedMembers = []string{"access_token", "token_type", "expires_in", "refresh_token"}

// token is POST /oauth2/token: grant_type=authorization_code only. The
// client is authenticated and rate limited, the request parsed
// (parseRedeem), the code redeemed (redeem), and the response built once
// the redemption committed (tokenResponse).
func (s *Server) token(c echo.Context) error {
	form, client, err := s.clientRequest(c)
	if err != nil {
		return err
	}
	if err := s.cfg.TokenLimit.Allow(client.ID); err != nil {
		return err
	}
	req, e := parseRedeem(form)
	if e != nil {
		return e
	}
	res, err := s.redeem(c.Request().Context(), client, req)
	if err != nil {
		return err
	}
	out, err := s.tokenResponse(c.Request().Context(), res)
	if err != nil {
		return err
	}
	return c.Blob(http.StatusOK, "application/json;charset=UTF-8", out)
}

// tokenResponse is the body of the token response of a committed
// redemption: the token, and the profile's members (the OpenID profile
// signs the ID token), computed while the redemption committed; they
// leave only now that it has. A profile's failure, or a member it may not
// set, revokes the token, which the client then never sees. It has no
// HTTP in it.
func (s *Server) tokenResponse(ctx context.Context, res *redeemed) ([]byte, error) {
	answer := <-res.response
	extra, err := answer.extra, answer.err
	if err == nil {
		for _, k := range reservedMembers {
			if _, ok := extra[k]; ok {
				err = fmt.Errorf("oauth: profile %s sets the token response member %s", res.name, k)
			}
		}
	}
	if err != nil {
		// The client never sees the token: revoke it.
		if derr := s.store.Update(ctx, func(tx Tx) error {
			return tx.DeleteToken(store.Fingerprint(res.issued.Value))
		}); derr != nil {
			s.log.ErrorContext(ctx, "revoking a token after a failed response", "err", derr)
		}
		return nil, err
	}
	body := make(map[string]any, len(extra)+3)
	for k, v := range extra {
		body[k] = v
	}
	body["access_token"] = res.issued.Value
	body["token_type"] = res.issued.TokenType
	body["expires_in"] = int64(res.issued.ExpiresAt.Sub(res.issued.IssuedAt) / time.Second)
	return json.Marshal(body)
}

// redeemRequest is a parsed token request of grant_type
// authorization_code (RFC 6749 §4.1.3).
type redeemRequest struct {
	code, redirectURI, verifier string
}

// parseRedeem checks the token request's parameters, in the order of its
// refusals: grant_type, code, the form of code_verifier. The rest is
// checked against the code (redeem).
func parseRedeem(form url.Values) (redeemRequest, *Error) {
	invalid := func(desc string) *Error { return Errorf(CodeInvalidRequest, http.StatusBadRequest, "%s", desc) }
	switch gt := form.Get("grant_type"); {
	case gt == "":
		return redeemRequest{}, invalid("Missing parameter grant_type")
	case gt != "authorization_code":
		return redeemRequest{}, Errorf(CodeUnsupportedGrantType, http.StatusBadRequest, "Only grant_type authorization_code is supported")
	case form.Get("code") == "":
		return redeemRequest{}, invalid("Missing parameter code")
	case form.Has("code_verifier") && !validVerifier(form.Get("code_verifier")):
		return redeemRequest{}, invalid("Invalid parameter code_verifier")
	}
	return redeemRequest{code: form.Get("code"), redirectURI: form.Get("redirect_uri"), verifier: form.Get("code_verifier")}, nil
}

// invalidGrant is the refusal of a code (RFC 6749 §5.2 invalid_grant).
func invalidGrant(desc string) *Error {
	return Errorf(CodeInvalidGrant, http.StatusBadRequest, "%s", desc)
}

// redeemed is the outcome of a successful redemption.
type redeemed struct {
	name    string // profile name
	profile Profile
	req     *Request
	issued  *IssuedToken
	// response delivers the profile's TokenResponse, started as soon as
	// the token was minted, before the transaction committed.
	response <-chan profileResponse
}

// profileResponse is what Profile.TokenResponse returned.
type profileResponse struct {
	extra map[string]any
	err   error
}

// startResponse runs p.TokenResponse for an issued token in its own
// goroutine: the ID-token signature in the HSM overlaps the commit of the
// redemption, so a token response costs the longer of the two rather than
// their sum. The caller reads the result only once the commit succeeded;
// otherwise it is dropped and never leaves. A panic in the profile becomes
// its error.
func startResponse(ctx context.Context, p Profile, req *Request, issued *IssuedToken) <-chan profileResponse {
	ch := make(chan profileResponse, 1)
	go func() {
		var r profileResponse
		defer func() {
			if v := recover(); v != nil {
				r = profileResponse{err: fmt.Errorf("oauth: profile panicked in TokenResponse: %v", v)}
			}
			ch <- r
		}()
		r.extra, r.err = p.TokenResponse(ctx, req, issued)
	}()
	return ch
}

// redemption is one redemption of a code: what it redeems, and the
// outcome of the last run of its transaction (redeemRun).
type redemption struct {
	client *store.Client
	req    redeemRequest
	hash   []byte // the code's fingerprint
	value  string // the token to issue
	now    time.Time

	res        *redeemed
	reuse      *store.AuthCode // the code, redeemed before
	revoked    int             // the tokens of reuse revoked
	pinRefused string          // the user whose locked PIN refused the code
	refused    error           // the refusal of a run that wrote nothing
}

// redeem redeems a code in one write transaction: look it up by
// fingerprint, check it (client, expiry, redirect URI, PKCE, user), mint
// the token and mark the code redeemed. A code redeemed before revokes
// every token it issued (committed) and is invalid_grant. It has no HTTP
// in it.
//
// The transaction is a Batch: concurrent redemptions share one commit (one
// fsync for the group instead of one each). Batch may run the function
// more than once, so it resets every outcome when it starts; only the last
// run counts. A redemption refused before it wrote anything records the
// refusal and returns nil rather than failing the shared transaction, so an
// invalid code does not make its neighbours commit one by one. The profile's
// token response starts with each run (startResponse); the run that
// committed provides it.
func (s *Server) redeem(ctx context.Context, client *store.Client, req redeemRequest) (*redeemed, error) {
	value, err := NewSecret()
	if err != nil {
		return nil, err
	}
	r := &redemption{client: client, req: req, now: s.now(), hash: store.Fingerprint(req.code), value: value}
	err = s.store.Batch(ctx, func(tx Tx) error { return s.redeemRun(ctx, tx, r) })
	if err == nil {
		err = r.refused
	}
	if err != nil {
		return nil, err
	}
	if r.pinRefused != "" {
		s.log.WarnContext(ctx, "signing PIN locked: code refused", "client_id", client.ID, "username", r.pinRefused)
		return nil, invalidGrant("The signing PIN is locked")
	}
	if r.reuse != nil {
		s.log.WarnContext(ctx, "authorization code used twice: its tokens are revoked", "client_id", client.ID,
			"username", r.reuse.Username, "revoked", r.revoked)
		return nil, invalidGrant("Authorization code was already used")
	}
	s.log.InfoContext(ctx, "token issued", "client_id", client.ID, "username", r.res.req.User.Username,
		"profile", r.res.name, "kind", string(r.res.issued.Kind))
	return r.res, nil
}

// redeemRun is one run of redeem's transaction. It resets r's outcome
// first, and returns an error only to fail the shared transaction: a
// refusal before anything was written is r.refused.
func (s *Server) redeemRun(ctx context.Context, tx Tx, r *redemption) error {
	r.res, r.reuse, r.revoked, r.pinRefused, r.refused = nil, nil, 0, "", nil
	// refuse ends a run that has written nothing: the refusal is the
	// outcome, the shared transaction goes on.
	refuse := func(err error) error { r.refused = err; return nil }
	ac, err := tx.Code(r.hash)
	if errors.Is(err, store.ErrNotFound) {
		return refuse(invalidGrant("Authorization code is invalid or expired"))
	}
	if err != nil {
		return err
	}
	if ac.ClientID != r.client.ID {
		return refuse(invalidGrant("Authorization code is invalid or expired"))
	}
	if !ac.RedeemedAt.IsZero() {
		r.reuse = ac
		r.revoked, err = tx.DeleteTokensByCode(r.hash)
		return err // commit the revocation
	}
	if e := r.req.checkCode(ac, r.now); e != nil {
		return refuse(e)
	}
	user, err := tx.User(ac.Username)
	if errors.Is(err, store.ErrNotFound) {
		return refuse(invalidGrant("The user can no longer sign in"))
	}
	if err != nil {
		return err
	}
	if user.Status != store.UserActive || user.PasswordLocked {
		return refuse(invalidGrant("The user can no longer sign in"))
	}
	if ac.PINVerified && user.PINLocked {
		// Locked after the consent checked it (concurrent wrong PINs):
		// the code must not turn into a SAD. It is used up (committed),
		// so that an unlock before it expires does not revive it.
		r.pinRefused = ac.Username
		return tx.RedeemCode(r.hash, r.now, ac.ExpiresAt)
	}
	profile, err := s.ProfileOf(ac.Profile)
	if err != nil {
		return refuse(err)
	}
	req := s.Request(r.client, user, &ac.Grant)
	iss, err := profile.Issue(req)
	if err != nil {
		// The code stays unspent (an HSM known to be down: 503).
		return refuse(err)
	}
	tok, issued, err := s.mint(iss, req, ac, r.value, r.now)
	if err != nil {
		return refuse(err)
	}
	if tok.Kind == store.TokenSAD {
		// The code was issued under this generation: a PIN or password
		// reset since revoked it (and raised the generation).
		tok.SecretGeneration = user.SecretGeneration
	}
	if err := tx.CreateToken(tok); err != nil {
		return err
	}
	if err := tx.RedeemCode(r.hash, r.now, tok.ExpiresAt); err != nil {
		return err
	}
	r.res = &redeemed{name: ac.Profile, profile: profile, req: req, issued: issued,
		response: startResponse(ctx, profile, req, issued)}
	return nil
}

// checkCode checks an unredeemed code of the request's client against the
// request: unexpired at now, the same redirect URI, PKCE (RFC 7636 §4.6).
func (req redeemRequest) checkCode(ac *store.AuthCode, now time.Time) *Error {
	switch {
	case !now.Before(ac.ExpiresAt):
		return invalidGrant("Authorization code is invalid or expired")
	case (ac.RedirectURISent || req.redirectURI != "") && req.redirectURI != ac.RedirectURI:
		return invalidGrant("redirect_uri does not match the authorization request")
	case ac.CodeChallenge == "" && req.verifier != "":
		return invalidGrant("code_verifier sent but the authorization request had no code_challenge")
	case ac.CodeChallenge != "" && req.verifier == "":
		return invalidGrant("Missing parameter code_verifier")
	case ac.CodeChallenge != "" && !verifyS256(req.verifier, ac.CodeChallenge):
		return invalidGrant("code_verifier does not match the code_challenge")
	}
	return nil
}

// mint builds the token record for an issuance.
func (s *Server) mint(iss *Issuance, req *Request, ac *store.AuthCode, value string, now time.Time) (*store.Token, *IssuedToken, error) {
	if iss == nil || iss.TokenType == "" {
		return nil, nil, fmt.Errorf("oauth: profile %s returned no token type", ac.Profile)
	}
	ttl := iss.TTL
	tok := &store.Token{
		Hash: store.Fingerprint(value), Kind: iss.Kind, ClientID: ac.ClientID, Username: ac.Username,
		Scopes: iss.Scopes, CodeHash: ac.Hash, AuthTime: ac.AuthTime, RequestedAt: ac.RequestedAt,
		Consented: ac.Consented.Clone(),
	}
	if tok.Scopes == nil {
		tok.Scopes = slices.Clone(req.Scopes)
	}
	switch iss.Kind {
	case store.TokenAccess:
		if ttl <= 0 {
			ttl = s.cfg.AccessTokenTTL
		}
	case store.TokenSAD:
		if ttl <= 0 {
			ttl = s.cfg.SADTTL
		}
		if err := bindToken(tok, &ac.Grant); err != nil {
			return nil, nil, err
		}
	default:
		return nil, nil, fmt.Errorf("oauth: profile %s issues token kind %q", ac.Profile, iss.Kind)
	}
	tok.ExpiresAt = now.Add(ttl)
	return tok, &IssuedToken{
		Value: value, Kind: iss.Kind, TokenType: iss.TokenType, Scopes: tok.Scopes,
		IssuedAt: now, ExpiresAt: tok.ExpiresAt,
	}, nil
}
