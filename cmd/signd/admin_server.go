package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/signd/signd/admin"
)

// newAdminEcho is the router of the admin socket: Echo with the same
// panic recovery as the public server (a panic becomes a logged error and
// a 500 in the admin error shape, the daemon lives on) and one error
// writer for what the admin handlers do not answer themselves.
func newAdminEcho(logger *slog.Logger) *echo.Echo {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = func(err error, c echo.Context) {
		if c.Response().Committed {
			return
		}
		status, body := http.StatusInternalServerError, admin.Error{Kind: admin.KindInternal, Message: "internal error (see the signd log)"}
		var he *echo.HTTPError
		if errors.As(err, &he) && he.Code < 500 {
			status, body = he.Code, admin.Error{Kind: admin.KindInvalid, Message: fmt.Sprint(he.Message)}
		} else {
			logger.Error("admin request failed", "path", c.Request().URL.Path, "err", err)
		}
		if werr := c.JSON(status, body); werr != nil {
			logger.Warn("admin: writing error response failed", "err", werr)
		}
	}
	e.Use(middleware.RecoverWithConfig(middleware.RecoverConfig{
		DisableErrorHandler: true, // the panic becomes an error for the error writer
		LogErrorFunc: func(c echo.Context, err error, stack []byte) error {
			logger.Error("admin panic", "path", c.Request().URL.Path, "err", err, "stack", string(stack))
			return err
		},
	}))
	return e
}

// namedServer is one listener serve drains at shutdown.
type namedServer struct {
	name string
	srv  *http.Server
}

// drain shuts every server down at once within timeout: they stop
// accepting and finish the requests in flight; whatever has not finished
// when the time is up is cut (Close), so serve returns within timeout
// whatever a handler does.
func drain(ctx context.Context, timeout time.Duration, logger *slog.Logger, servers ...namedServer) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.srv.Shutdown(sctx); err != nil {
				logger.Warn(s.name+" drain incomplete: cutting the requests still running", "err", err, "timeout", timeout)
				_ = s.srv.Close()
			}
		}()
	}
	wg.Wait()
}
