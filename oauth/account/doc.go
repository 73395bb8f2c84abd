// Package account serves the account page: a signed-in user lists their
// signing credentials and disables (or enables again) their own.
//
//	GET  /oauth2/account        the credentials, or the login form
//	POST /oauth2/account/login  answer the login form
//	POST /oauth2/account        disable or enable one credential
//	POST /oauth2/account/logout end the login session (sign out)
//
// It uses the login of the authorization flows: the same password,
// one-time code and lockout (oauth/passwords), the same login session
// cookie and the same form defences (Fetch Metadata and Origin, the form
// rate limit), which the browser flow lends it through Sessions;
// its pages are oauth/pages', its errors the server's page dialect. The
// login form's CSRF token is a double-submit cookie (no session exists
// yet); once signed in the token is derived from the session cookie's
// value (which the page's HttpOnly cookie keeps from scripts and other
// sites). What the credentials are, and who may change them, is the
// Backend's (csc.Account).
package account
