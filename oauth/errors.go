package oauth

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/signd/signd/store"
)

// Error is an OAuth 2.0 protocol error (RFC 6749 §4.1.2.1, §5.2; RFC 6750
// §3.1). Handlers and middleware return it as a value; the Renderer turns
// it into a response in the route's dialect. Description is ASCII English without
// '"' or '\' (it travels in redirects and WWW-Authenticate headers) and never
// holds internal detail.
type Error struct {
	Code        string // e.g. "invalid_request"; "" for a bearer request without credentials
	Description string
	Status      int // HTTP status when the error is not a redirect
	// Header holds response headers the renderer must set, e.g.
	// WWW-Authenticate.
	Header http.Header
}

func (e *Error) Error() string {
	if e.Description == "" {
		return "oauth: " + e.Code
	}
	return "oauth: " + e.Code + ": " + e.Description
}

// Errorf returns an *Error with a formatted description.
func Errorf(code string, status int, format string, args ...any) *Error {
	return &Error{Code: code, Status: status, Description: fmt.Sprintf(format, args...)}
}

// Error codes of RFC 6749, RFC 6750 and CSC v1 used by signd.
const (
	CodeInvalidRequest          = "invalid_request"
	CodeInvalidClient           = "invalid_client"
	CodeInvalidGrant            = "invalid_grant"
	CodeUnauthorizedClient      = "unauthorized_client"
	CodeUnsupportedGrantType    = "unsupported_grant_type"
	CodeUnsupportedResponseType = "unsupported_response_type"
	CodeInvalidScope            = "invalid_scope"
	CodeAccessDenied            = "access_denied"
	CodeServerError             = "server_error"
	CodeTemporarilyUnavailable  = "temporarily_unavailable"
	CodeLoginRequired           = "login_required"
	CodeConsentRequired         = "consent_required"
	CodeInteractionRequired     = "interaction_required"
	CodeInvalidToken            = "invalid_token"
	CodeExpiredToken            = "expired_token"
	CodeInsufficientScope       = "insufficient_scope"
)

// RetryAfter is the Retry-After (RFC 9110 §10.2.3), in seconds, of a 503
// for a store that cannot write now: long enough for an operator's alert
// to fire, short enough that a client retrying once a disk is freed does
// not wait long.
const RetryAfter = "10"

// StoreUnavailable returns the error the renderer answers for err
// when err is a store write that could not be committed
// (store.ErrUnavailable: a full disk, an I/O error): 503
// temporarily_unavailable (RFC 6749 §4.1.2.1 and §5.2) with Retry-After,
// so clients retry instead of treating it as a server bug. It returns nil
// for any other error.
func StoreUnavailable(err error) *Error {
	if !errors.Is(err, store.ErrUnavailable) {
		return nil
	}
	return &Error{
		Code: CodeTemporarilyUnavailable, Status: http.StatusServiceUnavailable,
		Description: "The service cannot store the request now, try again later",
		Header:      http.Header{"Retry-After": {RetryAfter}},
	}
}
