package httpserver

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"
)

// BenchmarkServerMiddleware measures what the daemon's router adds to a
// request beside the handler: bare is Echo with the route alone, daemon is
// Server.Echo() (request ID, the JSON request log line, recover, security
// headers, body limit) with the same route. in-process calls ServeHTTP;
// loopback goes through net/http over a kept-alive TCP connection.
//
//	go test -run '^$' -bench ServerMiddleware -benchmem ./cmd/signd/httpserver
func BenchmarkServerMiddleware(b *testing.B) {
	route := func(c echo.Context) error {
		return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
	}
	routers := []struct {
		name string
		e    func() *echo.Echo
	}{
		{"bare", func() *echo.Echo { e := echo.New(); e.POST("/csc/v1/bench", route); return e }},
		{"daemon", func() *echo.Echo {
			s := &Server{Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), BodyLimit: 1 << 20}
			e := s.Echo()
			e.POST("/csc/v1/bench", route)
			return e
		}},
	}
	body := []byte(`{"credentialID":"c1"}`)
	for _, r := range routers {
		b.Run("in-process/"+r.name, func(b *testing.B) {
			e := r.e()
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest(http.MethodPost, "/csc/v1/bench", bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				e.ServeHTTP(httptest.NewRecorder(), req)
			}
		})
		b.Run("loopback/"+r.name, func(b *testing.B) {
			ts := httptest.NewServer(r.e())
			defer ts.Close()
			client := ts.Client()
			b.ReportAllocs()
			for b.Loop() {
				resp, err := client.Post(ts.URL+"/csc/v1/bench", "application/json", bytes.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}
