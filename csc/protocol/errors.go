package protocol

import (
	"errors"
	"fmt"
	"net/http"
	"regexp"

	"github.com/signd/signd/oauth"
)

// BadRequest is the CSC refusal of a client mistake: 400 invalid_request
// with desc.
func BadRequest(desc string) *oauth.Error {
	return &oauth.Error{Code: oauth.CodeInvalidRequest, Description: desc, Status: http.StatusBadRequest}
}

// Missing is the specification's description of an absent or ill-typed
// parameter: "Missing (or invalid type) string parameter SAD".
func Missing(typ, name string) *oauth.Error {
	return BadRequest("Missing (or invalid type) " + typ + " parameter " + name)
}

// Invalid is "Invalid parameter <name>".
func Invalid(name string) *oauth.Error {
	return BadRequest("Invalid parameter " + name)
}

// TooManyHashes refuses a hash array over the cap. CSC v1 has no row for
// it; the description names the limit so that a client knows what to do.
func TooManyHashes(limit int) *oauth.Error {
	return BadRequest(fmt.Sprintf("Too many hashes: at most %d per request", limit))
}

// Descriptions of the specification (reference/csc.md) used by more than
// one method.
const (
	DescEmptyHash     = "Empty hash array"
	DescBadBase64     = "Invalid Base64 hash string parameter"
	DescDigestLength  = "Invalid digest value length"
	DescHashNotAuth   = "Hash is not authorized by the SAD."
	DescSADExpired    = "SAD expired"
	DescTooMany       = "Numbers of signatures is too high"
	DescCredDisabled  = "The credential identified by credentialID is disabled"
	descUnavailable   = "The signing service is temporarily unavailable, try again later"
	descContentType   = "Content-Type must be application/json"
	descMalformedJSON = "Malformed JSON body"
	descNotObject     = "The request body must be a JSON object"
	descBodyTooLarge  = "Request body larger than 65536 bytes"
)

// Unavailable is the CSC answer while the store or the signer cannot
// serve: 503 temporarily_unavailable with Retry-After.
func Unavailable(h http.Header) *oauth.Error {
	return &oauth.Error{Code: oauth.CodeTemporarilyUnavailable, Description: descUnavailable,
		Status: http.StatusServiceUnavailable, Header: h}
}

// retryAfter is the Retry-After (RFC 9110 §10.2.3) of every 503, in
// seconds: long enough for the HSM's reconnect loop (backoff capped at 2 s)
// to have tried twice. A SAD presented during an outage is not consumed
// (or is given back), so the client retries with the same SAD.
const retryAfter = "5"

// RetryLater is the header of a 503 that a retry may cure: Retry-After.
func RetryLater() http.Header { return http.Header{"Retry-After": {retryAfter}} }

// UnavailableError is a Signer error that answers whether the HSM cannot
// serve now and a retry later may succeed (busy, reconnecting, closed, its
// PIN refused): 503. The errors of package hsm (and of its software
// token) implement it; the CSC packages ask it with errors.As (Answers)
// and do not import hsm.
type UnavailableError interface{ Unavailable() bool }

// Answers reports whether err, or an error it wraps, implements T and
// answers true.
func Answers[T any](err error, ask func(T) bool) bool {
	var t T
	return errors.As(err, &t) && ask(t)
}

var plainName = regexp.MustCompile(`^[A-Za-z0-9_]{1,64}$`)

// paramName returns name when it is safe to echo in a description.
func paramName(name string) string {
	if plainName.MatchString(name) {
		return name
	}
	return "(unprintable name)"
}
