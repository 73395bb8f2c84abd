package oauth

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/signd/signd/oauth/passwords"
	"github.com/signd/signd/store"
)

// Pageless login (CSC v1 §11.2 auth/login): the user's password arrives in
// an HTTP Basic header instead of on the login page, and the answer is a
// service access token, with a refresh token (RFC 6749 §6) when asked. It
// bypasses the consent page, so the daemon mounts it only when configured.
// The password goes through the same reservation, hashing slots and lockout
// as the login page (passwords.Checker.LoginWithoutCode); a user with TOTP
// cannot log in this way (the method has no field for the code): a right
// password is answered
// like a wrong one and leaves the failure counter as it was, so that this
// door neither confirms a password nor resets the count of wrong one-time
// codes.
//
// Refresh tokens rotate (RFC 9700 §4.14.2): every token of one password
// login — access tokens and refresh tokens — carries the login's random
// family in store.Token.CodeHash. A refresh token is exchanged once: the
// exchange marks it rotated (RotatedAt, kept until it expires) and issues a
// new access and refresh token of the family. Presenting a rotated refresh
// token again revokes the whole family (DeleteTokensByCode), in the same
// write transaction, as the redemption of a used code does.

// Errors of PasswordLogin, for the caller to put in its dialect.
var (
	// ErrLoginFailed: unknown user, wrong password, a locked or disabled
	// account, a user with TOTP — one answer for all.
	ErrLoginFailed = errors.New("oauth: invalid username or password")
	// ErrRefreshInvalid: the refresh token is unknown, expired, revoked,
	// another client's, already used (its family is now revoked), or its
	// user can no longer sign in.
	ErrRefreshInvalid = errors.New("oauth: invalid refresh token")
)

// PasswordLoginConfig configures Server.PasswordLogin.
type PasswordLoginConfig struct {
	// ClientID is the registered client the tokens are issued to
	// (csc.auth_login_client); it must exist and be allowed Scope when a
	// login happens. Required.
	ClientID string
	// Scope is the one scope of the tokens ("service"). Required.
	Scope string
	// RefreshTTL is the lifetime of a login's refresh tokens, counted from
	// the password login: rotation does not extend it. Default 24h.
	RefreshTTL time.Duration
}

// PasswordLogin issues tokens for a password sent without the pages. Build
// it with Server.PasswordLogin.
type PasswordLogin struct {
	s   *Server
	cfg PasswordLoginConfig
}

// LoginTokens is what a pageless login or a refresh returns.
type LoginTokens struct {
	AccessToken string
	// RefreshToken is "" unless asked for (rememberMe) or refreshed.
	RefreshToken string
	ExpiresIn    int64 // seconds
}

// PasswordLogin returns the pageless login of s.
func (s *Server) PasswordLogin(cfg PasswordLoginConfig) (*PasswordLogin, error) {
	switch {
	case cfg.ClientID == "":
		return nil, errors.New("oauth: PasswordLoginConfig.ClientID is required")
	case cfg.Scope == "":
		return nil, errors.New("oauth: PasswordLoginConfig.Scope is required")
	}
	if cfg.RefreshTTL <= 0 {
		cfg.RefreshTTL = 24 * time.Hour
	}
	return &PasswordLogin{s: s, cfg: cfg}, nil
}

// Login checks username and password like the login page and issues an
// access token, and a refresh token when rememberMe.
func (p *PasswordLogin) Login(ctx context.Context, username, password string, rememberMe bool) (*LoginTokens, error) {
	s := p.s
	now := s.now()
	user, ok, err := s.passwords.LoginWithoutCode(ctx, username, password, now)
	switch {
	case errors.Is(err, passwords.ErrBusy):
		return nil, busy()
	case err != nil:
		return nil, err
	case !ok:
		return nil, ErrLoginFailed
	}
	var family []byte
	if rememberMe {
		family = make([]byte, 32)
		if _, err := rand.Read(family); err != nil {
			return nil, fmt.Errorf("oauth: random: %w", err)
		}
	}
	var out *LoginTokens
	err = s.store.Update(ctx, func(tx Tx) error {
		out = nil
		// The account may have been locked or disabled since the password
		// was checked.
		if err := recheckAccount(tx, user.Username); err != nil {
			return ErrLoginFailed
		}
		if err := p.checkClient(tx); err != nil {
			return err
		}
		var err error
		out, err = p.issue(tx, user.Username, family, now, now, now.Add(p.cfg.RefreshTTL), rememberMe)
		return err
	})
	if err != nil {
		return nil, err
	}
	s.log.Info("password login succeeded", "client_id", p.cfg.ClientID, "username", user.Username,
		"refresh_token", rememberMe)
	return out, nil
}

