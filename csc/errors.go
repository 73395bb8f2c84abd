package csc

import (
	"context"
	"errors"
	"net/http"
	"regexp"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/oauth"
)

// errorBody is the CSC v1 §10 error response.
type errorBody struct {
	Error       string `json:"error"`
	Description string `json:"error_description,omitempty"`
}

// Codes CSC uses beyond oauth's.
const (
	codeNotFound       = "not_found"
	codeNotImplemented = "not_implemented"
)

func badRequest(desc string) *oauth.Error {
	return &oauth.Error{Code: oauth.CodeInvalidRequest, Description: desc, Status: http.StatusBadRequest}
}

// missing is the specification's description of an absent or ill-typed
// parameter: "Missing (or invalid type) string parameter SAD".
func missing(typ, name string) *oauth.Error {
	return badRequest("Missing (or invalid type) " + typ + " parameter " + name)
}

// invalid is "Invalid parameter <name>".
func invalid(name string) *oauth.Error {
	return badRequest("Invalid parameter " + name)
}

// Descriptions of the specification (reference/csc.md) used in more than
// one place.
const (
	descEmptyHash       = "Empty hash array"
	descBadBase64       = "Invalid Base64 hash string parameter"
	descDigestLength    = "Invalid digest value length"
	descHashNotAuth     = "Hash is not authorized by the SAD."
	descSADExpired      = "SAD expired"
	descCredDisabled    = "The credential identified by credentialID is disabled"
	descUserIDNotNull   = "userID parameter MUST be null"
	descUnavailable     = "The signing service is temporarily unavailable, try again later"
	descInternal        = "Internal error"
	descMissingToken    = "Missing access token"
	descUnknownMethod   = "Unknown CSC method"
	descPostOnly        = "CSC methods are called with POST"
	descContentType     = "Content-Type must be application/json"
	descMalformedJSON   = "Malformed JSON body"
	descNotObject       = "The request body must be a JSON object"
	descBodyTooLarge    = "Request body larger than 65536 bytes"
	descCredIDsConflict = "Parameters credentialID and credentialIDs differ"
)

// writeErrors is the group middleware that makes this the one error writer
// of /csc/v1: whatever a handler, the bearer middleware or the router
// (unknown method) returns is rendered here and never reaches the server's
// generic handler.
func (h *Handler) writeErrors(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		err := next(c)
		if err == nil {
			return nil
		}
		if c.Response().Committed {
			h.logger().Warn("csc: error after the response was sent", "path", c.Request().URL.Path, "err", err)
			return nil
		}
		status, body, header := h.classify(c, err)
		for k, vs := range header {
			for _, v := range vs {
				c.Response().Header().Add(k, v)
			}
		}
		if werr := c.JSON(status, body); werr != nil {
			h.logger().Warn("csc: writing error response failed", "err", werr)
		}
		return nil
	}
}

// classify maps an error to status, body and extra headers.
func (h *Handler) classify(c echo.Context, err error) (int, errorBody, http.Header) {
	var oe *oauth.Error
	var he *echo.HTTPError
	switch {
	case errors.As(err, &oe):
		if oe.Code == "" { // RFC 6750 §3.1: no credentials; CSC wants a code
			return http.StatusUnauthorized, errorBody{oauth.CodeInvalidToken, descMissingToken}, oe.Header
		}
		status := oe.Status
		if status == 0 {
			status = http.StatusBadRequest
		}
		return status, errorBody{oe.Code, oe.Description}, oe.Header
	case errors.As(err, &he) && he.Code == http.StatusNotFound:
		return http.StatusNotFound, errorBody{codeNotFound, descUnknownMethod}, nil
	case errors.As(err, &he) && he.Code == http.StatusMethodNotAllowed:
		return http.StatusMethodNotAllowed, errorBody{oauth.CodeInvalidRequest, descPostOnly}, http.Header{"Allow": {http.MethodPost}}
	case errors.As(err, &he) && he.Code < 500:
		return http.StatusBadRequest, errorBody{oauth.CodeInvalidRequest, "Bad request"}, nil
	case oauth.StoreUnavailable(err) != nil:
		// The store could not commit: nothing of the request was recorded
		// (a SAD is not consumed), so the same request may be retried.
		h.logger().Warn("csc: store not writable", "path", c.Request().URL.Path, "err", err)
		return http.StatusServiceUnavailable, errorBody{oauth.CodeTemporarilyUnavailable, descUnavailable},
			http.Header{"Retry-After": {oauth.RetryAfter}}
	case h.Unavailable != nil && h.Unavailable(err):
		h.logger().Warn("csc: signer unavailable", "path", c.Request().URL.Path, "err", err)
		return http.StatusServiceUnavailable, errorBody{oauth.CodeTemporarilyUnavailable, descUnavailable}, retryLater()
	case errors.Is(err, context.Canceled):
		h.logger().Info("csc: request canceled", "path", c.Request().URL.Path)
		return http.StatusServiceUnavailable, errorBody{oauth.CodeTemporarilyUnavailable, descUnavailable}, retryLater()
	}
	h.logger().Error("csc: request failed", "path", c.Request().URL.Path, "err", err)
	return http.StatusInternalServerError, errorBody{oauth.CodeServerError, descInternal}, nil
}

// retryAfter is the Retry-After (RFC 9110 §10.2.3) of every 503, in
// seconds: long enough for the HSM's reconnect loop (backoff capped at 2 s)
// to have tried twice. A SAD presented during an outage is not consumed
// (or is given back), so the client retries with the same SAD.
const retryAfter = "5"

func retryLater() http.Header { return http.Header{"Retry-After": {retryAfter}} }

var plainName = regexp.MustCompile(`^[A-Za-z0-9_]{1,64}$`)

// paramName returns name when it is safe to echo in a description.
func paramName(name string) string {
	if plainName.MatchString(name) {
		return name
	}
	return "(unprintable name)"
}
