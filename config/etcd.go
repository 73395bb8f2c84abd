package config

import (
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"
	"unicode"

	"github.com/signd/signd/config/rules"
	"github.com/signd/signd/store/auditlog"
)

// etcdEndpoints checks store.etcd.endpoints: 1 to MaxEtcdEndpoints
// distinct http or https URLs of a host and port, with nothing else (no
// credentials, path, query or fragment).
func etcdEndpoints(eps []string) string {
	switch {
	case len(eps) == 0:
		return "required when store.backend is etcd"
	case len(eps) > MaxEtcdEndpoints:
		return fmt.Sprintf("at most %d endpoints, got %d", MaxEtcdEndpoints, len(eps))
	}
	seen := map[string]bool{}
	for _, ep := range eps {
		if msg := etcdEndpoint(ep); msg != "" {
			return msg
		}
		if seen[ep] {
			return fmt.Sprintf("%q is listed twice", ep)
		}
		seen[ep] = true
	}
	return ""
}

func etcdEndpoint(ep string) string {
	if len(ep) > 512 {
		return fmt.Sprintf("an endpoint of %d bytes is too long (at most 512)", len(ep))
	}
	u, err := url.Parse(ep)
	if err != nil {
		return fmt.Sprintf("%q is not a URL such as https://host:2379", ep)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Sprintf("%q: the scheme must be http or https", ep)
	case u.User != nil:
		return fmt.Sprintf("%q must not hold credentials (use store.etcd.cert_file)", redactUser(u))
	case u.Path != "" && u.Path != "/", u.RawQuery != "", u.Fragment != "":
		return fmt.Sprintf("%q must be only a scheme, a host and a port", ep)
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil || host == "" || port == "" {
		return fmt.Sprintf("%q must name a host and a port", ep)
	}
	return ""
}

// redactUser returns u without its password, for the message.
func redactUser(u *url.URL) string {
	c := *u
	c.User = url.User("redacted")
	return c.String()
}

// etcdPrefix checks store.etcd.prefix: 1 to MaxEtcdPrefixLen printable
// characters without spaces.
func etcdPrefix(p string) string {
	switch {
	case p == "":
		return "must not be empty"
	case len(p) > MaxEtcdPrefixLen:
		return fmt.Sprintf("at most %d bytes, got %d", MaxEtcdPrefixLen, len(p))
	case strings.ContainsFunc(p, func(r rune) bool { return !unicode.IsPrint(r) || unicode.IsSpace(r) }):
		return fmt.Sprintf("%q holds a space or a control character", p)
	}
	return ""
}

// etcdHealthTimeout checks store.etcd.health_timeout: positive and at most
// store.etcd.request_timeout (one attempt of a request cannot outlast the
// request).
func etcdHealthTimeout(d, request time.Duration) string {
	return rules.AtMost(d, request, fmt.Sprintf("store.etcd.request_timeout (%s)", request))
}

// NodeFromHost is the default of store.etcd.node: the host name h lower-
// cased, every character but a-z, 0-9, '.', '_' and '-' replaced by '-',
// without leading '.', '_' or '-', cut to 63 characters; "" when nothing
// is left.
func NodeFromHost(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case b.Len() == 0:
			// a name starts with a letter or a digit
		case r == '.' || r == '_' || r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
		if b.Len() == auditlog.MaxChainName {
			break
		}
	}
	return b.String()
}

// etcdNode checks store.etcd.node: a name an audit chain may have
// (store.CheckAuditChain).
func etcdNode(n string) string {
	switch {
	case n == "":
		return "required: this node's name (by default the host name, from which none could be made)"
	case len(n) > auditlog.MaxChainName:
		return fmt.Sprintf("at most %d characters, got %d", auditlog.MaxChainName, len(n))
	case auditlog.CheckChain(n) != nil:
		return fmt.Sprintf("%q: only a-z, 0-9, '.', '_' and '-', starting with a letter or a digit", n)
	}
	return ""
}

// boundedDuration checks 0 < d ≤ maxD.
func boundedDuration(d, maxD time.Duration) string {
	return rules.AtMost(d, maxD, maxD.String())
}
