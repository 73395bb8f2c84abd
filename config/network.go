package config

import (
	"fmt"
	"net"
	"net/netip"
	"strings"

	"github.com/signd/signd/config/rules"
)

// The network keys of server.*: the metrics listener and the reverse
// proxies whose forwarding headers are believed.

// metricsListen checks server.metrics_listen: empty (no metrics listener)
// or host:port, not on the port server.listen already uses on an
// overlapping address.
func metricsListen(addr, listen string) string {
	if addr == "" {
		return ""
	}
	if msg := rules.HostPort(addr); msg != "" {
		return msg + "; empty turns the metrics listener off"
	}
	if portConflict(addr, listen) {
		return fmt.Sprintf("%q uses the port of server.listen (%s); give the metrics listener a port of its own", addr, listen)
	}
	return ""
}

// portConflict reports whether two host:port listen addresses would
// compete for the same socket: the same port (0 means any free port, never
// a conflict) on the same host, on a wildcard host (all interfaces) or on
// two loopback hosts.
func portConflict(a, b string) bool {
	ha, pa, err1 := net.SplitHostPort(a)
	hb, pb, err2 := net.SplitHostPort(b)
	if err1 != nil || err2 != nil || pa != pb || pa == "0" {
		return false
	}
	wildcard := func(h string) bool { return h == "" || h == "0.0.0.0" || h == "::" }
	return strings.EqualFold(ha, hb) || wildcard(ha) || wildcard(hb) || rules.IsLoopback(ha) && rules.IsLoopback(hb)
}

// ParseTrustedProxy parses one server.trusted_proxies entry: a CIDR in
// canonical form (10.0.0.0/8, fd00::/8), or a bare IP address, which stands
// for itself alone (/32 for IPv4, /128 for IPv6). IPv4 is written as IPv4,
// not as an IPv4-mapped IPv6 address; zones are refused.
func ParseTrustedProxy(s string) (netip.Prefix, error) {
	var p netip.Prefix
	if strings.Contains(s, "/") {
		var err error
		if p, err = netip.ParsePrefix(s); err != nil {
			return p, fmt.Errorf("%q is not a CIDR (such as 10.0.0.0/8) or an IP address", s)
		}
		if m := p.Masked(); m != p {
			return p, fmt.Errorf("%q has bits set past the prefix length (did you mean %s?)", s, m)
		}
	} else {
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" {
			return p, fmt.Errorf("%q is not a CIDR (such as 10.0.0.0/8) or an IP address", s)
		}
		p = netip.PrefixFrom(a, a.BitLen())
	}
	if p.Addr().Is4In6() {
		return p, fmt.Errorf("%q is an IPv4-mapped IPv6 address; write the IPv4 form", s)
	}
	return p, nil
}

// TrustedProxyNets returns server.trusted_proxies as networks (Validate has
// refused malformed entries; any left are skipped).
func (s *ServerConfig) TrustedProxyNets() []*net.IPNet {
	var out []*net.IPNet
	for _, entry := range s.TrustedProxies {
		p, err := ParseTrustedProxy(entry)
		if err != nil {
			continue
		}
		out = append(out, &net.IPNet{IP: net.IP(p.Addr().AsSlice()), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())})
	}
	return out
}

// trustedProxies checks every entry and names each bad one.
func trustedProxies(entries []string) string {
	var bad []string
	for i, entry := range entries {
		if _, err := ParseTrustedProxy(entry); err != nil {
			bad = append(bad, fmt.Sprintf("entry %d: %v", i+1, err))
		}
	}
	return strings.Join(bad, "; ")
}

// clientIPHeader checks server.client_ip_header: one of the two headers,
// written as here (empty, in a Config built without Load, is the
// default).
func clientIPHeader(h string) string {
	if h == "" {
		return ""
	}
	return rules.OneOf(h, HeaderXForwardedFor, HeaderXRealIP)
}
