package oauth

import "net/http"

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
