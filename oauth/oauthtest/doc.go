// Package oauthtest drives the authorization server's login and consent
// pages the way a user's browser does — without JavaScript, by parsing the
// HTML forms and posting them back — for the tests of oauth, csc, oidc and
// cmd/signd. It follows no redirect by itself: every step is returned, so a
// test sees the redirect to the client (with its code or error) and can
// hand the code to golang.org/x/oauth2.
package oauthtest
