package admin

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"strings"
	"testing"
	"time"
)

func TestParseDN(t *testing.T) {
	cases := []struct {
		name, in, want, err string
	}{
		{"simple", "CN=Alice", "CN=Alice", ""},
		{"several", "CN=Alice Jansen,O=Example B.V.,C=NL", "CN=Alice Jansen,O=Example B.V.,C=NL", ""},
		{"spaces_around", " CN = Alice , O = Ex ", "CN=Alice,O=Ex", ""},
		{"lower_case_types", "cn=Alice,o=Ex", "CN=Alice,O=Ex", ""},
		{"escaped_comma", `CN=Jansen\, Alice,O=Ex`, `CN=Jansen\, Alice,O=Ex`, ""},
		{"given_and_surname", "GIVENNAME=Alice,SURNAME=Jansen,CN=Alice Jansen", "2.5.4.4=#13064a616e73656e,2.5.4.42=#1305416c696365,CN=Alice Jansen", ""},
		{"empty", "", "", "empty distinguished name"},
		{"blank", "   ", "", "empty distinguished name"},
		{"no_equals", "Alice", "", "is not TYPE=value"},
		{"unknown_type", "CN=Alice,XX=1", "", `attribute type "XX" is not supported`},
		{"empty_value", "CN=", "", "empty value"},
		{"bad_country", "CN=A,C=Netherlands", "", "two-letter"},
		{"lower_country", "CN=A,C=nl", "", "two-letter"},
		{"country_not_letters", "CN=A,C=1!", "", "two-letter"},
		{"multi_valued", "CN=A+O=B", "", "multi-valued RDN"},
		{"lone_backslash", `CN=A\`, "", "lone backslash"},
		{"control_char", "CN=A\x00B", "", "control character"},
		{"oversized", "CN=" + strings.Repeat("a", 2000), "", "longer than"},
		// Found by FuzzParseDN:
		{"repeated_cn", "CN=a,CN=b", "", "CN is given twice"},
		{"repeated_serial", "SERIALNUMBER=1,CN=a,serialNumber=2", "", "SERIALNUMBER is given twice"},
		{"repeated_ou_kept", "CN=a,OU=x,OU=y", "CN=a,OU=x+OU=y", ""},
		{"invalid_utf8", "CN=Ali\xffce", "", "not valid UTF-8"},
		{"escaped_control_char", "CN=A\\\x01B", "", "control character"},
		{"escaped_leading_space", `CN=\ lead`, `CN=\ lead`, ""},
		{"escaped_trailing_space", `CN=trail\ `, `CN=trail\ `, ""},
		{"tab_is_not_a_space", "CN=\tAlice", "", "control character"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseDN(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s := got.String(); s != tc.want {
				t.Fatalf("got %q, want %q", s, tc.want)
			}
		})
	}
}

func TestEscapeDNValueRoundTrip(t *testing.T) {
	for _, v := range []string{"plain", "Jansen, Alice", `a+b="c"\d<e>;f`, "x=y", " lead", "trail ", "#hash", "  both  ", `\ `} {
		n, err := ParseDN("CN=" + escapeDNValue(v))
		if err != nil {
			t.Fatalf("%q: %v", v, err)
		}
		if n.CommonName != v {
			t.Fatalf("round trip of %q gave %q", v, n.CommonName)
		}
	}
}

func TestValidateClaims(t *testing.T) {
	cases := []struct {
		name   string
		claims map[string]string
		err    string
	}{
		{"none", nil, ""},
		{"all_known", map[string]string{"given_name": "A", "birthdate": "2000-01-31", "id_document_issuance_date": "2020-12-01"}, ""},
		{"unknown_key", map[string]string{"shoe": "42"}, `unknown key "shoe"`},
		{"namespaced_key_refused", map[string]string{"com.vendor.last_name": "J"}, "unknown key"},
		{"empty_value", map[string]string{"given_name": ""}, "must be 1-256"},
		{"oversized_value", map[string]string{"given_name": strings.Repeat("a", 257)}, "must be 1-256"},
		{"control_char", map[string]string{"given_name": "a\nb"}, "printable"},
		{"bad_date", map[string]string{"birthdate": "03-02-1990"}, "YYYY-MM-DD"},
		{"impossible_date", map[string]string{"birthdate": "1990-02-31"}, "YYYY-MM-DD"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := validateClaims(tc.claims)
			if tc.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) || KindOf(err) != KindInvalid {
				t.Fatalf("err = %v (kind %s), want invalid %q", err, KindOf(err), tc.err)
			}
		})
	}
}

// TestVerifyChainLoneSelfSigned: a chain of one self-signed certificate (a
// credential certified by itself) is its own root. verifyChain used to
// slice its intermediates as chain[1:0] and panicked (found by
// FuzzParseChainPEM); a lone certificate that is not self-signed is
// refused.
func TestVerifyChainLoneSelfSigned(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	self := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "self"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, self, self, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	if err := verifyChain([]*x509.Certificate{cert}, now); err != nil {
		t.Fatalf("lone self-signed certificate: %v", err)
	}
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leafTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "leaf"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour)}
	der, _ = x509.CreateCertificate(rand.Reader, leafTmpl, cert, other.Public(), key)
	leaf, _ := x509.ParseCertificate(der)
	if err := verifyChain([]*x509.Certificate{leaf}, now); err == nil || !strings.Contains(err.Error(), "not a self-signed root") {
		t.Fatalf("lone leaf: %v", err)
	}
}
