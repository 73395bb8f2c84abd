package oauth

import (
	"net/http"
	"testing"
)

// TestSerializeOrigin: the origin of server.base_url and of an Origin
// header, serialized as RFC 6454 §6.2 does, so that equal origins compare
// equal as strings.
func TestSerializeOrigin(t *testing.T) {
	for _, tt := range []struct {
		raw, want string
		bare      bool // parsing an Origin header
	}{
		{"https://signd.example", "https://signd.example", true},
		{"https://signd.example:443", "https://signd.example", true},
		{"HTTPS://Signd.Example", "https://signd.example", true},
		{"http://127.0.0.1:8443", "http://127.0.0.1:8443", true},
		{"http://127.0.0.1:80", "http://127.0.0.1", true},
		{"https://[::1]:8443", "https://[::1]:8443", true},
		{"https://[::1]", "https://[::1]", true},
		{"https://[::1]:443", "https://[::1]", true},
		{"https://signd.example/signd/", "https://signd.example", false}, // base_url with a path
		{"https://signd.example/", "", true},                             // an Origin header has no path
		{"https://signd.example?x", "", true},
		{"https://signd.example#x", "", true},
		{"https://user@signd.example", "", true},
		{"https://signd.example:", "", true},
		{"ftp://signd.example", "", false},
		{"signd.example", "", false},
		{"null", "", true},
		{"", "", true},
		{"https://", "", true},
	} {
		got, err := serializeOrigin(tt.raw, tt.bare)
		if got != tt.want || (err == nil) != (tt.want != "") {
			t.Errorf("serializeOrigin(%q, %v) = %q, %v; want %q", tt.raw, tt.bare, got, err, tt.want)
		}
	}
}

// TestCrossSiteHeaderOnly: crossSite reads headers only and accepts what
// a same-origin browser or a non-browser client sends.
func TestCrossSiteHeaderOnly(t *testing.T) {
	s := &Server{origin: "https://signd.example"}
	for _, tt := range []struct {
		h    http.Header
		want bool // refused
	}{
		{http.Header{}, false},
		{http.Header{"Origin": {"https://signd.example"}, "Sec-Fetch-Site": {"same-origin"}}, false},
		{http.Header{"Sec-Fetch-Site": {"none"}}, false},
		{http.Header{"Origin": {"https://evil.example"}, "Sec-Fetch-Site": {"cross-site"}}, true},
		{http.Header{"Origin": {"null"}}, true},
		{http.Header{"Sec-Fetch-Site": {""}}, true},
	} {
		if got := s.CrossSite(tt.h) != ""; got != tt.want {
			t.Errorf("crossSite(%v) refused %v, want %v", tt.h, got, tt.want)
		}
	}
}
