package oidc

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/hsm"
	"github.com/signd/signd/oauth"
	"github.com/signd/signd/store"
)

// TestDialect renders each kind of error the provider's routes return
// through the daemon's renderer in the provider's dialect.
func TestDialect(t *testing.T) {
	const (
		issuer   = "https://op.example"
		internal = "open /var/lib/signd/signd.db: permission denied"
	)
	p := &Provider{Issuer: issuer}
	revoked := `Bearer realm="` + issuer + `", error="invalid_token", error_description="The access token is invalid or revoked"`
	tests := []struct {
		name   string
		method string
		err    error
		status int
		header map[string]string
		body   string // "" = none
	}{
		{"no credentials", http.MethodGet, oauth.BearerError(issuer, "", "", 401), 401,
			map[string]string{"Www-Authenticate": `Bearer realm="` + issuer + `"`}, ""},
		{"invalid token", http.MethodGet, p.invalidToken("The access token is invalid or revoked"), 401,
			map[string]string{"Www-Authenticate": revoked}, `{"error":"invalid_token","error_description":"The access token is invalid or revoked"}`},
		{"expired token", http.MethodPost, oauth.BearerError(issuer, oauth.CodeExpiredToken, "The access token has expired", 401), 401,
			map[string]string{"Www-Authenticate": `Bearer realm="` + issuer + `", error="invalid_token", error_description="The access token has expired"`},
			`{"error":"invalid_token","error_description":"The access token has expired"}`},
		{"scope", http.MethodGet, oauth.BearerError(issuer, oauth.CodeInsufficientScope, "The access token does not grant scope openid", 403), 403,
			nil, `{"error":"insufficient_scope","error_description":"The access token does not grant scope openid"}`},
		{"echo client error", http.MethodGet, echo.ErrUnsupportedMediaType, 415, nil,
			`{"error":"invalid_request","error_description":"Unsupported Media Type"}`},
		{"body too large", http.MethodPost, &http.MaxBytesError{Limit: 1 << 16}, 413, nil,
			`{"error":"invalid_request","error_description":"Request body too large"}`},
		{"store", http.MethodGet, fmt.Errorf("%w: disk full", store.ErrUnavailable), 503, map[string]string{"Retry-After": oauth.RetryAfter},
			`{"error":"temporarily_unavailable","error_description":"The service cannot store the request now, try again later"}`},
		{"store HEAD", http.MethodHead, fmt.Errorf("%w: disk full", store.ErrUnavailable), 503, map[string]string{"Retry-After": oauth.RetryAfter}, ""},
		{"hsm", http.MethodGet, fmt.Errorf("jwks: %w", hsm.ErrBusy), 500, nil, `{"error":"server_error"}`},
		{"internal", http.MethodGet, errors.New(internal), 500, map[string]string{"Retry-After": ""}, `{"error":"server_error"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			e := echo.New()
			e.HTTPErrorHandler = oauth.NewRenderer(slog.New(slog.NewTextHandler(&logs, nil))).Handle
			e.Add(tt.method, "/userinfo", func(echo.Context) error { return tt.err }, oauth.WithDialect(p.dialect()))
			rec := httptest.NewRecorder()
			e.ServeHTTP(rec, httptest.NewRequest(tt.method, "/userinfo", nil))
			if rec.Code != tt.status || rec.Body.String() != tt.body {
				t.Errorf("%d %s, want %d %s", rec.Code, rec.Body, tt.status, tt.body)
			}
			if ct := rec.Header().Get("Content-Type"); tt.body != "" && ct != jsonUTF8 {
				t.Errorf("Content-Type %q", ct)
			}
			for k, v := range tt.header {
				if got := rec.Header().Get(k); got != v {
					t.Errorf("%s: %q, want %q", k, got, v)
				}
			}
			sent := rec.Body.String() + fmt.Sprint(rec.Header())
			for _, leak := range []string{internal, "disk full", "busy"} {
				if strings.Contains(sent, leak) {
					t.Errorf("the response leaks %q: %s", leak, sent)
				}
			}
			if rec.Code >= 500 && !strings.Contains(logs.String(), tt.err.Error()) {
				t.Errorf("not logged:\n%s", logs.String())
			}
		})
	}
}
