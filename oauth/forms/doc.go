// Package forms holds what the pages' forms (the login and consent forms
// of package browser, the account page, the enrollment page) share
// against cross-site posts and planted cookies: the refusal of a post from
// another site (RefuseCrossSite), the __Host- naming of the cookies that
// carry security meaning (PageCookie), the refusal of a cookie name sent
// twice (OneCookie) and the double-submit CSRF cookie (CSRFCookie).
//
// It sits above package oauth (whose page error it answers with) and below
// the packages that serve the pages.
package forms
