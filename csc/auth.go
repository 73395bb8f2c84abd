package csc

import (
	"context"
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/csc/protocol"
	"github.com/signd/signd/oauth"
	"github.com/signd/signd/oauth/authlogin"
)

// PasswordLogin serves auth/login (CSC v1 §11.2): *authlogin.Login,
// which checks the password with the login page's lockout and issues
// service tokens with rotating refresh tokens.
type PasswordLogin interface {
	Login(ctx context.Context, username, password string, rememberMe bool) (*authlogin.Tokens, error)
	Refresh(ctx context.Context, refreshToken string) (*authlogin.Tokens, error)
}

// TokenRevoker serves auth/revoke (CSC v1 §11.3): *oauth.Server. It
// revokes a token of the bearer's own user and client and ignores any
// other (RFC 7009 §2.2).
type TokenRevoker interface {
	RevokeOwn(ctx context.Context, g *oauth.Grant, token string) error
}

// Descriptions of auth/login and auth/revoke.
const (
	descLoginFailed   = "Invalid username or password"
	descBasicOrToken  = "Send either HTTP Basic credentials or refresh_token, not both"
	descMissingBasic  = "Missing HTTP Basic credentials or refresh_token"
	descMalformedAuth = "Malformed HTTP Basic credentials"
	descBadRefresh    = "Invalid parameter refresh_token"
)

// codeAuthentication is the CSC error of a failed auth/login.
const codeAuthentication = "authentication_error"

type loginResponse struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token,omitempty"`
	ExpiresIn    int64  `json:"expires_in"`
}

// authLogin is POST /csc/v1/auth/login: HTTP Basic with the user's
// username and password, or a refresh_token in the body, gives a service
// access token; rememberMe adds a refresh token. Every refresh returns a
// new refresh token and spends the one presented.
func (h *Handler) authLogin(c echo.Context) error {
	r := c.Request()
	p, e := protocol.ReadParams(r)
	if e != nil {
		return e
	}
	rememberMe, e := p.Bool("rememberMe", false)
	if e != nil {
		return e
	}
	refresh, hasRefresh, e := p.Str("refresh_token", false)
	if e != nil {
		return e
	}
	if hasRefresh && refresh == "" {
		return protocol.Missing("string", "refresh_token")
	}
	if _, _, e := p.Str("clientData", false); e != nil {
		return protocol.Invalid("clientData")
	}
	auth := r.Header.Values("Authorization")
	var tokens *authlogin.Tokens
	var err error
	switch {
	case len(auth) > 1:
		return protocol.BadRequest("More than one Authorization header")
	case len(auth) == 1 && hasRefresh:
		return protocol.BadRequest(descBasicOrToken)
	case hasRefresh:
		if len(refresh) > 512 {
			return protocol.BadRequest(descBadRefresh)
		}
		tokens, err = h.Login.Refresh(r.Context(), refresh)
	case len(auth) == 0:
		return h.basicChallenge(http.StatusUnauthorized, codeAuthentication, descMissingBasic)
	default:
		username, password, ok := r.BasicAuth()
		if !ok || username == "" || len(username) > 64 || len(password) > 1024 {
			return h.basicChallenge(http.StatusBadRequest, oauth.CodeInvalidRequest, descMalformedAuth)
		}
		tokens, err = h.Login.Login(r.Context(), username, password, rememberMe)
	}
	switch {
	case errors.Is(err, authlogin.ErrLoginFailed):
		return h.basicChallenge(http.StatusUnauthorized, codeAuthentication, descLoginFailed)
	case errors.Is(err, authlogin.ErrRefreshInvalid):
		return protocol.BadRequest(descBadRefresh)
	case err != nil:
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.JSON(http.StatusOK, loginResponse{
		AccessToken: tokens.AccessToken, RefreshToken: tokens.RefreshToken, ExpiresIn: tokens.ExpiresIn,
	})
}

// basicChallenge is an auth/login refusal with WWW-Authenticate: Basic.
func (h *Handler) basicChallenge(status int, code, desc string) *oauth.Error {
	return &oauth.Error{Code: code, Status: status, Description: desc,
		Header: http.Header{"WWW-Authenticate": {`Basic realm="` + h.oauth2Base() + `", charset="UTF-8"`}}}
}

// authRevoke is POST /csc/v1/auth/revoke: the bearer revokes one of its
// own access or refresh tokens (a refresh token with the tokens issued
// with it). An unknown token, or someone else's, gets the same 204 and
// nothing changes (RFC 7009 §2.2).
func (h *Handler) authRevoke(c echo.Context) error {
	p, e := protocol.ReadParams(c.Request())
	if e != nil {
		return e
	}
	token, _, e := p.Str("token", true)
	if e != nil {
		return e
	}
	if len(token) > 4096 {
		return protocol.Invalid("token")
	}
	hint, ok, e := p.Str("token_type_hint", false)
	if e != nil {
		return e
	}
	if ok && hint != "access_token" && hint != "refresh_token" {
		return protocol.Invalid("token_type_hint")
	}
	if _, _, e := p.Str("clientData", false); e != nil {
		return protocol.Invalid("clientData")
	}
	if err := h.Revoker.RevokeOwn(c.Request().Context(), oauth.GrantFrom(c), token); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
