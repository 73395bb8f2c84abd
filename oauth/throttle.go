package oauth

import (
	"errors"
	"net/http"

	"github.com/signd/signd/oauth/ratelimit"
)

// Rate limits (ratelimit.*): the token endpoint per authenticated client
// (Config.TokenLimit, checked once the client is authenticated), the login
// form and the account page's login and change forms per remote address
// (browser.Config.FormLimit, one bucket for all of them, checked after the
// cross-site check and before anything is read or hashed: oauth/browser's
// throttle.go). The remote
// address is echo's RealIP, which believes X-Forwarded-For and X-Real-IP
// only from server.trusted_proxies (cmd/signd's IPExtractor). The consent
// form is not limited: it needs a pending request, which only a login
// makes, and its PIN guesses have their own lockout. Refusals are counted
// in the limiter's metric; nothing is written to the audit log.

// descTooMany is the error_description of a request over its rate limit.
const descTooMany = "Too many requests, try again later"

// RateLimited returns the error the renderer answers for err when err is a
// request over its rate limit (*ratelimit.Refused): 429
// temporarily_unavailable with Retry-After in whole seconds (at least 1).
// RFC 6749 §5.2 has no code for it; the §4.1.2.1 one that the token
// endpoint already answers a 503 with is used, so a client retries later
// instead of giving up on its grant. CSC v1 §10 names 429 without a code;
// the CSC dialect answers the same. It returns nil for any other error.
func RateLimited(err error) *Error {
	var r *ratelimit.Refused
	if !errors.As(err, &r) {
		return nil
	}
	return &Error{
		Code: CodeTemporarilyUnavailable, Status: http.StatusTooManyRequests, Description: descTooMany,
		Header: http.Header{"Retry-After": {r.Seconds()}},
	}
}
