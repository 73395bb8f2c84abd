package httpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/hsm"
	"github.com/signd/signd/oauth"
	"github.com/signd/signd/store"
	"github.com/signd/signd/store/storetest"
)

type okPinger struct{}

func (okPinger) Ping(context.Context) error { return nil }
func (okPinger) Status() hsm.Status         { return hsm.Status{Available: true} }

// healthStore is a store whose reads work and whose Health is set by the
// test: the fault a real store reports after a failed write or a damaged
// page.
type healthStore struct {
	store.Store
	read, health error
}

func (s healthStore) View(context.Context, func(store.Tx) error) error { return s.read }
func (s healthStore) Health() error                                    { return s.health }

// TestReadyzStoreReasons: /readyz answers 503 with the store's reason and
// Retry-After when the store cannot write or is damaged, 200 otherwise;
// a store write failure elsewhere is 503 temporarily_unavailable.
func TestReadyzStoreReasons(t *testing.T) {
	tests := []struct {
		name         string
		read, health error
		status       int
		reason       string
	}{
		{"healthy", nil, nil, http.StatusOK, ""},
		{"not writable", nil, storetest.ErrDiskFull, http.StatusServiceUnavailable, "store not writable"},
		{"damaged", nil, fmt.Errorf("%w: signd.db: page 7", store.ErrCorrupt), http.StatusServiceUnavailable, "store damaged"},
		{"not readable", storetest.ErrDiskFailed, nil, http.StatusServiceUnavailable, "store not readable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &Server{Store: healthStore{read: tt.read, health: tt.health}, Token: okPinger{}, Logger: slog.New(slog.DiscardHandler), BodyLimit: 1 << 20}
			rec := httptest.NewRecorder()
			s.Echo().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
			var body map[string]string
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || rec.Code != tt.status || body["reason"] != tt.reason {
				t.Fatalf("/readyz: %d %s, want %d reason %q", rec.Code, rec.Body, tt.status, tt.reason)
			}
			if tt.status != http.StatusOK && (body["component"] != "store" || rec.Header().Get("Retry-After") != oauth.RetryAfter) {
				t.Errorf("/readyz: %v, Retry-After %q", body, rec.Header().Get("Retry-After"))
			}
		})
	}

	s := &Server{Logger: slog.New(slog.DiscardHandler), BodyLimit: 1 << 20}
	e := s.Echo()
	e.GET("/write", func(echo.Context) error {
		return storetest.ErrDiskFull
	})
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/write", nil))
	var body map[string]string
	_ = json.Unmarshal(rec.Body.Bytes(), &body)
	if rec.Code != http.StatusServiceUnavailable || body["error"] != "temporarily_unavailable" ||
		rec.Header().Get("Retry-After") != oauth.RetryAfter {
		t.Errorf("a failed store write: %d %s", rec.Code, rec.Body)
	}
}

func TestHSMReason(t *testing.T) {
	tests := []struct {
		st   hsm.Status
		err  error
		want string
	}{
		{hsm.Status{Reason: "PIN refused, restart needed"}, hsm.ErrPIN, "PIN refused, restart needed"},
		{hsm.Status{Available: true}, fmt.Errorf("hsm: ping: %w", hsm.ErrBusy), "all sessions busy"},
		{hsm.Status{Available: true}, context.DeadlineExceeded, "token did not answer in time"},
		{hsm.Status{Available: true}, errors.New("C_GetTokenInfo: CKR_FUNCTION_FAILED"), "token check failed"},
	}
	for _, tt := range tests {
		if got := hsmReason(tt.st, tt.err); got != tt.want {
			t.Errorf("hsmReason(%+v, %v) = %q, want %q", tt.st, tt.err, got, tt.want)
		}
	}
}
