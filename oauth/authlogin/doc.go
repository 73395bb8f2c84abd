// Package authlogin is the pageless login of the CSC API's auth/login
// (CSC v1 §11.2): the user's password arrives in an HTTP Basic header
// instead of on the login page, and the answer is a service access token,
// with a refresh token (RFC 6749 §6) when asked. It bypasses the consent
// page, so the daemon builds it only with csc.auth_login. The password goes
// through the same reservation, hashing slots and lockout as the login page
// (passwords.Checker.LoginWithoutCode); a user with TOTP cannot log in this
// way (the method has no field for the code): a right password is answered
// like a wrong one and leaves the failure counter as it was, so that this
// door neither confirms a password nor resets the count of wrong one-time
// codes.
//
// Refresh tokens rotate (RFC 9700 §4.14.2): every token of one password
// login — access tokens and refresh tokens — carries the login's random
// family in store.Token.CodeHash. A refresh token is exchanged once: the
// exchange marks it rotated (RotatedAt, kept until it expires) and issues a
// new access and refresh token of the family. Presenting a rotated refresh
// token again revokes the whole family (DeleteTokensByCode), in the same
// write transaction, as the redemption of a used code does.
//
// The tokens are the authorization server's (oauth.Store): the bearer
// middleware accepts them and /oauth2/revoke and auth/revoke revoke them.
// authlogin writes no HTTP: csc's auth/login parses the request and
// renders the answer.
package authlogin
