package authlogin

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/signd/signd/oauth"
	"github.com/signd/signd/oauth/passwords"
	"github.com/signd/signd/store"
)

// Errors of Login, for the caller to put in its dialect.
var (
	// ErrLoginFailed: unknown user, wrong password, a locked or disabled
	// account, a user with TOTP — one answer for all.
	ErrLoginFailed = errors.New("oauth: invalid username or password")
	// ErrRefreshInvalid: the refresh token is unknown, expired, revoked,
	// another client's, already used (its family is now revoked), or its
	// user can no longer sign in.
	ErrRefreshInvalid = errors.New("oauth: invalid refresh token")
)

// Passwords checks a password with the lockout every other door shares;
// *passwords.Checker is one.
type Passwords interface {
	LoginWithoutCode(ctx context.Context, username, password string, now time.Time) (*store.User, bool, error)
}

// Config configures a Login.
type Config struct {
	Store     oauth.Store // required: the authorization server's view of the store
	Passwords Passwords   // required

	// ClientID is the registered client the tokens are issued to
	// (csc.auth_login_client); it must exist and be allowed Scope when a
	// login happens. Required.
	ClientID string
	// Scope is the one scope of the tokens ("service"). Required.
	Scope string
	// RefreshTTL is the lifetime of a login's refresh tokens, counted from
	// the password login: rotation does not extend it. Default 24h.
	RefreshTTL time.Duration
	// AccessTokenTTL is the lifetime of the access tokens
	// (oauth.access_token_ttl). Default 1h.
	AccessTokenTTL time.Duration

	Logger *slog.Logger     // nil = discard
	Now    func() time.Time // nil = time.Now
}

// Login issues tokens for a password sent without the pages. Build it
// with New.
type Login struct {
	cfg Config
}

// Tokens is what a pageless login or a refresh returns.
type Tokens struct {
	AccessToken string
	// RefreshToken is "" unless asked for (rememberMe) or refreshed.
	RefreshToken string
	ExpiresIn    int64 // seconds
}

// New validates cfg and builds the pageless login.
func New(cfg Config) (*Login, error) {
	switch {
	case cfg.ClientID == "":
		return nil, errors.New("oauth: PasswordLoginConfig.ClientID is required")
	case cfg.Scope == "":
		return nil, errors.New("oauth: PasswordLoginConfig.Scope is required")
	case cfg.Store == nil:
		return nil, errors.New("oauth: authlogin.Config.Store is required")
	case cfg.Passwords == nil:
		return nil, errors.New("oauth: authlogin.Config.Passwords is required")
	}
	if cfg.RefreshTTL <= 0 {
		cfg.RefreshTTL = 24 * time.Hour
	}
	if cfg.AccessTokenTTL <= 0 {
		cfg.AccessTokenTTL = time.Hour
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Login{cfg: cfg}, nil
}

// Login checks username and password like the login page and issues an
// access token, and a refresh token when rememberMe.
func (p *Login) Login(ctx context.Context, username, password string, rememberMe bool) (*Tokens, error) {
	now := p.cfg.Now()
	user, ok, err := p.cfg.Passwords.LoginWithoutCode(
		passwords.WithOrigin(ctx, passwords.Origin{Client: p.cfg.ClientID, Door: passwords.DoorAuthLogin}), username, password, now)
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
	var out *Tokens
	err = p.cfg.Store.Update(ctx, func(tx oauth.Tx) error {
		out = nil
		// The account may have been locked or disabled, or the password
		// replaced, since the password was checked.
		if err := oauth.RecheckLogin(tx, user); err != nil {
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
	p.cfg.Logger.InfoContext(ctx, "password login succeeded", "client_id", p.cfg.ClientID, "username", user.Username,
		"refresh_token", rememberMe)
	return out, nil
}

// Refresh exchanges a refresh token for a new access token and refresh
// token of the same family.
func (p *Login) Refresh(ctx context.Context, refreshToken string) (*Tokens, error) {
	now := p.cfg.Now()
	var (
		out    *Tokens
		reused *store.Token
		n      int
	)
	err := p.cfg.Store.Update(ctx, func(tx oauth.Tx) error {
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
		if err := oauth.RecheckAccount(tx, old.Username); err != nil {
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
		p.cfg.Logger.WarnContext(ctx, "refresh token used twice: its family is revoked", "client_id", reused.ClientID,
			"username", reused.Username, "revoked", n)
		return nil, ErrRefreshInvalid
	}
	p.cfg.Logger.InfoContext(ctx, "refresh token rotated", "client_id", p.cfg.ClientID)
	return out, nil
}

// checkClient refuses when the configured client is gone or may not have
// the scope: a configuration error, answered server_error and logged.
func (p *Login) checkClient(tx oauth.Tx) error {
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
func (p *Login) issue(tx oauth.Tx, username string, family []byte, authTime, now, refreshExp time.Time, refresh bool) (*Tokens, error) {
	access, err := oauth.NewSecret()
	if err != nil {
		return nil, err
	}
	base := store.Token{
		ClientID: p.cfg.ClientID, Username: username, Scopes: []string{p.cfg.Scope},
		CodeHash: family, AuthTime: authTime, RequestedAt: now,
	}
	at := base
	at.Hash, at.Kind, at.ExpiresAt = store.Fingerprint(access), store.TokenAccess, now.Add(p.cfg.AccessTokenTTL)
	if err := tx.CreateToken(&at); err != nil {
		return nil, err
	}
	out := &Tokens{AccessToken: access, ExpiresIn: int64(p.cfg.AccessTokenTTL / time.Second)}
	if !refresh {
		return out, nil
	}
	if out.RefreshToken, err = oauth.NewSecret(); err != nil {
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

// busy is the answer when no hashing slot freed up in time.
func busy() *oauth.Error {
	return &oauth.Error{Code: oauth.CodeTemporarilyUnavailable, Status: http.StatusServiceUnavailable,
		Description: "Too many logins at once, try again later", Header: http.Header{"Retry-After": {"1"}}}
}
