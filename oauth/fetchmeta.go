package oauth

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/oauth/pages"
	"github.com/signd/signd/store"
)

// This file refuses login and consent form posts that a browser marks as
// coming from another site, before anything else looks at them. It follows
// the resource isolation policy of W3C Fetch Metadata Request Headers
// (web.dev "Protect your resources from web attacks with Fetch Metadata")
// and the OWASP Cross-Site Request Forgery Prevention Cheat Sheet
// ("Fetch Metadata headers", "Verifying Origin with standard headers"):
//
//   - Sec-Fetch-Site: same-origin, same-site and none (a user action such
//     as a bookmark) pass; cross-site is refused — the policy lets a
//     cross-site request through only as a top-level GET navigation, and
//     these endpoints take only POST. A value no browser sends is refused
//     too. Browsers without Fetch Metadata send no header: that passes to
//     the Origin check.
//   - Origin, when present, must be the origin of server.base_url (the
//     issuer), exactly: same scheme, host and port. "null" (an opaque
//     origin: a sandboxed frame, a data: URL, a redirect chain that crossed
//     sites) is refused. This also refuses a same-site sibling (another
//     subdomain), which Sec-Fetch-Site lets through.
//   - Neither header: the request passes (old browsers and non-browser
//     clients); the browser binding cookie and the CSRF token still apply.
//
// It is not applied to /oauth2/authorize (a client may legitimately post
// an authorization request from its own site, OIDC Core §3.1.2.1) nor to
// /oauth2/token and /oauth2/revoke (server to server, no browser). Referer
// is not checked: signd's pages send none (Referrer-Policy: no-referrer),
// and OWASP makes it only a fallback to Origin.

// The request headers the check reads.
const (
	headerSecFetchSite = "Sec-Fetch-Site"
	headerOrigin       = "Origin"
)

// sameOriginOnly is the route middleware of the form endpoints: it refuses
// a cross-site post with a 403 page in the request's language (Dutch when
// the request is unknown) and a warning log, and changes nothing.
func (s *Server) sameOriginOnly(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		reason := s.CrossSite(r.Header)
		if reason == "" {
			return next(c)
		}
		req := s.postedRequest(r)
		lang, clientID := pages.NL, ""
		if req != nil {
			lang, clientID = req.Lang, req.ClientID
		}
		s.log.Warn("oauth form refused: posted from another site", "path", r.URL.Path, "reason", reason,
			"client_id", clientID, "origin", Clip(r.Header.Get(headerOrigin)),
			"sec_fetch_site", Clip(r.Header.Get(headerSecFetchSite)))
		return NewPageError(http.StatusForbidden, lang, "errorpage.crosssite")
	}
}

// CrossSite returns why a form post with header h must be refused as
// cross-site, or "" when it may go on.
func (s *Server) CrossSite(h http.Header) string {
	switch site := h.Values(headerSecFetchSite); {
	case len(site) > 1:
		return "Sec-Fetch-Site sent more than once"
	case len(site) == 1:
		switch site[0] {
		case "same-origin", "same-site", "none":
		case "cross-site":
			return "Sec-Fetch-Site is cross-site"
		default:
			return "Sec-Fetch-Site has an unknown value"
		}
	}
	switch origin := h.Values(headerOrigin); {
	case len(origin) == 0:
		return ""
	case len(origin) > 1:
		return "Origin sent more than once"
	case origin[0] == "null":
		return "Origin is null (an opaque origin)"
	default:
		if o, err := serializeOrigin(origin[0], true); err != nil || o != s.origin {
			return "Origin is not the origin of server.base_url"
		}
	}
	return ""
}

// postedRequest returns the pending request a refused form names, for the
// language of the error page, or nil. It only reads.
func (s *Server) postedRequest(r *http.Request) *store.AuthRequest {
	if err := r.ParseForm(); err != nil {
		return nil
	}
	handles := r.PostForm[fieldRequest]
	if len(handles) != 1 || handles[0] == "" {
		return nil
	}
	var req *store.AuthRequest
	if err := s.store.View(r.Context(), func(tx Tx) (err error) {
		req, err = tx.AuthRequest(store.Fingerprint(handles[0]))
		return err
	}); err != nil {
		return nil
	}
	return req
}

// serializeOrigin returns the ASCII serialization of the origin of the
// http(s) URL raw (RFC 6454 §6.2): lower-case scheme and host, the port
// only when it is not the scheme's default. With bare, raw must be an
// origin and nothing more (as the Origin header is): no user info, path,
// query or fragment.
func serializeOrigin(raw string, bare bool) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" || u.Host == "" || u.Opaque != "" || u.User != nil {
		return "", fmt.Errorf("oauth: %q is not an http(s) origin", raw)
	}
	if bare && (u.Path != "" || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.ContainsAny(raw, "#?")) {
		return "", fmt.Errorf("oauth: %q is more than an origin", raw)
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if port == "" && strings.HasSuffix(u.Host, ":") {
		return "", fmt.Errorf("oauth: %q has an empty port", raw)
	}
	if scheme == "http" && port == "80" || scheme == "https" && port == "443" {
		port = ""
	}
	if port != "" {
		return scheme + "://" + net.JoinHostPort(host, port), nil
	}
	if strings.Contains(host, ":") { // IPv6
		return scheme + "://[" + host + "]", nil
	}
	return scheme + "://" + host, nil
}

// Clip bounds a client-supplied header value in the log.
func Clip(v string) string {
	const limit = 120
	if len(v) > limit {
		return v[:limit] + "…"
	}
	return v
}
