package oauth

import (
	"fmt"
	"net"
	"net/url"
	"strings"
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
