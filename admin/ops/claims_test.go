package ops

import (
	"strings"
	"testing"
)

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
			err := CheckClaims(tc.claims)
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
