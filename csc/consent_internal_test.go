package csc

import (
	"bytes"
	"crypto/x509/pkix"
	"strings"
	"testing"
)

// TestConsentFormats: the hash in groups of four named by its length, the
// holder by CN and organisation.
func TestConsentFormats(t *testing.T) {
	for _, tt := range []struct {
		n          int
		name, want string
	}{
		{32, "SHA-256", strings.TrimSpace(strings.Repeat("0101 ", 16))},
		{48, "SHA-384", strings.TrimSpace(strings.Repeat("0101 ", 24))},
		{64, "SHA-512", strings.TrimSpace(strings.Repeat("0101 ", 32))},
	} {
		d := bytes.Repeat([]byte{1}, tt.n)
		if got := hexGroups(d); got != tt.want {
			t.Errorf("hexGroups(%d bytes) = %q", tt.n, got)
		}
		if got := hashName(d); got != tt.name {
			t.Errorf("hashName(%d bytes) = %s, want %s", tt.n, got, tt.name)
		}
	}
	if got := hexGroups([]byte{0xab, 0xcd, 0xef}); got != "abcd ef" {
		t.Errorf("hexGroups of 3 bytes = %q", got)
	}
	for _, tt := range []struct {
		name pkix.Name
		want string
	}{
		{pkix.Name{CommonName: "Alice Jansen", Organization: []string{"Example BV"}, Country: []string{"NL"}}, "Alice Jansen, Example BV"},
		{pkix.Name{CommonName: "Alice Jansen"}, "Alice Jansen"},
		{pkix.Name{Organization: []string{"Example BV"}}, "Example BV"},
		{pkix.Name{Country: []string{"NL"}, SerialNumber: "123"}, "SERIALNUMBER=123,C=NL"},
	} {
		if got := holder(tt.name); got != tt.want {
			t.Errorf("holder(%v) = %q, want %q", tt.name, got, tt.want)
		}
	}
}
