package oauth_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/signd/signd/store"
	"github.com/signd/signd/store/storetest"
)

func tokenForm(code string, kv ...string) url.Values {
	return with(url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {rpRedirect}}, kv...)
}

// TestToken checks every rule of /oauth2/token, one case per rule.
func TestToken(t *testing.T) {
	pkce := func(ev *env) (code, verifier string) {
		verifier = oauth2.GenerateVerifier()
		code, _ = ev.serviceCode(with(serviceParams(), "code_challenge", oauth2.S256ChallengeFromVerifier(verifier), "code_challenge_method", "S256"))
		return code, verifier
	}
	svc := func(ev *env) string { c, _ := ev.serviceCode(serviceParams()); return c }
	tests := []struct {
		name   string
		do     func(t *testing.T, ev *env) (*http.Response, map[string]any)
		status int
		code   string // error code; "" = success
		basic  bool   // WWW-Authenticate: Basic expected
	}{
		{name: "client_secret_basic_is_accepted", status: 200, do: func(t *testing.T, ev *env) (*http.Response, map[string]any) {
			return ev.tokenRequest(tokenForm(svc(ev)), "rp", rpSecret)
		}},
		{name: "client_secret_post_is_accepted", status: 200, do: func(t *testing.T, ev *env) (*http.Response, map[string]any) {
			return ev.tokenRequest(tokenForm(svc(ev), "client_id", "rp", "client_secret", rpSecret), "", "")
		}},
		{name: "basic_and_post_naming_the_same_client_and_secret_is_accepted", status: 200, do: func(t *testing.T, ev *env) (*http.Response, map[string]any) {
			return ev.tokenRequest(tokenForm(svc(ev), "client_id", "rp", "client_secret", rpSecret), "rp", rpSecret)
		}},
		{name: "basic_and_post_disagreeing_is_invalid_client", status: 401, code: "invalid_client", basic: true, do: func(t *testing.T, ev *env) (*http.Response, map[string]any) {
			return ev.tokenRequest(tokenForm(svc(ev), "client_id", "rp", "client_secret", rp2Secret), "rp", rpSecret)
		}},
		{name: "body_client_id_of_another_client_is_invalid_client", status: 401, code: "invalid_client", basic: true, do: func(t *testing.T, ev *env) (*http.Response, map[string]any) {
			return ev.tokenRequest(tokenForm(svc(ev), "client_id", "rp2"), "rp", rpSecret)
		}},
		{name: "wrong_secret_via_basic_is_invalid_client", status: 401, code: "invalid_client", basic: true, do: func(t *testing.T, ev *env) (*http.Response, map[string]any) {
			return ev.tokenRequest(tokenForm(svc(ev)), "rp", rp2Secret)
		}},
		{name: "wrong_secret_via_post_is_invalid_client", status: 401, code: "invalid_client", do: func(t *testing.T, ev *env) (*http.Response, map[string]any) {
			return ev.tokenRequest(tokenForm(svc(ev), "client_id", "rp", "client_secret", "wrong"), "", "")
		}},
		{name: "unknown_client_is_invalid_client", status: 401, code: "invalid_client", basic: true, do: func(t *testing.T, ev *env) (*http.Response, map[string]any) {
			return ev.tokenRequest(tokenForm(svc(ev)), "nobody", rpSecret)
		}},
		{name: "no_client_authentication_is_invalid_client", status: 401, code: "invalid_client", do: func(t *testing.T, ev *env) (*http.Response, map[string]any) {
			return ev.tokenRequest(tokenForm(svc(ev), "client_id", "rp"), "", "")
		}},
		{name: "malformed_basic_is_invalid_client", status: 401, code: "invalid_client", basic: true, do: func(t *testing.T, ev *env) (*http.Response, map[string]any) {
			return ev.rawToken(tokenForm(svc(ev)), "Basic !!!notbase64")
		}},
		{name: "basic_secret_is_form_urlencoded", status: 401, code: "invalid_client", basic: true, do: func(t *testing.T, ev *env) (*http.Response, map[string]any) {
			// %zz is not valid form-urlencoding.
			return ev.rawToken(tokenForm(svc(ev)), "Basic "+b64std("rp:%zz"))
		}},
		{name: "missing_grant_type_is_invalid_request", status: 400, code: "invalid_request", do: func(t *testing.T, ev *env) (*http.Response, map[string]any) {
			return ev.tokenRequest(tokenForm(svc(ev), "grant_type", ""), "rp", rpSecret)
		}},
		{name: "client_credentials_is_unsupported_grant_type", status: 400, code: "unsupported_grant_type", do: func(t *testing.T, ev *env) (*http.Response, map[string]any) {
			return ev.tokenRequest(url.Values{"grant_type": {"client_credentials"}}, "rp", rpSecret)
		}},
		{name: "missing_code_is_invalid_request", status: 400, code: "invalid_request", do: func(t *testing.T, ev *env) (*http.Response, map[string]any) {
			return ev.tokenRequest(tokenForm(""), "rp", rpSecret)
		}},
		{name: "duplicated_parameter_is_invalid_request", status: 400, code: "invalid_request", do: func(t *testing.T, ev *env) (*http.Response, map[string]any) {
			f := tokenForm(svc(ev))
			f.Add("code", "again")
			return ev.tokenRequest(f, "rp", rpSecret)
		}},
		{name: "json_body_is_invalid_request", status: 400, code: "invalid_request", do: func(t *testing.T, ev *env) (*http.Response, map[string]any) {
			return ev.rawRequest("/oauth2/token", "application/json", `{"grant_type":"authorization_code"}`, "")
		}},
		{name: "unknown_code_is_invalid_grant", status: 400, code: "invalid_grant", do: func(t *testing.T, ev *env) (*http.Response, map[string]any) {
			return ev.tokenRequest(tokenForm("no-such-code"), "rp", rpSecret)
		}},
		{name: "expired_code_is_invalid_grant", status: 400, code: "invalid_grant", do: func(t *testing.T, ev *env) (*http.Response, map[string]any) {
			code := svc(ev)
			ev.clock.Advance(61 * time.Second)
			return ev.tokenRequest(tokenForm(code), "rp", rpSecret)
		}},
		{name: "code_of_another_client_is_invalid_grant", status: 400, code: "invalid_grant", do: func(t *testing.T, ev *env) (*http.Response, map[string]any) {
			code := svc(ev)
			resp, body := ev.tokenRequest(tokenForm(code, "redirect_uri", "https://rp2.example/cb"), "rp2", rp2Secret)
			// The attempt does not burn the code for its own client.
			if r2, b2 := ev.tokenRequest(tokenForm(code), "rp", rpSecret); r2.StatusCode != 200 {
				t.Errorf("own client after another's attempt: %d %v", r2.StatusCode, b2)
			}
			return resp, body
		}},
		{name: "used_code_of_another_client_revokes_nothing", status: 400, code: "invalid_grant", do: func(t *testing.T, ev *env) (*http.Response, map[string]any) {
			// A code is its client's before it is anything else: another
			// client holding it cannot make it count as reused and revoke
			// the tokens it issued.
			code := svc(ev)
			r1, b1 := ev.tokenRequest(tokenForm(code), "rp", rpSecret)
			if r1.StatusCode != 200 {
				t.Fatalf("first redemption: %d %v", r1.StatusCode, b1)
			}
			resp, body := ev.tokenRequest(tokenForm(code, "redirect_uri", "https://rp2.example/cb"), "rp2", rp2Secret)
			if d := body["error_description"]; d != "Authorization code is invalid or expired" {
				t.Errorf("error_description %q", d)
			}
			if st := bearerStatus(t, ev, "service", b1["access_token"].(string)); st != 200 {
				t.Errorf("the owner's token after another client showed its code: status %d, want 200", st)
			}
			return resp, body
		}},
		{name: "expired_code_with_another_redirect_uri_is_expired", status: 400, code: "invalid_grant", do: func(t *testing.T, ev *env) (*http.Response, map[string]any) {
			code := svc(ev)
			ev.clock.Advance(61 * time.Second)
			resp, body := ev.tokenRequest(tokenForm(code, "redirect_uri", "https://rp.example/other?x=1"), "rp", rpSecret)
			if d := body["error_description"]; d != "Authorization code is invalid or expired" {
				t.Errorf("error_description %q", d)
			}
			return resp, body
		}},
		{name: "redirect_uri_mismatch_before_pkce", status: 400, code: "invalid_grant", do: func(t *testing.T, ev *env) (*http.Response, map[string]any) {
			code, _ := pkce(ev)
			resp, body := ev.tokenRequest(tokenForm(code, "redirect_uri", "https://rp.example/other?x=1"), "rp", rpSecret)
			if d := body["error_description"]; d != "redirect_uri does not match the authorization request" {
				t.Errorf("error_description %q", d)
			}
			return resp, body
		}},
		{name: "wrong_verifier_before_disabled_user", status: 400, code: "invalid_grant", do: func(t *testing.T, ev *env) (*http.Response, map[string]any) {
			code, _ := pkce(ev)
			ev.update(func(tx store.Tx) error {
				u, _ := tx.User("alice")
				u.Status = store.UserDisabled
				return tx.PutUser(u)
			})
			resp, body := ev.tokenRequest(tokenForm(code, "code_verifier", oauth2.GenerateVerifier()), "rp", rpSecret)
			if d := body["error_description"]; d != "code_verifier does not match the code_challenge" {
				t.Errorf("error_description %q", d)
			}
			return resp, body
		}},
		{name: "redirect_uri_mismatch_at_token_is_invalid_grant", status: 400, code: "invalid_grant", do: func(t *testing.T, ev *env) (*http.Response, map[string]any) {
			return ev.tokenRequest(tokenForm(svc(ev), "redirect_uri", "https://rp.example/other?x=1"), "rp", rpSecret)
		}},
		{name: "missing_redirect_uri_at_token_is_invalid_grant", status: 400, code: "invalid_grant", do: func(t *testing.T, ev *env) (*http.Response, map[string]any) {
			return ev.tokenRequest(tokenForm(svc(ev), "redirect_uri", ""), "rp", rpSecret)
		}},
		{name: "code_reuse_is_invalid_grant_and_revokes_tokens", status: 400, code: "invalid_grant", do: func(t *testing.T, ev *env) (*http.Response, map[string]any) {
			code := svc(ev)
			r1, b1 := ev.tokenRequest(tokenForm(code), "rp", rpSecret)
			if r1.StatusCode != 200 {
				t.Fatalf("first redemption: %d %v", r1.StatusCode, b1)
			}
			tok := b1["access_token"].(string)
			if st := bearerStatus(t, ev, "service", tok); st != 200 {
				t.Fatalf("token before reuse: %d", st)
			}
			ev.clock.Advance(30 * time.Second)
			resp, body := ev.tokenRequest(tokenForm(code), "rp", rpSecret)
			if st := bearerStatus(t, ev, "service", tok); st != 401 {
				t.Errorf("token after code reuse: status %d, want 401", st)
			}
			// Still detected after the code's own lifetime: the
			// tombstone lives as long as the token did.
			ev.clock.Advance(10 * time.Minute)
			if _, err := ev.srv.Sweep(context.Background()); err != nil {
				t.Fatal(err)
			}
			if r3, b3 := ev.tokenRequest(tokenForm(code), "rp", rpSecret); r3.StatusCode != 400 || !strings.Contains(b3["error_description"].(string), "already used") {
				t.Errorf("reuse after 10 min: %d %v", r3.StatusCode, b3)
			}
			return resp, body
		}},
		{name: "pkce_right_verifier_is_accepted", status: 200, do: func(t *testing.T, ev *env) (*http.Response, map[string]any) {
			code, v := pkce(ev)
			return ev.tokenRequest(tokenForm(code, "code_verifier", v), "rp", rpSecret)
		}},
		{name: "pkce_wrong_verifier_is_invalid_grant", status: 400, code: "invalid_grant", do: func(t *testing.T, ev *env) (*http.Response, map[string]any) {
			code, _ := pkce(ev)
			return ev.tokenRequest(tokenForm(code, "code_verifier", oauth2.GenerateVerifier()), "rp", rpSecret)
		}},
		{name: "pkce_challenge_without_verifier_is_invalid_grant", status: 400, code: "invalid_grant", do: func(t *testing.T, ev *env) (*http.Response, map[string]any) {
			code, _ := pkce(ev)
			return ev.tokenRequest(tokenForm(code), "rp", rpSecret)
		}},
		{name: "pkce_verifier_without_challenge_is_invalid_grant", status: 400, code: "invalid_grant", do: func(t *testing.T, ev *env) (*http.Response, map[string]any) {
			return ev.tokenRequest(tokenForm(svc(ev), "code_verifier", oauth2.GenerateVerifier()), "rp", rpSecret)
		}},
		{name: "pkce_malformed_verifier_is_invalid_request", status: 400, code: "invalid_request", do: func(t *testing.T, ev *env) (*http.Response, map[string]any) {
			code, _ := pkce(ev)
			return ev.tokenRequest(tokenForm(code, "code_verifier", "short"), "rp", rpSecret)
		}},
		{name: "disabled_user_is_invalid_grant", status: 400, code: "invalid_grant", do: func(t *testing.T, ev *env) (*http.Response, map[string]any) {
			code := svc(ev)
			ev.update(func(tx store.Tx) error {
				u, _ := tx.User("alice")
				u.Status = store.UserDisabled
				return tx.PutUser(u)
			})
			return ev.tokenRequest(tokenForm(code), "rp", rpSecret)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := newEnv(t)
			resp, body := tt.do(t, ev)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d; body %v", resp.StatusCode, tt.status, body)
			}
			if resp.Header.Get("Cache-Control") != "no-store" || resp.Header.Get("Pragma") != "no-cache" {
				t.Errorf("headers Cache-Control %q Pragma %q", resp.Header.Get("Cache-Control"), resp.Header.Get("Pragma"))
			}
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Errorf("Content-Type %q", ct)
			}
			wa := resp.Header.Get("WWW-Authenticate")
			if tt.basic != (wa != "") || tt.basic && wa != `Basic realm="https://signd.example"` {
				t.Errorf("WWW-Authenticate %q (Basic expected: %v)", wa, tt.basic)
			}
			if tt.code == "" {
				if body["token_type"] != "Bearer" || body["access_token"] == nil || body["expires_in"] != float64(3600) {
					t.Errorf("body %v", body)
				}
				return
			}
			if body["error"] != tt.code {
				t.Errorf("error %v, want %s (%v)", body["error"], tt.code, body["error_description"])
			}
			if _, ok := body["access_token"]; ok {
				t.Error("error response with a token")
			}
		})
	}
}

