package oidc

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/hsm"
	"github.com/signd/signd/oauth"
)

// errorBody is the JSON error shape: {error, error_description}.
type errorBody struct {
	Error       string `json:"error"`
	Description string `json:"error_description,omitempty"`
}

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
	return &oauth.Error{
		Code: oauth.CodeInvalidToken, Description: desc, Status: http.StatusUnauthorized,
		Header: http.Header{"Www-Authenticate": {`Bearer realm="` + p.Issuer + `", error="invalid_token", error_description="` + desc + `"`}},
	}
}

// writeErrors is the provider's one error writer, as middleware around
// each route:
//   - *oauth.Error (from RequireBearer or the handlers): its status and
//     headers (WWW-Authenticate); no body when it has no code (a request
//     without credentials, RFC 6750 §3.1), else JSON {error,
//     error_description}. expired_token, which CSC uses, is invalid_token
//     here as RFC 6750 defines it;
//   - a client error of Echo (oversized body, ...): JSON invalid_request;
//   - a store that cannot write (store.ErrUnavailable): 503
//     temporarily_unavailable with Retry-After;
//   - anything else is logged and answered 500 server_error without detail.
func (p *Provider) writeErrors(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		err := next(c)
		if err == nil || c.Response().Committed {
			return err
		}
		p.writeError(c, err)
		return nil
	}
}

func (p *Provider) writeError(c echo.Context, err error) {
	status, body := http.StatusInternalServerError, &errorBody{Error: oauth.CodeServerError}
	var oe *oauth.Error
	var he *echo.HTTPError
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &oe):
		if oe.Code == oauth.CodeExpiredToken {
			oe = p.invalidToken("The access token has expired")
		}
		for k, vs := range oe.Header {
			for _, v := range vs {
				c.Response().Header().Add(k, v)
			}
		}
		status = oe.Status
		if status == 0 {
			status = http.StatusBadRequest
		}
		if oe.Code == "" {
			body = nil
		} else {
			body = &errorBody{Error: oe.Code, Description: oe.Description}
		}
	case errors.As(err, &mbe):
		status, body = http.StatusRequestEntityTooLarge, &errorBody{Error: oauth.CodeInvalidRequest, Description: "Request body too large"}
	case errors.As(err, &he) && he.Code < 500:
		status, body = he.Code, &errorBody{Error: oauth.CodeInvalidRequest, Description: http.StatusText(he.Code)}
	case oauth.StoreUnavailable(err) != nil:
		p.log().Warn("oidc request: store not writable", "path", c.Request().URL.Path, "err", err)
		oe := oauth.StoreUnavailable(err)
		c.Response().Header().Set("Retry-After", oauth.RetryAfter)
		status, body = oe.Status, &errorBody{Error: oe.Code, Description: oe.Description}
	default:
		p.log().Error("oidc request failed", "path", c.Request().URL.Path, "err", err)
	}
	var werr error
	if body == nil || c.Request().Method == http.MethodHead {
		werr = c.NoContent(status)
	} else {
		data, _ := json.Marshal(body)
		werr = c.Blob(status, jsonUTF8, data)
	}
	if werr != nil {
		p.log().Warn("writing the error response failed", "err", werr)
	}
}
