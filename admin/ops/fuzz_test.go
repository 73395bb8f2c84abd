package ops

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/signd/signd/admin/input"
	"github.com/signd/signd/oidc"
	"github.com/signd/signd/store"
)

// FuzzValidateClaims checks identity attributes as `signd user add
// --claims` and the admin API take them. Accepted attributes are known
// keys with printable values of 1–256 bytes (dates as YYYY-MM-DD), pass
// the store's own validation of a user, and are what /userinfo releases
// for the scopes that cover them.
func FuzzValidateClaims(f *testing.F) {
	for _, s := range []string{
		`{"given_name":"Alice","last_name":"Jansen","birthdate":"1990-02-03","birthplace":"Utrecht","nationality":"NL",` +
			`"document_type":"passport","id_number":"NXC8R1234","nl_brp_voornaam":"Alice","nl_brp_voorvoegsel":"van",` +
			`"nl_brp_geslachtsnaam":"van Dam","nl_brp_geslachtsnaam_zonder_voorvoegsel":"Dam",` +
			`"id_document_issuance_date":"2020-12-01","id_document_issuance_place":"Utrecht"}`,
		`{"shoe":"42"}`, `{"given_name":""}`, `{"given_name":"a\nb"}`, `{"birthdate":"1990-02-31"}`,
		`{"birthdate":"03-02-1990"}`, `{"com.vendor.last_name":"J"}`, `{"given_name":"\u00e9l\u00e8ve"}`,
	} {
		f.Add([]byte(s))
	}
	claims := oidc.Claims{Namespace: "com.vendor"}
	scopes := []string{claims.ScopePersonalInfo(), claims.ScopeIDNumber()}
	f.Fuzz(func(t *testing.T, data []byte) {
		var m map[string]string
		if json.Unmarshal(data, &m) != nil {
			return
		}
		err := CheckClaims(m)
		if err != nil {
			if KindOf(err) != KindInvalid || err.Error() == "" {
				t.Fatalf("%s: %v (kind %s)", data, err, KindOf(err))
			}
			return
		}
		u := &store.User{ID: "u1", Username: "alice", Status: store.UserActive, Claims: m}
		if err := u.Validate(); err != nil {
			t.Fatalf("%s: accepted, but the store refuses the user: %v", data, err)
		}
		released := claims.Identity(u, nil, scopes)
		if len(released) != len(m) {
			t.Fatalf("%s: %d attributes accepted, /userinfo releases %d: %v", data, len(m), len(released), released)
		}
		for k, v := range m {
			if !slices.Contains(ClaimKeys(), k) || len(v) == 0 || len(v) > input.MaxClaimLen {
				t.Fatalf("%s: %q = %q accepted", data, k, v)
			}
			name := claims.Namespace + "." + k
			if k == "given_name" || k == "birthdate" {
				name = k
			}
			if k == "document_type" {
				name = claims.Namespace + ".document.type"
			}
			if released[name] != v {
				t.Fatalf("%s: %q = %q released as %v", data, k, v, released[name])
			}
		}
	})
}
