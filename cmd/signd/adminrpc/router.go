package adminrpc

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/signd/signd/admin"
)

// NewRouter is the router of the admin socket (and of the provisioning
// API, cmd/signd/adminapi): Echo with the same panic recovery as the
// public server (a panic becomes a logged error and a 500 in the admin
// error shape, the daemon lives on) and one error writer for what the
// admin handlers do not answer themselves.
func NewRouter(logger *slog.Logger) *echo.Echo {
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
