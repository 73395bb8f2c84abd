package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/cmd/signd/adminrpc"
	"github.com/signd/signd/config"
)

// adminPost calls a method on the daemon's admin socket.
func (e *env) adminPost(ctx context.Context, method string) (*http.Response, []byte, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://signd/admin/v1/"+method, strings.NewReader("{}"))
	req.Header.Set("Content-Type", "application/json")
	remote, err := adminrpc.Dial(filepath.Join(e.dir, "s.sock"), adminrpc.TrustSelf(config.NoAdminGroup))
	if err != nil {
		return nil, nil, err
	}
	res, err := remote.HTTPClient().Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	return res, body, err
}

// TestAdminPanicIsRecovered: a panic in an admin handler (an injected
// fault) is a logged 500 in the admin error shape, without the panic's
// detail; the daemon and the socket go on serving.
func TestAdminPanicIsRecovered(t *testing.T) {
	e := newEnv(t, "")
	logs := &syncBuffer{}
	addr, _ := e.startDaemonWith(func(a *app) {
		a.stderr = logs
		a.adminHook = func(ae *echo.Echo) {
			ae.POST("/admin/v1/InjectedPanic", func(echo.Context) error { panic("injected fault: secret internal detail") })
		}
	})
	res, body, err := e.adminPost(context.Background(), "InjectedPanic")
	if err != nil {
		t.Fatalf("admin request: %v (the panic killed the connection)", err)
	}
	var ae struct{ Kind, Message string }
	if res.StatusCode != http.StatusInternalServerError || json.Unmarshal(body, &ae) != nil || ae.Kind != "internal" {
		t.Fatalf("panicking admin handler: %d %q, want 500 with kind internal", res.StatusCode, body)
	}
	if bytes.Contains(body, []byte("secret internal detail")) || bytes.Contains(body, []byte("goroutine")) {
		t.Errorf("the response leaks the panic: %s", body)
	}
	if !strings.Contains(logs.String(), "secret internal detail") || !strings.Contains(logs.String(), "admin panic") {
		t.Errorf("the panic is not in the log:\n%s", logs.String())
	}
	// Still alive: the admin CLI and the public server answer.
	if out := e.must("", "user", "list", "--json"); strings.TrimSpace(out) != "[]" {
		t.Errorf("user list through the socket after the panic: %q", out)
	}
	if r, err := http.Get("http://" + addr + "/healthz"); err != nil || r.StatusCode != 200 {
		t.Errorf("healthz after the admin panic: %v", err)
	}
}

// TestShutdownDrainsAdminWithinTimeout: at shutdown a slow admin request
// in flight finishes when it can within server.shutdown_timeout, and is
// cut when it cannot; either way serve returns within the timeout.
func TestShutdownDrainsAdminWithinTimeout(t *testing.T) {
	tests := []struct {
		name     string
		timeout  time.Duration
		handler  time.Duration // how long the admin request takes
		finishes bool
	}{
		{"finishes within the timeout", 5 * time.Second, 300 * time.Millisecond, true},
		{"cut at the timeout", time.Second, 20 * time.Second, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("SIGND_SERVER_SHUTDOWN_TIMEOUT", tt.timeout.String())
			e := newEnv(t, "")
			started := make(chan struct{})
			_, stop := e.startDaemonWith(func(a *app) {
				a.adminHook = func(ae *echo.Echo) {
					ae.POST("/admin/v1/Slow", func(c echo.Context) error {
						close(started)
						time.Sleep(tt.handler) // deaf to cancellation, like a stuck call
						return c.JSON(http.StatusOK, map[string]string{"done": "yes"})
					})
				}
			})
			type result struct {
				status int
				err    error
				at     time.Duration
			}
			begin := time.Now()
			got := make(chan result, 1)
			go func() {
				res, _, err := e.adminPost(context.Background(), "Slow")
				r := result{err: err, at: time.Since(begin)}
				if res != nil {
					r.status = res.StatusCode
				}
				got <- r
			}()
			<-started
			shutdownAt := time.Now()
			stopped := make(chan struct{})
			go func() { stop(); close(stopped) }()
			limit := tt.timeout + 3*time.Second
			select {
			case <-stopped:
			case <-time.After(limit):
				t.Fatalf("serve did not return within %s of shutdown (shutdown_timeout %s)", limit, tt.timeout)
			}
			took := time.Since(shutdownAt)
			var r result
			select {
			case r = <-got:
			case <-time.After(limit):
				t.Fatalf("the admin request was neither finished nor cut %s after shutdown", limit)
			}
			if tt.finishes {
				if r.err != nil || r.status != http.StatusOK {
					t.Errorf("in-flight admin request: %d %v, want it to finish with 200", r.status, r.err)
				}
				if took < tt.handler/2 {
					t.Errorf("serve returned after %s, before the request in flight finished", took)
				}
			} else if r.err == nil {
				t.Errorf("the stuck admin request got %d, want its connection cut", r.status)
			}
		})
	}
}
