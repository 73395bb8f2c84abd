// Package oauth is the core of signd's OAuth 2.0 authorization server,
// shared by the CSC API and the OpenID Connect provider: clients and their
// authentication, scope profiles, authorization codes, access tokens, SAD
// and refresh tokens, the token endpoint (/oauth2/token), revocation
// (/oauth2/revoke, RFC 7009), the bearer middleware the protocol endpoints
// use, the sweeper of expired records and the one error Renderer.
//
// oauth stays generic: the CSC scopes (service, credential) and OIDC (openid)
// plug in as scope profiles that validate their own authorize parameters,
// describe the consent and decide what a code turns into at the token
// endpoint. oauth imports neither csc nor oidc.
//
// The rest of the authorization server builds on this package, each in its
// own: oauth/browser (/oauth2/authorize, the login and consent pages, the
// login session), oauth/account (the account page), oauth/authlogin (CSC
// auth/login without pages), oauth/passwords (passwords, one-time codes and
// signing PINs with one lockout for every door), oauth/pages (the HTML),
// oauth/ratelimit (token buckets).
//
// The token endpoint is parse, then phases: parseRedeem checks the
// request, redeem (without HTTP) redeems the code in one group-committed
// transaction, each run of which is redeemRun, and tokenResponse joins the
// profile's response once the commit succeeded.
//
// Handlers return errors, protocol errors as *Error values; one Renderer,
// the public server's Echo error handler, writes them in the dialect of
// their route (RFC 6749 §5.2 JSON, the HTML error page, a redirect to the
// client, CSC v1 §10, OIDC) or of the error itself (render.go).
// Codes, tokens and SAD are stored only as SHA-256 fingerprints.
package oauth