// Refresh exchanges a refresh token for a new access token and refresh
// token of the same family.
func (p *PasswordLogin) Refresh(ctx context.Context, refreshToken string) (*LoginTokens, error) {
	s := p.s
	now := s.now()
	var (
		out    *LoginTokens
		reused *store.Token
		n      int
	)
	err := s.store.Update(ctx, func(tx Tx) error {
		out, reused, n = nil, nil, 0
		old, err := tx.Token(store.Fingerprint(refreshToken))
		switch {
		case errors.Is(err, store.ErrNotFound):
			return ErrRefreshInvalid
		case err != nil:
			return err
		case old.Kind != store.TokenRefresh || old.ClientID != p.cfg.ClientID || len(old.CodeHash) == 0:
			return ErrRefreshInvalid
		case !now.Before(old.ExpiresAt):
			return ErrRefreshInvalid
		case !old.RotatedAt.IsZero():
			// Used before: someone else holds the family (RFC 9700
			// §4.14.2). Revoke it and commit the revocation.
			reused = old
			n, err = tx.DeleteTokensByCode(old.CodeHash)
			return err
		}
		if err := recheckAccount(tx, old.Username); err != nil {
			return ErrRefreshInvalid
		}
		if u, err := tx.User(old.Username); err != nil || u.TOTPSecret != "" {
			return ErrRefreshInvalid // TOTP enrolled since the password login
		}
		if err := p.checkClient(tx); err != nil {
			return err
		}
		if err := tx.DeleteToken(old.Hash); err != nil {
			return err
		}
		old.RotatedAt = now
		if err := tx.CreateToken(old); err != nil {
			return err
		}
		out, err = p.issue(tx, old.Username, old.CodeHash, old.AuthTime, now, old.ExpiresAt, true)
		return err
	})
	if err != nil {
		return nil, err
	}
	if reused != nil {
		s.log.Warn("refresh token used twice: its family is revoked", "client_id", reused.ClientID,
			"username", reused.Username, "revoked", n)
		return nil, ErrRefreshInvalid
	}
	s.log.Info("refresh token rotated", "client_id", p.cfg.ClientID)
	return out, nil
}

// checkClient refuses when the configured client is gone or may not have
// the scope: a configuration error, answered server_error and logged.
func (p *PasswordLogin) checkClient(tx Tx) error {
	c, err := tx.Client(p.cfg.ClientID)
	if err != nil {
		return fmt.Errorf("oauth: password login client %q: %w", p.cfg.ClientID, err)
	}
	for _, sc := range c.Scopes {
		if sc == p.cfg.Scope {
			return nil
		}
	}
	return fmt.Errorf("oauth: password login client %q is not registered for scope %s", p.cfg.ClientID, p.cfg.Scope)
}

// issue stores a new access token, and a refresh token of family expiring
// at refreshExp when refresh is set.
func (p *PasswordLogin) issue(tx Tx, username string, family []byte, authTime, now, refreshExp time.Time, refresh bool) (*LoginTokens, error) {
	access, err := NewSecret()
	if err != nil {
		return nil, err
	}
	base := store.Token{
		ClientID: p.cfg.ClientID, Username: username, Scopes: []string{p.cfg.Scope},
		CodeHash: family, AuthTime: authTime, RequestedAt: now,
	}
	at := base
	at.Hash, at.Kind, at.ExpiresAt = store.Fingerprint(access), store.TokenAccess, now.Add(p.s.cfg.AccessTokenTTL)
	if err := tx.CreateToken(&at); err != nil {
		return nil, err
	}
	out := &LoginTokens{AccessToken: access, ExpiresIn: int64(p.s.cfg.AccessTokenTTL / time.Second)}
	if !refresh {
		return out, nil
	}
	if out.RefreshToken, err = NewSecret(); err != nil {
		return nil, err
	}
	rt := base
	rt.Scopes = []string{p.cfg.Scope}
	rt.Hash, rt.Kind, rt.ExpiresAt = store.Fingerprint(out.RefreshToken), store.TokenRefresh, refreshExp
	if err := tx.CreateToken(&rt); err != nil {
		return nil, err
	}
	return out, nil
}

// RevokeOwn revokes the token value on behalf of the bearer g (CSC v1
// §11.3 auth/revoke, RFC 7009 §2.1): an access token or SAD is removed; a
// refresh token is removed with its whole family (the access tokens issued
// with it included; revokeStored). A token of another user or client, or an unknown one,
// is left alone and answered like a revoked one: nil.
func (s *Server) RevokeOwn(ctx context.Context, g *Grant, value string) error {
	if g == nil {
		return Errorf(CodeInvalidToken, http.StatusUnauthorized, "Missing access token")
	}
	var kind store.TokenKind
	n := 0
	err := s.store.Update(ctx, func(tx Tx) error {
		kind, n = "", 0
		tok, err := tx.Token(store.Fingerprint(value))
		switch {
		case errors.Is(err, store.ErrNotFound):
			return nil
		case err != nil:
			return err
		case tok.Username != g.Username || tok.ClientID != g.ClientID:
			return nil
		}
		kind = tok.Kind
		n, err = revokeStored(tx, tok)
		return err
	})
	if err != nil {
		return err
	}
	if n > 0 {
		s.log.Info("token revoked by its holder", "client_id", g.ClientID, "username", g.Username,
			"kind", string(kind), "revoked", n)
	}
	return nil
}

// busy is the answer when no hashing slot freed up in time.
func busy() *Error {
	return &Error{Code: CodeTemporarilyUnavailable, Status: http.StatusServiceUnavailable,
		Description: "Too many logins at once, try again later", Header: http.Header{"Retry-After": {"1"}}}
}
