package oidc

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/hsm"
	"github.com/signd/signd/oauth"
)

// signerUnavailable is the token endpoint's answer while the ID-token
// signer (the HSM) cannot sign: 503 with Retry-After and the
// temporarily_unavailable code. RFC 6749 §5.2 defines no such code for the
// token endpoint; §4.1.2.1 defines it for the same condition at the
// authorization endpoint ("temporarily unable to handle the request due to
// a temporary overloading or maintenance"), and a client that does not
// know it still sees a 503. Retry-After matches the CSC API's.
func signerUnavailable() *oauth.Error {
	return &oauth.Error{
		Code: oauth.CodeTemporarilyUnavailable, Status: http.StatusServiceUnavailable,
		Description: "The ID token signer is temporarily unavailable, try again later",
		Header:      http.Header{"Retry-After": {"5"}},
	}
}

// hsmUnavailable reports the HSM errors that mean "cannot sign now": busy,
// reconnecting after a device error, PIN refused, closed.
func hsmUnavailable(err error) bool {
	return errors.Is(err, hsm.ErrTokenUnavailable) || errors.Is(err, hsm.ErrBusy) ||
		errors.Is(err, hsm.ErrPIN) || errors.Is(err, hsm.ErrClosed)
}

// invalidToken is the RFC 6750 invalid_token error with its challenge.
func (p *Provider) invalidToken(desc string) *oauth.Error {
	return oauth.BearerError(p.Issuer, oauth.CodeInvalidToken, desc, http.StatusUnauthorized)
}

// dialect is how the provider's endpoints write their errors, through the
// daemon's one renderer (oauth.Renderer): JSON {error, error_description}
// as application/json;charset=UTF-8, a request without credentials (RFC
// 6750 §3.1) without a body, an internal error as a bare server_error.
func (p *Provider) dialect() *oauth.Dialect {
	return &oauth.Dialect{Name: "oidc", Format: oauth.FormatJSONUTF8, Map: p.protocolError}
}

// protocolError is the provider's mapping; nil leaves err to the
// renderer's defaults (an *oauth.Error as it is, a store that cannot write
// as 503 temporarily_unavailable with Retry-After):
//   - expired_token, which CSC uses, is invalid_token here as RFC 6750
//     defines it;
//   - an oversized body or a client error of Echo is invalid_request.
func (p *Provider) protocolError(err error) *oauth.Error {
	var oe *oauth.Error
	var he *echo.HTTPError
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &oe) && oe.Code == oauth.CodeExpiredToken:
		return p.invalidToken("The access token has expired")
	case errors.As(err, &mbe):
		return &oauth.Error{Code: oauth.CodeInvalidRequest, Status: http.StatusRequestEntityTooLarge, Description: "Request body too large"}
	case errors.As(err, &he) && he.Code < 500:
		return &oauth.Error{Code: oauth.CodeInvalidRequest, Status: he.Code, Description: http.StatusText(he.Code)}
	}
	return nil
}