// TestParallelRedemption: of 20 parallel redemptions of one code exactly
// one gets a token; the others get invalid_grant (and, being reuses,
// revoke it).
func TestParallelRedemption(t *testing.T) {
	ev := newEnv(t)
	code, _ := ev.serviceCode(serviceParams())
	const n = 20
	statuses := make([]int, n)
	tokens := make([]string, n)
	storetest.AtOnce(n, func(i int) {
		resp, body := ev.tokenRequest(tokenForm(code), "rp", rpSecret)
		statuses[i] = resp.StatusCode
		if s, ok := body["access_token"].(string); ok {
			tokens[i] = s
		}
	})
	ok, bad, issued := 0, 0, 0
	for i := range n {
		switch statuses[i] {
		case 200:
			ok++
		case 400:
			bad++
		}
		if tokens[i] != "" {
			issued++
		}
	}
	if ok != 1 || bad != n-1 || issued != 1 {
		t.Fatalf("%d successes, %d invalid_grant, %d tokens; want 1, %d, 1 (%v)", ok, bad, issued, n-1, statuses)
	}
}

// TestRevoke: RFC 7009 for access tokens and SAD, with client
// authentication; other clients' and unknown tokens get 200 and stay.
func TestRevoke(t *testing.T) {
	ev := newEnv(t)
	code, _ := ev.serviceCode(serviceParams())
	_, body := ev.tokenRequest(tokenForm(code), "rp", rpSecret)
	access := body["access_token"].(string)
	_, body = ev.tokenRequest(tokenForm(ev.credentialCode(credentialParams(credAlice))), "rp", rpSecret)
	sad := body["access_token"].(string)

	revoke := func(token, id, secret string) *http.Response {
		resp, _ := ev.post("/oauth2/revoke", url.Values{"token": {token}}, id, secret)
		return resp
	}
	if r := revoke(access, "rp2", rp2Secret); r.StatusCode != 200 {
		t.Errorf("another client's token: %d", r.StatusCode)
	}
	if st := bearerStatus(t, ev, "service", access); st != 200 {
		t.Errorf("another client revoked the token: %d", st)
	}
	if r := revoke(access, "rp", "wrong"); r.StatusCode != 401 {
		t.Errorf("wrong secret: %d", r.StatusCode)
	}
	if r := revoke("unknown", "rp", rpSecret); r.StatusCode != 200 {
		t.Errorf("unknown token: %d", r.StatusCode)
	}
	if r := revoke(access, "rp", rpSecret); r.StatusCode != 200 || r.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("revoke: %d", r.StatusCode)
	}
	if st := bearerStatus(t, ev, "service", access); st != 401 {
		t.Errorf("revoked token: %d", st)
	}
	if r := revoke(sad, "rp", rpSecret); r.StatusCode != 200 {
		t.Errorf("revoke SAD: %d", r.StatusCode)
	}
	ev.update(func(tx store.Tx) error {
		if _, err := tx.Token(store.Fingerprint(sad)); err == nil {
			t.Error("SAD still stored")
		}
		return nil
	})
	if resp, body := ev.post("/oauth2/revoke", url.Values{}, "rp", rpSecret); resp.StatusCode != 400 || body["error"] != "invalid_request" {
		t.Errorf("no token: %d %v", resp.StatusCode, body)
	}
}

// TestSweep removes expired tokens, codes, requests and sessions.
func TestSweep(t *testing.T) {
	ev := newEnv(t)
	code, b := ev.serviceCode(serviceParams())
	ev.tokenRequest(tokenForm(code), "rp", rpSecret)
	ev.must(b.Get(ev.authorizeURL(serviceParams()))) // a pending request (SSO consent)
	ev.clock.Advance(24 * time.Hour)
	n, err := ev.srv.Sweep(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if n.Tokens != 1 || n.Codes != 1 || n.Requests != 1 || n.Sessions != 1 {
		t.Errorf("swept %+v", n)
	}
	stop := ev.srv.StartSweeper(time.Millisecond)
	time.Sleep(5 * time.Millisecond)
	stop()
}
