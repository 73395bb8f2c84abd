package httpserver

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/cmd/signd/reqlog"
	"github.com/signd/signd/internal/logtest"
	"github.com/signd/signd/store"
)

// A client's X-Request-Id is kept only when it is 1–64 characters of
// [A-Za-z0-9._-]; otherwise the daemon makes its own. The echoed header and
// the access-log line always name the same ID.
func TestRequestIDAcceptedOrReplaced(t *testing.T) {
	max := strings.Repeat("a", 64)
	for _, tc := range []struct {
		name string
		sent []string // X-Request-Id values; none = header absent
		keep bool
	}{
		{"absent", nil, false},
		{"empty", []string{""}, false},
		{"uuid", []string{"3f2b9c1e-8d4a-4f7b-9e2d-1a6c5b8e7f01"}, true},
		{"all allowed characters", []string{"Az09._-"}, true},
		{"exactly 64", []string{max}, true},
		{"65", []string{max + "b"}, false},
		{"3 KB", []string{strings.Repeat("x", 3072)}, false},
		{"CRLF", []string{"abc\r\nlevel=ERROR msg=forged"}, false},
		{"LF", []string{"abc\nxyz"}, false},
		{"NUL", []string{"abc\x00"}, false},
		{"tab", []string{"abc\tdef"}, false},
		{"space", []string{"abc def"}, false},
		{"non-ASCII", []string{"réquest"}, false},
		{"JSON quote", []string{`abc"def`}, false},
		{"slash", []string{"a/b"}, false},
		{"duplicated", []string{"first", "second"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			s := &Server{Logger: slog.New(slog.NewJSONHandler(&logs, nil)), BodyLimit: 1 << 20}
			req := httptest.NewRequest(http.MethodGet, "/healthz", nil)
			for _, v := range tc.sent {
				req.Header.Add(echo.HeaderXRequestID, v)
			}
			rec := httptest.NewRecorder()
			s.Echo().ServeHTTP(rec, req)
			echoed := rec.Header().Values(echo.HeaderXRequestID)
			if len(echoed) != 1 {
				t.Fatalf("echoed X-Request-Id %q, want one", echoed)
			}
			got := echoed[0]
			if !reqlog.ValidID(got) {
				t.Errorf("echoed X-Request-Id %q is not a valid ID", got)
			}
			if tc.keep && got != tc.sent[0] {
				t.Errorf("echoed X-Request-Id %q, want the client's %q kept", got, tc.sent[0])
			}
			for _, v := range tc.sent {
				if !tc.keep && got == v {
					t.Errorf("echoed X-Request-Id %q: the client's value was kept, want it replaced", got)
				}
			}
			lines := logtest.Messages(t, logs.String(), "request")
			if len(lines) != 1 || lines[0]["request_id"] != got {
				t.Errorf("access log %v, want one line with request_id %q", lines, got)
			}
		})
	}
}

// Fresh IDs differ from request to request.
func TestRequestIDFresh(t *testing.T) {
	s := &Server{Logger: slog.New(slog.DiscardHandler), BodyLimit: 1 << 20}
	e := s.Echo()
	seen := map[string]bool{}
	for range 50 {
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
		id := rec.Header().Get(echo.HeaderXRequestID)
		if seen[id] || !reqlog.ValidID(id) {
			t.Fatalf("request ID %q repeated or invalid", id)
		}
		seen[id] = true
	}
}

// Health probes are logged at DEBUG while their status stays the same, and
// at INFO (back to 200) or WARN (anything else) when it changes; other
// requests keep their level. Durations are latency_ms, a float of
// milliseconds.
func TestProbeLogLevels(t *testing.T) {
	var logs bytes.Buffer
	s := &Server{Store: healthStore{}, Token: okPinger{},
		Logger:    slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		BodyLimit: 1 << 20}
	e := s.Echo()
	steps := []struct {
		path   string
		broken bool // the store reports a fault: /readyz answers 503
		status float64
		level  string
	}{
		{"/healthz", false, 200, "INFO"},
		{"/healthz", false, 200, "DEBUG"},
		{"/healthz", false, 200, "DEBUG"},
		{"/readyz", false, 200, "INFO"},
		{"/readyz", false, 200, "DEBUG"},
		{"/readyz", true, 503, "WARN"},
		{"/readyz", true, 503, "DEBUG"},
		{"/healthz", false, 200, "DEBUG"},
		{"/readyz", false, 200, "INFO"},
		{"/readyz", false, 200, "DEBUG"},
		{"/nowhere", false, 404, "INFO"},
		{"/nowhere", false, 404, "INFO"},
	}
	for _, st := range steps {
		s.Store = healthStore{}
		if st.broken {
			s.Store = healthStore{health: store.ErrUnavailable}
		}
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, st.path, nil))
	}
	lines := logtest.Messages(t, logs.String(), "request")
	if len(lines) != len(steps) {
		t.Fatalf("%d access-log lines, want %d:\n%s", len(lines), len(steps), logs.String())
	}
	for i, st := range steps {
		l := lines[i]
		if l["path"] != st.path || l["status"] != st.status || l["level"] != st.level {
			t.Errorf("probe %d: %v %v at %v, want %s %v at %s", i, l["path"], l["status"], l["level"], st.path, st.status, st.level)
		}
		ms, ok := l["latency_ms"].(float64)
		if !ok || ms < 0 || ms > 60_000 {
			t.Errorf("probe %d: latency_ms %v (%T), want a float of milliseconds", i, l["latency_ms"], l["latency_ms"])
		}
		if _, ok := l["latency"]; ok {
			t.Errorf("probe %d: the unit-less latency field is still logged: %v", i, l)
		}
	}
}
