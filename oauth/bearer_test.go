package oauth_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/oauth"
	"github.com/signd/signd/store"
	"github.com/signd/signd/store/memory"
	"github.com/signd/signd/store/storetest/backends"
)

// TestRequireBearer checks the bearer middleware (RFC 6750, CSC v1 §10),
// one case per rule.
func TestRequireBearer(t *testing.T) {
	db := backends.Memory(t, memory.Options{})
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	tok := func(value string, kind store.TokenKind, user string, exp time.Time, scopes ...string) *store.Token {
		t := &store.Token{
			Hash: store.Fingerprint(value), Kind: kind, ClientID: "rp", Username: user, Scopes: scopes,
			AuthTime: now.Add(-time.Hour), RequestedAt: now.Add(-2 * time.Hour), ExpiresAt: exp,
		}
		if kind == store.TokenSAD {
			t.CredentialID, t.Hashes = "c", [][]byte{make([]byte, 32)}
		}
		return t
	}
	err := db.Update(context.Background(), func(tx store.Tx) error {
		for _, u := range []*store.User{
			{ID: "id-alice", Username: "alice", Status: store.UserActive},
			{ID: "id-carol", Username: "carol", Status: store.UserDisabled},
		} {
			if err := tx.CreateUser(u); err != nil {
				return err
			}
		}
		if err := tx.CreateClient(&store.Client{ID: "rp", SecretHash: store.HashSecret("s"), RedirectURIs: []string{"https://rp.example/cb"}}); err != nil {
			return err
		}
		orphan := tok("orphan", store.TokenAccess, "alice", now.Add(time.Hour), "service")
		orphan.ClientID = "removed" // a client that no longer exists
		if err := tx.CreateToken(orphan); err != nil {
			return err
		}
		for _, tk := range []*store.Token{
			tok("good", store.TokenAccess, "alice", now.Add(time.Hour), "service"),
			tok("openid", store.TokenAccess, "alice", now.Add(time.Hour), "openid"),
			tok("sad", store.TokenSAD, "alice", now.Add(time.Hour), "credential"),
			tok("expired", store.TokenAccess, "alice", now, "service"),
			tok("carols", store.TokenAccess, "carol", now.Add(time.Hour), "service"),
			tok("ghost", store.TokenAccess, "nobody", now.Add(time.Hour), "service"),
		} {
			if err := tx.CreateToken(tk); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	handler := func(allowForm bool) *echo.Echo {
		e := echo.New()
		h := func(c echo.Context) error {
			g := oauth.GrantFrom(c)
			if g == nil || g.Username != "alice" || g.ClientID != "rp" || len(g.Scopes) != 1 ||
				!g.ExpiresAt.Equal(now.Add(time.Hour)) || !g.AuthTime.Equal(now.Add(-time.Hour)) ||
				!g.RequestedAt.Equal(now.Add(-2*time.Hour)) || len(g.TokenHash) != 32 {
				t.Errorf("grant %+v", g)
			}
			return c.String(http.StatusOK, "ok")
		}
		mw := oauth.RequireBearer(oauth.BearerConfig{Store: bearerStore(db), Now: func() time.Time { return now }, Realm: "https://signd.example", Scope: "service", AllowFormBody: allowForm})
		e.GET("/r", h, mw)
		e.POST("/r", h, mw)
		e.HTTPErrorHandler = func(err error, c echo.Context) {
			var oe *oauth.Error
			if !errors.As(err, &oe) {
				t.Errorf("not an *oauth.Error: %v", err)
				_ = c.NoContent(500)
				return
			}
			for k, vs := range oe.Header {
				c.Response().Header()[k] = vs
			}
			_ = c.JSON(oe.Status, map[string]string{"error": oe.Code})
		}
		return e
	}
	tests := []struct {
		name      string
		headers   []string // Authorization values
		form      url.Values
		allowForm bool
		status    int
		code      string
	}{
		{name: "missing_token_is_401_without_error_code", status: 401},
		{name: "valid_token_passes", headers: []string{"Bearer good"}, status: 200},
		{name: "scheme_is_case_insensitive", headers: []string{"bearer good"}, status: 200},
		{name: "basic_scheme_is_invalid_request", headers: []string{"Basic Z29vZA=="}, status: 400, code: "invalid_request"},
		{name: "empty_bearer_is_invalid_request", headers: []string{"Bearer "}, status: 400, code: "invalid_request"},
		{name: "malformed_token_is_invalid_request", headers: []string{"Bearer a b"}, status: 400, code: "invalid_request"},
		{name: "two_authorization_headers_are_invalid_request", headers: []string{"Bearer good", "Bearer good"}, status: 400, code: "invalid_request"},
		{name: "unknown_token_is_invalid_token", headers: []string{"Bearer unknown"}, status: 401, code: "invalid_token"},
		{name: "sad_is_never_a_bearer_token", headers: []string{"Bearer sad"}, status: 401, code: "invalid_token"},
		{name: "expired_token_is_expired_token", headers: []string{"Bearer expired"}, status: 401, code: "expired_token"},
		{name: "disabled_users_token_is_invalid_token", headers: []string{"Bearer carols"}, status: 401, code: "invalid_token"},
		{name: "deleted_users_token_is_invalid_token", headers: []string{"Bearer ghost"}, status: 401, code: "invalid_token"},
		{name: "removed_clients_token_is_invalid_token", headers: []string{"Bearer orphan"}, status: 401, code: "invalid_token"},
		{name: "token_without_the_scope_is_insufficient_scope", headers: []string{"Bearer openid"}, status: 403, code: "insufficient_scope"},
		{name: "form_body_token_when_allowed", form: url.Values{"access_token": {"good"}}, allowForm: true, status: 200},
		{name: "form_body_token_ignored_when_not_allowed", form: url.Values{"access_token": {"good"}}, status: 401},
		{name: "header_and_body_token_is_invalid_request", headers: []string{"Bearer good"}, form: url.Values{"access_token": {"good"}}, allowForm: true, status: 400, code: "invalid_request"},
		{name: "body_token_twice_is_invalid_request", form: url.Values{"access_token": {"good", "good"}}, allowForm: true, status: 400, code: "invalid_request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method, body := http.MethodGet, ""
			if tt.form != nil {
				method, body = http.MethodPost, tt.form.Encode()
			}
			req := httptest.NewRequest(method, "/r", strings.NewReader(body))
			if tt.form != nil {
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			}
			for _, h := range tt.headers {
				req.Header.Add("Authorization", h)
			}
			rec := httptest.NewRecorder()
			handler(tt.allowForm).ServeHTTP(rec, req)
			if rec.Code != tt.status {
				t.Fatalf("status %d, want %d (%s)", rec.Code, tt.status, rec.Body)
			}
			if tt.status == 200 {
				return
			}
			wa := rec.Header().Get("WWW-Authenticate")
			if !strings.HasPrefix(wa, `Bearer realm="https://signd.example"`) {
				t.Errorf("WWW-Authenticate %q", wa)
			}
			if tt.code == "" && strings.Contains(wa, "error=") {
				t.Errorf("no-credentials challenge carries an error: %q", wa)
			}
			if tt.code != "" && !strings.Contains(wa, `error="`+tt.code+`"`) {
				t.Errorf("WWW-Authenticate %q lacks error %s", wa, tt.code)
			}
			if !strings.Contains(rec.Body.String(), `"error":"`+tt.code+`"`) {
				t.Errorf("body %s", rec.Body)
			}
		})
	}
}
