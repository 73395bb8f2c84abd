package enroll

import (
	"strings"
	"testing"
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
		// RFC 4514 §3 hex escapes: a byte each.
		{"hex_escaped_utf8", `CN=Jos\C3\A9`, "CN=José", ""},
		{"hex_escaped_comma", `CN=a\2Cb`, `CN=a\,b`, ""},
		{"hex_escape_lower_case", `CN=Jos\c3\a9`, "CN=José", ""},
		{"hex_escaped_control", `CN=a\0Ab`, "", "control character"},
		{"hex_escaped_del", `CN=a\7Fb`, "", "control character"},
		{"hex_escape_not_utf8", `CN=a\FFb`, "", "not valid UTF-8"},
		{"hex_escape_half_a_character", `CN=Jos\C3`, "", "not valid UTF-8"},
		{"escape_of_a_letter", `CN=a\qb`, "", `"\q" is not an escape of RFC 4514`},
		{"escape_of_one_hex_digit", `CN=a\C`, "", `"\C" is not an escape of RFC 4514`},
		{"escaped_specials", `CN=\#1 \"q\" a\+b\;c\<d\>e\=f`, `CN=\#1 \"q\" a\+b\;c\<d\>e=f`, ""},
		{"bare_special", `CN=a>b`, "", `'>' must be escaped with a backslash`},
		{"bare_quote", `CN="quoted"`, "", `'"' must be escaped with a backslash`},
		{"hex_form_refused", "CN=#0c04416c6963", "", "#hex (BER) form is not supported"},
		{"hex_form_after_spaces_refused", "CN= #0c04416c6963", "", "#hex (BER) form is not supported"},
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
