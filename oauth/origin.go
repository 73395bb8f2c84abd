package oauth

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"
)

// SerializeOrigin returns the ASCII serialization of the origin of the
// http(s) URL raw (RFC 6454 §6.2): lower-case scheme and host, the port
// only when it is not the scheme's default. With bare, raw must be an
// origin and nothing more (as the Origin header is): no user info, path,
// query or fragment.
func SerializeOrigin(raw string, bare bool) (string, error) {
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

// RefuseCrossSite is the route middleware of a page's form posts (the
// login, consent, account and enrollment forms): a post that crossSite
// finds a reason to refuse (browser.Handler.CrossSite: Fetch Metadata,
// then Origin) gets the 403 page in the language lang gives, with a
// warning log naming form, the reason and the headers, and its handler
// does not run. lang also returns the log line's extra attributes.
func RefuseCrossSite(log *slog.Logger, form string, crossSite func(http.Header) string,
	lang func(*http.Request) (string, []any)) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			reason := crossSite(r.Header)
			if reason == "" {
				return next(c)
			}
			l, attrs := lang(r)
			log.WarnContext(r.Context(), form+" form refused: posted from another site", append([]any{
				"path", r.URL.Path, "reason", reason,
				"origin", Clip(r.Header.Get("Origin")), "sec_fetch_site", Clip(r.Header.Get("Sec-Fetch-Site"))}, attrs...)...)
			return NewPageError(http.StatusForbidden, l, "errorpage.crosssite")
		}
	}
}
