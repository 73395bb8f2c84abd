package main

import (
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/signd/signd/cmd/signd/httpserver"
	"github.com/signd/signd/config"
	"github.com/signd/signd/internal/logtest"
)

// loggedRemoteIPs returns the remote_ip of every request log line.
func loggedRemoteIPs(t *testing.T, logs string) []string {
	t.Helper()
	var ips []string
	for _, l := range logtest.Messages(t, logs, "request") {
		ip, _ := l["remote_ip"].(string)
		ips = append(ips, ip)
	}
	return ips
}

func nets(t *testing.T, entries ...string) []*net.IPNet {
	t.Helper()
	s := config.ServerConfig{TrustedProxies: entries}
	out := s.TrustedProxyNets()
	if len(out) != len(entries) {
		t.Fatalf("bad test proxies %v", entries)
	}
	return out
}

// TestRemoteIPTrustsOnlyConfiguredProxies sends requests over real TCP
// from 127.0.0.1 with forwarding headers: they name the client only when
// 127.0.0.1 is a configured trusted proxy. A client can never put an
// address of its choice into the request log by sending a header.
func TestRemoteIPTrustsOnlyConfiguredProxies(t *testing.T) {
	const peer = "127.0.0.1"
	rows := []struct {
		name    string
		trusted []string
		header  map[string]string
		want    string
		via     string // server.client_ip_header; "" = X-Forwarded-For
	}{
		{"no proxies, spoofed X-Forwarded-For", nil, map[string]string{"X-Forwarded-For": "203.0.113.9"}, peer, ""},
		{"no proxies, spoofed X-Real-IP", nil, map[string]string{"X-Real-IP": "203.0.113.9"}, peer, ""},
		{"no proxies, forged log text", nil, map[string]string{"X-Forwarded-For": `evil", "user":"admin`}, peer, ""},
		{"peer is not a trusted proxy (loopback not trusted by default)", []string{"10.0.0.0/8"}, map[string]string{"X-Forwarded-For": "203.0.113.9"}, peer, ""},
		{"peer is not a trusted proxy, X-Real-IP", []string{"10.0.0.0/8", "::1"}, map[string]string{"X-Real-IP": "203.0.113.9"}, peer, ""},
		{"trusted proxy forwards the client", []string{"127.0.0.1"}, map[string]string{"X-Forwarded-For": "203.0.113.9"}, "203.0.113.9", ""},
		{"trusted proxy as a /8", []string{"127.0.0.0/8"}, map[string]string{"X-Forwarded-For": "203.0.113.9"}, "203.0.113.9", ""},
		{"client-written left part ignored", []string{"127.0.0.1"}, map[string]string{"X-Forwarded-For": "198.51.100.1, 203.0.113.9"}, "203.0.113.9", ""},
		{"two trusted hops", []string{"127.0.0.1", "10.0.0.0/8"}, map[string]string{"X-Forwarded-For": "198.51.100.1, 203.0.113.9, 10.1.2.3"}, "203.0.113.9", ""},
		{"private hop not trusted unless configured", []string{"127.0.0.1"}, map[string]string{"X-Forwarded-For": "203.0.113.9, 192.168.1.5"}, "192.168.1.5", ""},
		{"trusted proxy, X-Real-IP only", []string{"127.0.0.1"}, map[string]string{"X-Real-IP": "203.0.113.9"}, "203.0.113.9", config.HeaderXRealIP},
		{"trusted proxy, both headers: X-Forwarded-For wins", []string{"127.0.0.1"}, map[string]string{"X-Forwarded-For": "203.0.113.9", "X-Real-IP": "198.51.100.1"}, "203.0.113.9", ""},
		// With the default header, a proxy that sets only X-Real-IP is not
		// believed: the address is the proxy's, never the client's choice.
		{"X-Forwarded-For proxies, X-Real-IP ignored", []string{"127.0.0.1"}, map[string]string{"X-Real-IP": "203.0.113.9"}, peer, ""},
		// A proxy that sets X-Real-IP and passes the client's
		// X-Forwarded-For through (nginx's default): the client's header
		// does not pick its address.
		{"X-Real-IP proxies, the client's X-Forwarded-For ignored", []string{"127.0.0.1"}, map[string]string{"X-Forwarded-For": "198.51.100.66", "X-Real-IP": "203.0.113.9"}, "203.0.113.9", config.HeaderXRealIP},
		{"X-Real-IP proxies, X-Forwarded-For alone", []string{"127.0.0.1"}, map[string]string{"X-Forwarded-For": "198.51.100.66"}, peer, config.HeaderXRealIP},
		{"trusted proxy, unparsable X-Forwarded-For", []string{"127.0.0.1"}, map[string]string{"X-Forwarded-For": "not-an-ip"}, peer, ""},
		{"trusted proxy, no header", []string{"127.0.0.1"}, nil, peer, ""},
	}
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			logs := &syncBuffer{}
			var trusted []*net.IPNet
			if tc.trusted != nil {
				trusted = nets(t, tc.trusted...)
			}
			s := &httpserver.Server{Logger: slog.New(slog.NewJSONHandler(logs, nil)), BodyLimit: 1 << 20, TrustedProxies: trusted, ClientIPHeader: tc.via}
			srv := httptest.NewServer(s.Echo())
			defer srv.Close()
			req, _ := http.NewRequest(http.MethodGet, srv.URL+"/healthz", nil)
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			res, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if got := loggedRemoteIPs(t, logs.String()); len(got) != 1 || got[0] != tc.want {
				t.Errorf("logged remote_ip %q, want %q", got, tc.want)
			}
		})
	}
}

// TestRemoteIPFromConfig: signd serve takes server.trusted_proxies from the
// configuration (none by default).
func TestRemoteIPFromConfig(t *testing.T) {
	for _, tc := range []struct {
		name, trusted, want string
	}{
		{"default: none", "", "127.0.0.1"},
		{"loopback proxy", "  trusted_proxies: [192.0.2.0/24, 127.0.0.1]\n", "203.0.113.9"},
		// The proxy names clients in X-Real-IP (none sent here): the
		// X-Forwarded-For the client wrote is not believed.
		{"loopback proxy writing X-Real-IP", "  trusted_proxies: [127.0.0.1]\n  client_ip_header: X-Real-IP\n", "127.0.0.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, "")
			e.setConfig("  listen: 127.0.0.1:0\n", "  listen: 127.0.0.1:0\n"+tc.trusted)
			addr, logs := e.daemon()
			req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/healthz", nil)
			req.Header.Set("X-Forwarded-For", "198.51.100.1, 203.0.113.9")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			var got []string
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				var lines []string
				for _, l := range strings.Split(logs.String(), "\n") {
					if strings.Contains(l, `"msg":"request"`) {
						lines = append(lines, l)
					}
				}
				if got = loggedRemoteIPs(t, strings.Join(lines, "\n")); len(got) > 0 {
					break
				}
			}
			if len(got) != 1 || got[0] != tc.want {
				t.Errorf("logged remote_ip %q, want %q", got, tc.want)
			}
		})
	}
}
