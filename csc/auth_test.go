package csc_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/signd/signd/csc"
	"github.com/signd/signd/oauth/authlogin"
)

// fakeLogin is a csc.PasswordLogin that accepts alice with "pw" and the
// refresh token "rt-1", and records what it was asked.
type fakeLogin struct {
	mu    sync.Mutex
	calls []string
}

func (f *fakeLogin) record(s string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, s)
}

func (f *fakeLogin) Login(_ context.Context, user, password string, rememberMe bool) (*authlogin.Tokens, error) {
	f.record(fmt.Sprintf("login %s %v", user, rememberMe))
	switch {
	case user != "alice" || password != "pw":
		return nil, authlogin.ErrLoginFailed
	case rememberMe:
		return &authlogin.Tokens{AccessToken: "at", RefreshToken: "rt", ExpiresIn: 3600}, nil
	}
	return &authlogin.Tokens{AccessToken: "at", ExpiresIn: 3600}, nil
}

func (f *fakeLogin) Refresh(_ context.Context, token string) (*authlogin.Tokens, error) {
	f.record("refresh " + token)
	if token != "rt-1" {
		return nil, authlogin.ErrRefreshInvalid
	}
	return &authlogin.Tokens{AccessToken: "at-2", RefreshToken: "rt-2", ExpiresIn: 3600}, nil
}

func withLogin(l csc.PasswordLogin) envOption { return func(h *csc.Handler) { h.Login = l } }

// TestAuthLoginHandler: auth/login maps HTTP Basic or refresh_token onto
// the PasswordLogin and its refusals onto CSC errors; info lists it and
// authType basic only when it is mounted.
func TestAuthLoginHandler(t *testing.T) {
	fl := &fakeLogin{}
	e := newEnv(t, withLogin(fl))
	basic := func(u, p string) string { return "Basic " + base64.StdEncoding.EncodeToString([]byte(u+":"+p)) }
	login := func(auth, body string) response {
		return e.do(http.MethodPost, "auth/login", body, map[string]string{"Authorization": auth, "Content-Type": "application/json"})
	}

	r := e.call("info", "", "{}")
	if fmt.Sprint(r.body["methods"]) != "[info credentials/list credentials/info credentials/extendTransaction credentials/sendOTP signatures/signHash auth/login]" ||
		fmt.Sprint(r.body["authType"]) != "[basic oauth2code]" {
		t.Errorf("info with a login: %v", r.body)
	}

	r = login(basic("alice", "pw"), `{"rememberMe":true}`)
	if r.status != 200 || r.str("access_token") != "at" || r.str("refresh_token") != "rt" || r.body["expires_in"] != float64(3600) ||
		r.header.Get("Cache-Control") != "no-store" {
		t.Errorf("login: %d %v %v", r.status, r.header, r.body)
	}
	r = login(basic("alice", "pw"), "")
	if _, ok := r.body["refresh_token"]; r.status != 200 || ok {
		t.Errorf("login without rememberMe: %d %v", r.status, r.body)
	}
	r = login("", `{"refresh_token":"rt-1"}`)
	if r.status != 200 || r.str("access_token") != "at-2" || r.str("refresh_token") != "rt-2" {
		t.Errorf("refresh: %d %v", r.status, r.body)
	}
	wantError(t, login("", `{"refresh_token":"rt-0"}`), 400, "invalid_request", "Invalid parameter refresh_token")
	wantError(t, login(basic("alice", "nope"), ""), 401, "authentication_error", "Invalid username or password")
	wantError(t, login(basic("alice:x", ""), ""), 401, "authentication_error", "Invalid username or password")
	if r := login(basic("alice", "nope"), ""); r.header.Get("WWW-Authenticate") != `Basic realm="https://sign.example.com", charset="UTF-8"` {
		t.Errorf("WWW-Authenticate %q", r.header.Get("WWW-Authenticate"))
	}
	n := len(fl.calls)
	for _, tc := range []struct {
		name, auth, body string
		status           int
		desc             string
	}{
		{"both", basic("alice", "pw"), `{"refresh_token":"rt-1"}`, 400, "Send either HTTP Basic credentials or refresh_token, not both"},
		{"malformed", "Basic %%%", "", 400, "Malformed HTTP Basic credentials"},
		{"digest", `Digest username="alice"`, "", 400, "Malformed HTTP Basic credentials"},
		{"rememberMe type", basic("alice", "pw"), `{"rememberMe":1}`, 400, "Missing (or invalid type) boolean parameter rememberMe"},
		{"refresh type", "", `{"refresh_token":[]}`, 400, "Missing (or invalid type) string parameter refresh_token"},
		{"not an object", basic("alice", "pw"), `[]`, 400, "The request body must be a JSON object"},
	} {
		r := login(tc.auth, tc.body)
		if r.status != tc.status || r.body["error_description"] != tc.desc {
			t.Errorf("%s: %d %v, want %d %q", tc.name, r.status, r.body, tc.status, tc.desc)
		}
	}
	if len(fl.calls) != n {
		t.Errorf("malformed requests reached the login: %v", fl.calls[n:])
	}
	if r := e.do(http.MethodGet, "auth/login", "", map[string]string{"Authorization": basic("alice", "pw")}); r.status != 405 {
		t.Errorf("GET auth/login: %d", r.status)
	}
}

// TestAuthLoginOffIs501: without a PasswordLogin the method is not
// offered.
func TestAuthLoginOffIs501(t *testing.T) {
	e := newEnv(t)
	wantError(t, e.call("auth/login", "", "{}"), 501, "not_implemented", "Method auth/login is not implemented by this service (see info methods)")
	wantError(t, e.call("auth/revoke", "", "{}"), 501, "not_implemented", "Method auth/revoke is not implemented by this service (see info methods)")
}
