package oauth_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/signd/signd/oauth/oauthtest"
)

// TestAuthorize checks every rule of /oauth2/authorize before the login
// page, one case per rule.
func TestAuthorize(t *testing.T) {
	ev := newEnv(t)
	const (
		wantPage  = "page"  // HTML error page, 400, no redirect
		wantLogin = "login" // the login page
	)
	svc := serviceParams()
	cred := credentialParams(credAlice)
	challenge := "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
	tests := []struct {
		name  string
		query string // raw query; used when set
		p     url.Values
		post  bool
		want  string // wantPage, wantLogin or an error code
		desc  string // substring of error_description
	}{
		{name: "unknown_client_shows_error_page", p: with(svc, "client_id", "nobody"), want: wantPage},
		{name: "missing_client_id_shows_error_page", p: with(svc, "client_id", ""), want: wantPage},
		{name: "duplicated_client_id_shows_error_page", query: svc.Encode() + "&client_id=rp", want: wantPage},
		{name: "redirect_uri_mismatch_shows_error_page", p: with(svc, "redirect_uri", "https://evil.example/cb"), want: wantPage},
		{name: "redirect_uri_prefix_shows_error_page", p: with(svc, "redirect_uri", "https://rp.example/c"), want: wantPage},
		{name: "redirect_uri_extra_path_shows_error_page", p: with(svc, "redirect_uri", rpRedirect+"/x"), want: wantPage},
		{name: "redirect_uri_appended_query_shows_error_page", p: with(svc, "redirect_uri", rpRedirect+"?a=b"), want: wantPage},
		{name: "redirect_uri_fragment_shows_error_page", p: with(svc, "redirect_uri", rpRedirect+"#f"), want: wantPage},
		{name: "redirect_uri_case_variant_shows_error_page", p: with(svc, "redirect_uri", "https://RP.example/cb"), want: wantPage},
		{name: "redirect_uri_of_another_client_shows_error_page", p: with(svc, "redirect_uri", "https://rp2.example/cb"), want: wantPage},
		{name: "missing_redirect_uri_shows_error_page", p: with(svc, "redirect_uri", ""), want: wantPage},
		{name: "duplicated_redirect_uri_shows_error_page", query: svc.Encode() + "&redirect_uri=" + url.QueryEscape(rpRedirect), want: wantPage},
		{name: "duplicated_parameter_is_invalid_request", query: svc.Encode() + "&scope=service", want: "invalid_request", desc: "duplicated"},
		{name: "missing_response_type_is_invalid_request", p: with(svc, "response_type", ""), want: "invalid_request", desc: "response_type"},
		{name: "response_type_token_is_unsupported_response_type", p: with(svc, "response_type", "token"), want: "unsupported_response_type"},
		{name: "missing_state_is_invalid_request", p: with(svc, "state", ""), want: "invalid_request", desc: "state"},
		{name: "state_of_256_bytes_is_invalid_request", p: with(svc, "state", strings.Repeat("s", 256)), want: "invalid_request", desc: "255"},
		{name: "state_of_255_bytes_is_accepted", p: with(svc, "state", strings.Repeat("s", 255)), want: wantLogin},
		{name: "missing_scope_is_invalid_scope", p: with(svc, "scope", ""), want: "invalid_scope"},
		{name: "unknown_scope_is_invalid_scope", p: with(svc, "scope", "admin"), want: "invalid_scope"},
		{name: "mixed_scopes_are_invalid_scope", p: with(svc, "scope", "service credential"), want: "invalid_scope"},
		{name: "service_with_another_scope_is_invalid_scope", p: with(svc, "scope", "service email"), want: "invalid_scope"},
		{name: "scope_not_registered_for_client_is_invalid_scope", p: with(cred, "client_id", "svconly"), want: "invalid_scope"},
		{name: "pkce_plain_is_refused", p: with(svc, "code_challenge", challenge, "code_challenge_method", "plain"), want: "invalid_request", desc: "S256"},
		{name: "pkce_challenge_without_method_is_refused", p: with(svc, "code_challenge", challenge), want: "invalid_request", desc: "S256"},
		{name: "pkce_method_without_challenge_is_refused", p: with(svc, "code_challenge_method", "S256"), want: "invalid_request"},
		{name: "pkce_malformed_challenge_is_refused", p: with(svc, "code_challenge", "short", "code_challenge_method", "S256"), want: "invalid_request"},
		{name: "require_pkce_client_without_pkce_is_refused", p: with(svc, "client_id", "pkce", "redirect_uri", "https://pkce.example/cb"), want: "invalid_request", desc: "PKCE"},
		{name: "require_pkce_client_with_pkce_is_accepted", p: with(svc, "client_id", "pkce", "redirect_uri", "https://pkce.example/cb", "code_challenge", challenge, "code_challenge_method", "S256"), want: wantLogin},
		{name: "numSignatures_2_is_invalid_request", p: with(cred, "numSignatures", "2"), want: "invalid_request", desc: "numSignatures"},
		{name: "hash_of_31_bytes_is_invalid_request", p: with(cred, "hash", b64url(testHash[:31])), want: "invalid_request", desc: "hash"},
		{name: "profile_parameter_missing_is_redirected", p: with(cred, "credentialID", ""), want: "invalid_request", desc: "credentialID"},
		{name: "unknown_parameters_are_ignored", p: with(svc, "foo", "bar", "display", "page"), want: wantLogin},
		{name: "empty_parameters_count_as_omitted", query: svc.Encode() + "&foo=&code_challenge=", want: wantLogin},
		{name: "post_form_is_accepted", p: svc, post: true, want: wantLogin},
		{name: "credential_request_is_accepted", p: cred, want: wantLogin},
		{name: "registered_uri_with_query_is_accepted", p: with(svc, "redirect_uri", "https://rp.example/other?x=1"), want: wantLogin},
		// Two problems at once: the first in the order of the checks is
		// the one answered, and nothing is redirected before the client
		// and its redirect URI stand (RFC 6749 §4.1.2.1).
		{name: "order_redirect_uri_before_response_type", p: with(svc, "redirect_uri", "https://evil.example/cb", "response_type", "token"), want: wantPage},
		{name: "order_redirect_uri_before_scope", p: with(svc, "redirect_uri", "https://evil.example/cb", "scope", "admin"), want: wantPage},
		{name: "order_duplicated_before_response_type", query: with(svc, "response_type", "").Encode() + "&scope=service", want: "invalid_request", desc: "Parameter scope is duplicated"},
		{name: "order_response_type_before_state", p: with(svc, "response_type", "", "state", ""), want: "invalid_request", desc: "Missing parameter response_type"},
		{name: "order_unsupported_response_type_before_state", p: with(svc, "response_type", "token", "state", ""), want: "unsupported_response_type"},
		{name: "order_state_before_scope", p: with(svc, "state", "", "scope", "admin"), want: "invalid_request", desc: "Missing parameter state"},
		{name: "order_long_state_before_scope", p: with(svc, "state", strings.Repeat("s", 256), "scope", "admin"), want: "invalid_request", desc: "longer than 255"},
		{name: "order_scope_before_pkce", p: with(svc, "scope", "admin", "code_challenge_method", "S256"), want: "invalid_scope"},
		{name: "order_pkce_before_nonce", p: with(svc, "code_challenge_method", "S256", "nonce", strings.Repeat("n", 513)), want: "invalid_request", desc: "code_challenge_method without code_challenge"},
		{name: "order_nonce_before_profile_parameters", p: with(cred, "nonce", strings.Repeat("n", 513), "credentialID", ""), want: "invalid_request", desc: "nonce is longer than 512"},
		{name: "order_profile_parameters_before_client_scopes", p: with(cred, "client_id", "svconly", "credentialID", ""), want: "invalid_request", desc: "credentialID"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := ev.browser()
			var s *oauthtest.Step
			var err error
			switch {
			case tt.post:
				s, err = b.PostForm(ev.ts.URL+"/oauth2/authorize", tt.p)
			case tt.query != "":
				s, err = b.Get(ev.ts.URL + "/oauth2/authorize?" + tt.query)
			default:
				s, err = b.Get(ev.authorizeURL(tt.p))
			}
			if err != nil {
				t.Fatal(err)
			}
			switch tt.want {
			case wantPage:
				if s.Redirected() || s.Status != http.StatusBadRequest || !strings.HasPrefix(s.Header.Get("Content-Type"), "text/html") {
					t.Fatalf("want the HTML error page, got %d %v %s", s.Status, s.Location, s.Header.Get("Content-Type"))
				}
				if !strings.Contains(s.Body, "Dit verzoek kan niet worden verwerkt") {
					t.Errorf("error page text: %s", oauthtest.Text(s.Body))
				}
			case wantLogin:
				page(t, s)
				if !s.Form.Has("password") {
					t.Fatalf("want the login page: %.300s", s.Body)
				}
			default:
				code, desc := errorOf(t, s)
				if code != tt.want || !strings.Contains(desc, tt.desc) {
					t.Errorf("error %s %q, want %s containing %q", code, desc, tt.want, tt.desc)
				}
				q := s.Query()
				if q.Get("iss") != "https://signd.example" {
					t.Errorf("iss %q", q.Get("iss"))
				}
				wantState := ""
				if st := tt.p.Get("state"); len(st) <= 255 && tt.query == "" {
					wantState = st
				}
				if tt.query != "" {
					wantState = "state-123"
				}
				if q.Get("state") != wantState {
					t.Errorf("state %q, want %q", q.Get("state"), wantState)
				}
				if tt.post && s.Status != http.StatusSeeOther || !tt.post && s.Status != http.StatusFound {
					t.Errorf("redirect status %d", s.Status)
				}
				if !strings.HasPrefix(s.Location.String(), tt.p.Get("redirect_uri")+"?") && tt.query == "" {
					t.Errorf("redirected to %s", s.Location)
				}
				for _, c := range desc {
					if c > 0x7e || c < 0x20 || c == '"' || c == '\\' {
						t.Errorf("error_description %q has %q", desc, c)
					}
				}
			}
		})
	}
}

// TestErrorRedirectKeepsQuery: a registered redirect URI with a query keeps
// it, and the error parameters are added.
func TestErrorRedirectKeepsQuery(t *testing.T) {
	ev := newEnv(t)
	s := ev.must(ev.browser().Get(ev.authorizeURL(with(serviceParams(), "redirect_uri", "https://rp.example/other?x=1", "response_type", "token"))))
	q := s.Query()
	if q.Get("x") != "1" || q.Get("error") != "unsupported_response_type" {
		t.Errorf("redirect %s", s.Location)
	}
}
