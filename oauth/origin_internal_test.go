package oauth

import "testing"

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
		got, err := SerializeOrigin(tt.raw, tt.bare)
		if got != tt.want || (err == nil) != (tt.want != "") {
			t.Errorf("SerializeOrigin(%q, %v) = %q, %v; want %q", tt.raw, tt.bare, got, err, tt.want)
		}
	}
}
