package csc

import (
	"context"
	"errors"
	"net/http"
	"regexp"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/oauth"
)

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
	descAlgoUnsupported = "Invalid parameter signAlgo: the signing device cannot make this algorithm with this credential's key"
	descCredDisabled    = "The credential identified by credentialID is disabled"
	descUserIDNotNull   = "userID parameter MUST be null"
	descUnavailable     = "The signing service is temporarily unavailable, try again later"
	descKeyMissing      = "The signing key is not available on this node, try again later"
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
		return badRequest("Bad request")
	case oauth.StoreUnavailable(err) != nil:
		// The store could not commit: nothing of the request was recorded
		// (a SAD is not consumed), so the same request may be retried.
		return unavailable(http.Header{"Retry-After": {oauth.RetryAfter}})
	case answers(err, unavailableError.Unavailable), errors.Is(err, context.Canceled):
		return unavailable(retryLater())
	}
	return nil
}

// unavailable is the CSC answer while the store or the signer cannot
// serve: 503 temporarily_unavailable with Retry-After.
func unavailable(h http.Header) *oauth.Error {
	return &oauth.Error{Code: oauth.CodeTemporarilyUnavailable, Description: descUnavailable,
		Status: http.StatusServiceUnavailable, Header: h}
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
