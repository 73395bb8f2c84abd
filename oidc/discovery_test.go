package oidc_test

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// Item 1 of reference/oidc.md §8: discovery.
func TestItem01Discovery(t *testing.T) {
	f := newFixture(t)
	rec := f.do(http.MethodGet, "/.well-known/openid-configuration", "", "", nil)
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d", rec.Code)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type %q", ct)
	}
	var got map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"issuer":                                         testIssuer,
		"authorization_endpoint":                         testIssuer + "/oauth2/authorize",
		"token_endpoint":                                 testIssuer + "/oauth2/token",
		"userinfo_endpoint":                              testIssuer + "/userinfo",
		"jwks_uri":                                       testIssuer + "/.well-known/jwks.json",
		"revocation_endpoint":                            testIssuer + "/oauth2/revoke",
		"response_types_supported":                       []any{"code"},
		"response_modes_supported":                       []any{"query"},
		"grant_types_supported":                          []any{"authorization_code"},
		"subject_types_supported":                        []any{"pairwise"},
		"id_token_signing_alg_values_supported":          []any{"RS256"},
		"token_endpoint_auth_methods_supported":          []any{"client_secret_basic", "client_secret_post"},
		"revocation_endpoint_auth_methods_supported":     []any{"client_secret_basic", "client_secret_post"},
		"code_challenge_methods_supported":               []any{"S256"},
		"scopes_supported":                               []any{"openid", "email", "com.vendor.personal_info", "com.vendor.id_number", "com.vendor.proof"},
		"ui_locales_supported":                           []any{"nl", "en"},
		"display_values_supported":                       []any{"page"},
		"authorization_response_iss_parameter_supported": true,
		"claims_parameter_supported":                     false,
		"request_parameter_supported":                    false,
		"request_uri_parameter_supported":                false,
	}
	for k, v := range want {
		if !reflect.DeepEqual(got[k], v) {
			t.Errorf("%s = %#v, want %#v", k, got[k], v)
		}
	}
	claims, _ := got["claims_supported"].([]any)
	for _, c := range []string{
		"sub", "iss", "aud", "exp", "iat", "auth_time", "nonce", "at_hash", "rat",
		"email", "email_verified", "given_name", "birthdate",
		"com.vendor.last_name", "com.vendor.birthplace", "com.vendor.nationality", "com.vendor.document.type",
		"com.vendor.nl_brp_voornaam", "com.vendor.nl_brp_voorvoegsel", "com.vendor.nl_brp_geslachtsnaam",
		"com.vendor.nl_brp_geslachtsnaam_zonder_voorvoegsel", "com.vendor.id_document_issuance_date",
		"com.vendor.id_document_issuance_place", "com.vendor.id_number", "com.vendor.proof",
	} {
		found := false
		for _, x := range claims {
			found = found || x == c
		}
		if !found {
			t.Errorf("claims_supported lacks %s", c)
		}
	}
	if len(claims) != 25 {
		t.Errorf("claims_supported has %d entries, want 25: %v", len(claims), claims)
	}
	// Every endpoint is https under the issuer.
	for k, v := range got {
		if s, ok := v.(string); ok && strings.HasSuffix(k, "_endpoint") || k == "jwks_uri" {
			if !strings.HasPrefix(s, testIssuer+"/") {
				t.Errorf("%s = %q is not under the issuer", k, s)
			}
		}
	}
}

// The namespace of oidc.claim_namespace prefixes the namespaced scopes and
// claims.
func TestDiscoveryNamespace(t *testing.T) {
	f := newFixture(t)
	f.p.Claims.Namespace = "nl.example"
	md, err := f.p.Metadata(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"openid", "email", "nl.example.personal_info", "nl.example.id_number", "nl.example.proof"}; !reflect.DeepEqual(md.ScopesSupported, want) {
		t.Errorf("scopes_supported = %v", md.ScopesSupported)
	}
	for _, c := range md.ClaimsSupported {
		if strings.HasPrefix(c, "com.vendor") {
			t.Errorf("claim %s keeps the default namespace", c)
		}
	}
}
