package store_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/signd/signd/store"
)

func TestValidateUsername(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"alice", true},
		{"Alice.Smith_1@example-org", true},
		{strings.Repeat("a", 64), true},
		{"", false},
		{strings.Repeat("a", 65), false},
		{"../x", false},
		{"a b", false},
		{"a\x00", false},
		{"a+b", false},
		{"ü", false},
	} {
		err := store.ValidateUsername(tc.name)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, store.ErrInvalid)) {
			t.Errorf("ValidateUsername(%q) = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

func TestValidateRedirectURI(t *testing.T) {
	for _, tc := range []struct {
		uri string
		ok  bool
	}{
		{"https://rp.example.com/cb", true},
		{"https://rp.example.com:8443/cb?a=b", true},
		{"http://localhost:8080/callback", true},
		{"http://[::1]:8080/cb", true},
		{"com.example.app:/oauth2redirect", true},
		{"myapp://callback", true},
		{"", false},
		{"/cb", false},
		{"rp.example.com/cb", false},
		{"//rp.example.com/cb", false},
		{"https://rp.example.com/cb#x", false},
		{"https://rp.example.com/cb#", false},
		{"https:///cb", false},
		{"https://:443/cb", false},
		{"https://u:p@rp.example.com/cb", false},
		{"javascript:alert(1)", false},
		{"JavaScript:alert(1)", false},
		{"data:text/html,x", false},
		{"file:///etc/passwd", false},
		{"https://rp.example.com/a b", false},
		{"https://rp.example.com/\ncb", false},
		{"https://rp.example.com/ü", false},
		{"myapp:", false},
		{"https://rp.example.com/" + strings.Repeat("a", 1100), false},
	} {
		err := store.ValidateRedirectURI(tc.uri)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, store.ErrInvalid)) {
			t.Errorf("ValidateRedirectURI(%q) = %v, want ok=%v", tc.uri, err, tc.ok)
		}
	}
}

func TestAlgorithmKeyBits(t *testing.T) {
	for alg, bits := range map[string]int{
		store.AlgRSA2048: 2048, store.AlgRSA3072: 3072, store.AlgRSA4096: 4096,
		"rsa-1024": 0, "RSA-2048": 0, "ec-256": 0, "": 0,
	} {
		if got := store.AlgorithmKeyBits(alg); got != bits {
			t.Errorf("AlgorithmKeyBits(%q) = %d, want %d", alg, got, bits)
		}
	}
}
