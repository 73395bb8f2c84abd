// Package oauthtest drives the authorization server's login and consent
// pages the way a user's browser does — without JavaScript, by parsing the
// HTML forms and posting them back — for the tests of oauth, csc, oidc and
// cmd/signd. It follows no redirect by itself: every step is returned, so a
// test sees the redirect to the client (with its code or error) and can
// hand the code to golang.org/x/oauth2. Store, With, PostClientForm and
// Step.Code are the fixtures those tests share around the browser: the
// store as the authorization server sees it, request parameters, client
// requests at the token endpoint (RFC 6749 §2.3.1) and the check of an
// authorization response (RFC 6749 §4.1.2, RFC 9207).
package oauthtest
