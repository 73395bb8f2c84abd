package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/store"
)

// reservedMembers are the token response members a profile cannot set.
var reservedMembers = []string{"access_token", "token_type", "expires_in", "refresh_token"}

// token is POST /oauth2/token: grant_type=authorization_code only.
func (s *Server) token(c echo.Context) error {
	form, client, err := s.clientRequest(c)
	if err != nil {
		return err
	}
	if err := s.cfg.TokenLimit.Allow(client.ID); err != nil {
		return err
	}
	invalid := func(desc string) error { return Errorf(CodeInvalidRequest, http.StatusBadRequest, "%s", desc) }
	switch gt := form.Get("grant_type"); {
	case gt == "":
		return invalid("Missing parameter grant_type")
	case gt != "authorization_code":
		return Errorf(CodeUnsupportedGrantType, http.StatusBadRequest, "Only grant_type authorization_code is supported")
	case form.Get("code") == "":
		return invalid("Missing parameter code")
	case form.Has("code_verifier") && !validVerifier(form.Get("code_verifier")):
		return invalid("Invalid parameter code_verifier")
	}
	res, err := s.redeem(c, client, form.Get("code"), form.Get("redirect_uri"), form.Get("code_verifier"))
	if err != nil {
		return err
	}
	// The profile's members (the OpenID profile signs the ID token) were
	// computed while the redemption committed; they leave only now that it
	// has.
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
		if derr := s.store.Update(c.Request().Context(), func(tx Tx) error {
			return tx.DeleteToken(store.Fingerprint(res.issued.Value))
		}); derr != nil {
			s.log.Error("revoking a token after a failed response", "err", derr)
		}
		return err
	}
	body := make(map[string]any, len(extra)+3)
	for k, v := range extra {
		body[k] = v
	}
	body["access_token"] = res.issued.Value
	body["token_type"] = res.issued.TokenType
	body["expires_in"] = int64(res.issued.ExpiresAt.Sub(res.issued.IssuedAt) / time.Second)
	out, err := json.Marshal(body)
	if err != nil {
		return err
	}
	return c.Blob(http.StatusOK, "application/json;charset=UTF-8", out)
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

// redeem redeems a code in one write transaction: look it up by
// fingerprint, check it (client, expiry, redirect URI, PKCE, user), mint
// the token and mark the code redeemed. A code redeemed before revokes
// every token it issued (committed) and is invalid_grant.
//
// The transaction is a Batch: concurrent redemptions share one commit (one
// fsync for the group instead of one each). Batch may run the function
// more than once, so it resets every outcome when it starts; only the last
// run counts. A redemption refused before it wrote anything records the
// refusal and returns nil rather than failing the shared transaction, so an
// invalid code does not make its neighbours commit one by one. The profile's
// token response starts with each run (startResponse); the run that
// committed provides it.
func (s *Server) redeem(c echo.Context, client *store.Client, code, redirectURI, verifier string) (*redeemed, error) {
	grantErr := func(desc string) *Error { return Errorf(CodeInvalidGrant, http.StatusBadRequest, "%s", desc) }
	value, err := NewSecret()
	if err != nil {
		return nil, err
	}
	now := s.now()
	h := store.Fingerprint(code)
	var (
		res        *redeemed
		reuse      *store.AuthCode
		revoked    int
		pinRefused string // the user whose locked PIN refused the code
		refused    error  // the refusal of a run that wrote nothing
	)
	ctx := c.Request().Context()
	err = s.store.Batch(ctx, func(tx Tx) error {
		res, reuse, revoked, pinRefused, refused = nil, nil, 0, "", nil
		// refuse ends a run that has written nothing: the refusal is the
		// outcome, the shared transaction goes on.
		refuse := func(err error) error { refused = err; return nil }
		ac, err := tx.Code(h)
		if errors.Is(err, store.ErrNotFound) {
			return refuse(grantErr("Authorization code is invalid or expired"))
		}
		if err != nil {
			return err
		}
		if ac.ClientID != client.ID {
			return refuse(grantErr("Authorization code is invalid or expired"))
		}
		if !ac.RedeemedAt.IsZero() {
			reuse = ac
			revoked, err = tx.DeleteTokensByCode(h)
			return err // commit the revocation
		}
		switch {
		case !now.Before(ac.ExpiresAt):
			return refuse(grantErr("Authorization code is invalid or expired"))
		case (ac.RedirectURISent || redirectURI != "") && redirectURI != ac.RedirectURI:
			return refuse(grantErr("redirect_uri does not match the authorization request"))
		case ac.CodeChallenge == "" && verifier != "":
			return refuse(grantErr("code_verifier sent but the authorization request had no code_challenge"))
		case ac.CodeChallenge != "" && verifier == "":
			return refuse(grantErr("Missing parameter code_verifier"))
		case ac.CodeChallenge != "" && !verifyS256(verifier, ac.CodeChallenge):
			return refuse(grantErr("code_verifier does not match the code_challenge"))
		}
		user, err := tx.User(ac.Username)
		if errors.Is(err, store.ErrNotFound) {
			return refuse(grantErr("The user can no longer sign in"))
		}
		if err != nil {
			return err
		}
		if user.Status != store.UserActive || user.PasswordLocked {
			return refuse(grantErr("The user can no longer sign in"))
		}
		if ac.PINVerified && user.PINLocked {
			// Locked after the consent checked it (concurrent wrong PINs):
			// the code must not turn into a SAD. It is used up (committed),
			// so that an unlock before it expires does not revive it.
			pinRefused = ac.Username
			return tx.RedeemCode(h, now, ac.ExpiresAt)
		}
		profile, err := s.ProfileOf(ac.Profile)
		if err != nil {
			return refuse(err)
		}
		req := s.Request(client, user, &ac.Grant)
		iss, err := profile.Issue(req)
		if err != nil {
			// The code stays unspent (an HSM known to be down: 503).
			return refuse(err)
		}
		tok, issued, err := s.mint(iss, req, ac, value, now)
		if err != nil {
			return refuse(err)
		}
		if err := tx.CreateToken(tok); err != nil {
			return err
		}
		if err := tx.RedeemCode(h, now, tok.ExpiresAt); err != nil {
			return err
		}
		res = &redeemed{name: ac.Profile, profile: profile, req: req, issued: issued,
			response: startResponse(ctx, profile, req, issued)}
		return nil
	})
	if err == nil {
		err = refused
	}
	if err != nil {
		return nil, err
	}
	if pinRefused != "" {
		s.log.Warn("signing PIN locked: code refused", "client_id", client.ID, "username", pinRefused)
		return nil, grantErr("The signing PIN is locked")
	}
	if reuse != nil {
		s.log.Warn("authorization code used twice: its tokens are revoked", "client_id", client.ID,
			"username", reuse.Username, "revoked", revoked)
		return nil, grantErr("Authorization code was already used")
	}
	s.log.Info("token issued", "client_id", client.ID, "username", res.req.User.Username,
		"profile", res.name, "kind", string(res.issued.Kind))
	return res, nil
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
