package csc

import (
	"context"
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/csc/protocol"
	"github.com/signd/signd/oauth"
)

// Codes CSC uses beyond oauth's.
const (
	codeNotFound       = "not_found"
	codeNotImplemented = "not_implemented"
)

// Descriptions of the specification (reference/csc.md) of the methods
// and errors of this package.
const (
	descUserIDNotNull = "userID parameter MUST be null"
	descInternal      = "Internal error"
	descMissingToken  = "Missing access token"
	descUnknownMethod = "Unknown CSC method"
	descPostOnly      = "CSC methods are called with POST"
)

// dialect is how /csc/v1 writes its errors: CSC v1 §10 JSON {error,
// error_description}, mapped by protocolError; an internal error is
// server_error "Internal error".
func (h *Handler) dialect() *oauth.Dialect {
	return &oauth.Dialect{Name: "csc", Format: oauth.FormatJSON, Internal: descInternal, Map: h.protocolError}
}

// protocolError maps what a handler, the bearer middleware or the router
// (unknown method) returns to the CSC error response; nil leaves it to
// the renderer (500 server_error, logged).
func (h *Handler) protocolError(err error) *oauth.Error {
	var oe *oauth.Error
	var he *echo.HTTPError
	switch {
	case errors.As(err, &oe):
		if oe.Code == "" { // RFC 6750 §3.1: no credentials; CSC wants a code
			return &oauth.Error{Code: oauth.CodeInvalidToken, Description: descMissingToken, Status: http.StatusUnauthorized, Header: oe.Header}
		}
		return oe
	case errors.As(err, &he) && he.Code == http.StatusNotFound:
		return &oauth.Error{Code: codeNotFound, Description: descUnknownMethod, Status: http.StatusNotFound}
	case errors.As(err, &he) && he.Code == http.StatusMethodNotAllowed:
		return &oauth.Error{Code: oauth.CodeInvalidRequest, Description: descPostOnly, Status: http.StatusMethodNotAllowed,
			Header: http.Header{"Allow": {http.MethodPost}}}
	case errors.As(err, &he) && he.Code < 500:
		return protocol.BadRequest("Bad request")
	case oauth.StoreUnavailable(err) != nil:
		// The store could not commit: nothing of the request was recorded
		// (a SAD is not consumed), so the same request may be retried.
		return protocol.Unavailable(http.Header{"Retry-After": {oauth.RetryAfter}})
	case protocol.Answers(err, protocol.UnavailableError.Unavailable), errors.Is(err, context.Canceled):
		return protocol.Unavailable(protocol.RetryLater())
	}
	return nil
}
