package httpserver

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/oauth"
)

func TestPanicBecomesBareJSON500(t *testing.T) {
	var logs bytes.Buffer
	s := &Server{Logger: slog.New(slog.NewJSONHandler(&logs, nil)), BodyLimit: 1 << 20}
	e := s.Echo()
	e.GET("/boom", func(echo.Context) error { panic("kaboom: internal detail") })
	e.GET("/fail", func(echo.Context) error { return os.ErrPermission })

	for _, path := range []string{"/boom", "/fail"} {
		t.Run(strings.TrimPrefix(path, "/"), func(t *testing.T) {
			rec := httptest.NewRecorder()
			e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
			if rec.Code != http.StatusInternalServerError {
				t.Fatalf("status %d", rec.Code)
			}
			var body map[string]string
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
				t.Fatalf("body %q: %v", rec.Body.String(), err)
			}
			if body["error"] != "server_error" || body["error_description"] != "internal error" || len(body) != 2 {
				t.Fatalf("body %v", body)
			}
			for _, leak := range []string{"kaboom", "goroutine", ".go:", "permission"} {
				if strings.Contains(rec.Body.String(), leak) {
					t.Errorf("response leaks %q: %s", leak, rec.Body.String())
				}
			}
		})
	}
	// The cause is in the log, for the operator.
	if !strings.Contains(logs.String(), "kaboom") {
		t.Errorf("panic not logged:\n%s", logs.String())
	}
}

// A panic in a protocol route is a bare 500 in the route's dialect.
func TestPanicInProtocolRoute(t *testing.T) {
	s := &Server{Logger: slog.New(slog.DiscardHandler), BodyLimit: 1 << 20}
	e := s.Echo()
	d := &oauth.Dialect{Name: "test", Format: oauth.FormatOAuth, Internal: "Internal error"}
	e.POST("/boom", func(echo.Context) error { panic("kaboom: internal detail") }, oauth.WithDialect(d))
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/boom", nil))
	if rec.Code != http.StatusInternalServerError || rec.Header().Get("Pragma") != "no-cache" ||
		rec.Body.String() != `{"error":"server_error","error_description":"Internal error"}` {
		t.Fatalf("%d %v %s", rec.Code, rec.Header(), rec.Body)
	}
}
