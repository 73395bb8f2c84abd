// Package browser is the authorization server's browser flow:
// /oauth2/authorize, the login page and the consent page (Dutch and
// English, oauth/pages), single sign-on by the login session cookie, and
// the code issued at the end (RFC 6749 §4.1, RFC 7636, RFC 9207).
//
// A request walks authorize.go (parse and check the request, ask the scope
// profile, bind it to the browser, single sign-on), login.go (the
// password and one-time code, through the password checker: Passwords),
// consent.go (what the profile says needs consent, the signing PIN) and
// flow.go (load a posted request, the timeouts, the re-checks of the final
// write transaction, the code). The login and consent forms answer only
// the browser that opened them (binding.go, a cookie) and refuse posts
// from other sites (fetchmeta.go: Fetch Metadata, Origin), against login
// CSRF; the login form is rate limited per address (throttle.go). The
// login session (session.go) is lent to the account page (oauth/account).
//
// The long handlers are parse, then phases: authorize parses into an
// authorizeRequest (parseAuthorize: parseClient checks the client and its
// redirect URI, whose problems are pages; validate the rest, whose
// problems are redirected, RFC 6749 §4.1.2.1), then startFlow, without
// HTTP, asks the profile and builds the pending request; consent's phases
// without HTTP are consentNow (the profile asked again) and approvePIN
// (the signing PIN, then consentStands). What touches the request and
// response (cookies, the binding, the pages, the redirect) stays in the
// handler.
//
// browser owns no protocol of its own: the clients, the scope profiles,
// the profile's view of a grant and the redirect to the client are the
// authorization server's (Core, *oauth.Server), and errors are returned as
// values that its Renderer writes in the page dialect (an HTML page, or a
// redirect to the client once its redirect URI is validated). The codes it
// issues are redeemed at oauth's token endpoint.
package browser
