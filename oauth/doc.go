// Package oauth is signd's OAuth 2.0 authorization server, shared by the CSC
// API and the OpenID Connect provider: /oauth2/authorize with the login and
// consent pages (Dutch and English), /oauth2/token, /oauth2/revoke,
// authorization codes, access tokens and SAD, and the bearer middleware the
// protocol endpoints use.
//
// oauth stays generic: the CSC scopes (service, credential) and OIDC (openid)
// plug in as scope profiles that validate their own authorize parameters,
// describe the consent and decide what a code turns into at the token
// endpoint. oauth imports neither csc nor oidc.
//
// The login and consent forms answer only the browser that opened them (a
// binding cookie) and refuse posts from other sites (Fetch Metadata,
// Origin), against login CSRF.
//
// Handlers return errors, protocol errors as *Error values; one Renderer,
// the public server's Echo error handler, writes them in the dialect of
// their route (RFC 6749 §5.2 JSON, the HTML error page, a redirect to the
// client, CSC v1 §10, OIDC) or of the error itself (render.go).
// Codes, tokens and SAD are stored only as SHA-256 fingerprints.
package oauth
