package protocol_test

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/csc/protocol"
)

// TestRoutes registers methods with and without middleware: Methods lists
// them in order, each answers POST, and any other HTTP method is refused
// before the method's middleware runs (CSC v1 §7.1).
func TestRoutes(t *testing.T) {
	e := echo.New()
	r := protocol.NewRoutes(e.Group("/csc/v1"))
	var ran []string
	mw := func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error { ran = append(ran, c.Path()); return next(c) }
	}
	ok := func(c echo.Context) error { return c.NoContent(http.StatusNoContent) }
	r.Method("info", ok)
	r.Method("credentials/list", ok, mw)
	if got, want := r.Methods(), []string{"info", "credentials/list"}; !slices.Equal(got, want) {
		t.Fatalf("Methods() = %v, want %v", got, want)
	}
	for _, tc := range []struct {
		method, path string
		status       int
		ran          int
	}{
		{http.MethodPost, "/csc/v1/info", http.StatusNoContent, 0},
		{http.MethodPost, "/csc/v1/credentials/list", http.StatusNoContent, 1},
		{http.MethodGet, "/csc/v1/credentials/list", http.StatusMethodNotAllowed, 0},
		{http.MethodPut, "/csc/v1/info", http.StatusMethodNotAllowed, 0},
	} {
		ran = nil
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
		if rec.Code != tc.status || len(ran) != tc.ran {
			t.Errorf("%s %s: %d, middleware ran %d times; want %d, %d", tc.method, tc.path, rec.Code, len(ran), tc.status, tc.ran)
		}
	}
}
