package oauth

import (
	"net/http"

	"github.com/signd/signd/oauth/pages"
)

// An error the flow sends back to the client is, for a profile with
// ProfileInfo.ErrorPage (the OpenID profile), first shown to the user: a
// page in the request's language with the case's message, a button back to
// the application and a meta refresh to the same redirect after
// ErrorPageDelay. The redirect carries the same error, error_description,
// state and iss as the 302 or 303 would. The page has no script (the CSP
// forbids it); a link and a meta refresh are navigations the CSP does not
// govern.
//
// Only a browser's top-level navigation (Fetch Metadata: Sec-Fetch-Mode
// navigate, Sec-Fetch-Dest document) gets the page: a scripted client, a
// frame and a browser without Fetch Metadata get the redirect itself, as
// before.

// ErrorPageDelay is how long the error page is shown before the browser
// follows the redirect on its own.
const ErrorPageDelay = pages.RedirectDelay

// navigation reports whether r is a browser's top-level navigation.
func navigation(r *http.Request) bool {
	return r.Header.Get("Sec-Fetch-Mode") == "navigate" && r.Header.Get("Sec-Fetch-Dest") == "document"
}

// The error descriptions that name a case of their own on the page
// (OpenID profile's error table: ChallengeExpired, EmailUnverified,
// ConsentExpired, ConsentRejected, ProcessExpired).
var deniedMessages = map[string]string{
	"authentication challenge expired":   "redirect.challenge",
	"user email is unverified":           "redirect.email",
	"consent request expired":            "redirect.consent",
	"Resource owner rejected consent":    "redirect.rejected",
	"process expired":                    "redirect.process",
	"Resource owner cancelled the login": "redirect.cancelled",
}

// redirectMessage is the message key of the page shown before oe is
// redirected: the case's own message, the technical-problem message for a
// server error (also ConsentInvalidated and AuthenticationFailure), or a
// general one per error code.
func redirectMessage(oe *Error) string {
	switch oe.Code {
	case CodeAccessDenied:
		if k, ok := deniedMessages[oe.Description]; ok {
			return k
		}
		return "redirect.denied"
	case CodeServerError, CodeTemporarilyUnavailable:
		return "redirect.technical"
	}
	return "redirect.request"
}
