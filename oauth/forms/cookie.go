package forms

import (
	"crypto/subtle"
	"net/http"
)

// HostPrefix is the cookie name prefix that browsers accept only on a
// cookie that is Secure, has Path=/ and no Domain, set by a secure origin
// (RFC 6265bis, cookie name prefixes). So neither a sibling subdomain (a
// Domain= cookie), nor a response over plain http, nor a page under
// another path can set a cookie of that name on signd's host: only signd
// itself, over https.
const HostPrefix = "__Host-"

// PageCookie names and scopes one of the pages' cookies that carries
// security meaning (the login session, the browser binding, the forms'
// CSRF tokens): with secure (server.base_url is https or signd terminates
// TLS) HostPrefix+name with Path=/; without (plain http on a loopback
// host, development) name with path, where the prefix cannot be used —
// and an attacker on the path can set any cookie anyway.
func PageCookie(name, path string, secure bool) (cookieName, cookiePath string) {
	if secure {
		return HostPrefix + name, "/"
	}
	return name, path
}

// OneCookie returns the value of the only cookie named name that r
// carries, and how many it carries. A name sent more than once is
// ambiguous — one of them was set by another path or a parent domain,
// and browsers send the longer path first, so a planted cookie would win —
// and gets no value: the caller treats it as none (and says so in its
// log).
func OneCookie(r *http.Request, name string) (value string, n int) {
	cks := r.CookiesNamed(name)
	if len(cks) != 1 {
		return "", len(cks)
	}
	return cks[0].Value, 1
}

// CSRFCookie is the double-submit CSRF cookie of a page's form (the
// account page's login form, the enrollment form): HttpOnly,
// SameSite=Strict, named and scoped by PageCookie, for the browser
// session.
type CSRFCookie struct {
	name, path string
	secure     bool
}

// NewCSRFCookie names and scopes the CSRF cookie name of a form under
// path (PageCookie).
func NewCSRFCookie(name, path string, secure bool) CSRFCookie {
	n, p := PageCookie(name, path, secure)
	return CSRFCookie{name: n, path: p, secure: secure}
}

// Cookie returns the cookie that carries value; maxAge -1 expires it.
func (c CSRFCookie) Cookie(value string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: c.name, Value: value, Path: c.path, MaxAge: maxAge,
		HttpOnly: true, Secure: c.secure, SameSite: http.SameSiteStrictMode}
}

// Matches reports whether r carries the cookie exactly once (OneCookie)
// with a value equal to the form's token, compared in constant time; an
// empty value matches nothing.
func (c CSRFCookie) Matches(r *http.Request, token string) bool {
	value, _ := OneCookie(r, c.name)
	return value != "" && subtle.ConstantTimeCompare([]byte(value), []byte(token)) == 1
}
