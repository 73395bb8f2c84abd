// Package enroll serves the enrollment page: the user opens the one-time
// link an administrator's AddUser issued (admin/users, enroll.go) and sets their
// password and signing PIN, and optionally an authenticator app (TOTP,
// confirmed with one code), which so never pass through the operator or
// the onboarding system that created the account.
//
//	GET  /oauth2/enroll/{token}  the form (or the neutral refusal page)
//	POST /oauth2/enroll/{token}  set password and PIN; the link is used up
//
// An unknown, used and expired link get one page, 404, that tells none of
// them from the other. The form has the account page's defences: a
// double-submit CSRF cookie, the refusal of posts from other sites (Fetch
// Metadata and Origin, which the browser flow lends it through Forms), the
// form rate limit, and the pages' strict CSP. The token appears only in
// the page's own URL: the access log prints the path without it, and no
// log line names it. Its pages are oauth/pages' in Dutch and English (the
// one rule of pages.Lang), its errors the server's page dialect.
package enroll
