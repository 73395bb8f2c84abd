package csc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/csc/protocol"
	"github.com/signd/signd/oauth"
	"github.com/signd/signd/store"
)

// TestDialect renders each kind of error the /csc/v1 handlers return
// through the daemon's renderer in the CSC dialect.
func TestDialect(t *testing.T) {
	const (
		realm    = "https://sign.example.com"
		internal = "open /var/lib/signd/signd.db: permission denied"
		hsmBusy  = "CKR_SESSION_COUNT on slot 0"
	)
	errBusy := busyError(hsmBusy)
	h := &Handler{}
	missingToken := oauth.BearerError(realm, "", "", http.StatusUnauthorized)
	const unavailable = "The signing service is temporarily unavailable, try again later"
	body := func(code, desc string) string {
		return `{"error":"` + code + `","error_description":"` + desc + `"}` + "\n"
	}
	tests := []struct {
		name   string
		err    error
		status int
		header map[string]string
		body   string
	}{
		{"missing token", missingToken, 401, map[string]string{"Www-Authenticate": `Bearer realm="` + realm + `"`},
			body(oauth.CodeInvalidToken, descMissingToken)},
		{"invalid token", oauth.BearerError(realm, oauth.CodeInvalidToken, "The access token is invalid or revoked", 401), 401,
			map[string]string{"Www-Authenticate": `Bearer realm="` + realm + `", error="invalid_token", error_description="The access token is invalid or revoked"`},
			body(oauth.CodeInvalidToken, "The access token is invalid or revoked")},
		{"protocol", protocol.Invalid("SAD"), 400, nil, body(oauth.CodeInvalidRequest, "Invalid parameter SAD")},
		{"unknown method", echo.ErrNotFound, 404, nil, body(codeNotFound, descUnknownMethod)},
		{"GET", echo.ErrMethodNotAllowed, 405, map[string]string{"Allow": "POST"}, body(oauth.CodeInvalidRequest, descPostOnly)},
		{"echo client error", echo.ErrUnsupportedMediaType, 400, nil, body(oauth.CodeInvalidRequest, "Bad request")},
		{"body too large", &http.MaxBytesError{Limit: 65536}, 500, nil, body(oauth.CodeServerError, descInternal)},
		{"store", fmt.Errorf("%w: disk full", store.ErrUnavailable), 503, map[string]string{"Retry-After": oauth.RetryAfter},
			body(oauth.CodeTemporarilyUnavailable, unavailable)},
		{"hsm", fmt.Errorf("sign: %w", errBusy), 503, map[string]string{"Retry-After": "5"},
			body(oauth.CodeTemporarilyUnavailable, unavailable)},
		{"canceled", fmt.Errorf("sign: %w", context.Canceled), 503, map[string]string{"Retry-After": "5"},
			body(oauth.CodeTemporarilyUnavailable, unavailable)},
		{"internal", errors.New(internal), 500, map[string]string{"Retry-After": ""}, body(oauth.CodeServerError, descInternal)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			e := echo.New()
			e.HTTPErrorHandler = oauth.NewRenderer(slog.New(slog.NewTextHandler(&logs, nil))).Handle
			g := e.Group("/csc/v1")
			g.Use(oauth.WithDialect(h.dialect()))
			g.POST("/x", func(echo.Context) error { return tt.err })
			rec := httptest.NewRecorder()
			e.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/csc/v1/x", nil))
			if rec.Code != tt.status || rec.Body.String() != tt.body {
				t.Errorf("%d %s, want %d %s", rec.Code, rec.Body, tt.status, tt.body)
			}
			if ct := rec.Header().Get("Content-Type"); ct != echo.MIMEApplicationJSON {
				t.Errorf("Content-Type %q", ct)
			}
			for k, v := range tt.header {
				if got := rec.Header().Get(k); got != v {
					t.Errorf("%s: %q, want %q", k, got, v)
				}
			}
			sent := rec.Body.String() + fmt.Sprint(rec.Header())
			for _, leak := range []string{internal, hsmBusy, "disk full", "65536"} {
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

// busyError is a Signer error that answers Unavailable, as hsm.ErrBusy
// does.
type busyError string

func (e busyError) Error() string     { return string(e) }
func (e busyError) Unavailable() bool { return true }
