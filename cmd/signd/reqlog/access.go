package reqlog

import (
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
)

// AccessLog writes one "request" line per request: method, path, status,
// latency_ms, remote_ip, and the request_id from the request's context
// (Handler). A 5xx is logged at ERROR, a health probe at probeLevel, every
// other request at INFO.
type AccessLog struct {
	Logger *slog.Logger

	// healthzLast and readyzLast are the status of the previous probe of
	// /healthz and /readyz (0 before the first), for probeLevel.
	healthzLast, readyzLast atomic.Int64
}

// Middleware is the access log as Echo middleware; it runs inside
// RequestID, which gives the line its ID.
func (a *AccessLog) Middleware() echo.MiddlewareFunc {
	return middleware.RequestLoggerWithConfig(middleware.RequestLoggerConfig{
		LogURIPath: true, LogMethod: true, LogStatus: true, LogLatency: true,
		LogRequestID: true, LogRemoteIP: true, LogError: true, HandleError: true,
		LogValuesFunc: func(c echo.Context, v middleware.RequestLoggerValues) error {
			attrs := []slog.Attr{
				slog.String("method", v.Method), slog.String("path", LogPath(v.URIPath)),
				slog.Int("status", v.Status),
				slog.Float64("latency_ms", float64(v.Latency)/float64(time.Millisecond)),
				slog.String("remote_ip", v.RemoteIP),
			}
			level := slog.LevelInfo
			if v.Status >= 500 {
				level = slog.LevelError
			}
			if probe := a.probeLast(v.URIPath); probe != nil {
				level = probeLevel(probe, v.Status)
			}
			// The request_id comes from the context (Handler).
			a.Logger.LogAttrs(c.Request().Context(), level, "request", attrs...)
			return nil
		},
	})
}

// probeLast is the previous-status record of a health endpoint's path, or
// nil for any other path.
func (a *AccessLog) probeLast(path string) *atomic.Int64 {
	switch path {
	case "/healthz":
		return &a.healthzLast
	case "/readyz":
		return &a.readyzLast
	}
	return nil
}

// probeLevel is the access-log level of a health probe: DEBUG while its
// status stays what the previous probe answered (a load balancer probing
// every second would otherwise fill the log), INFO when it changes to 200
// (and for the first probe), WARN when it changes to anything else.
func probeLevel(last *atomic.Int64, status int) slog.Level {
	switch {
	case last.Swap(int64(status)) == int64(status):
		return slog.LevelDebug
	case status == http.StatusOK:
		return slog.LevelInfo
	}
	return slog.LevelWarn
}

// enrollPath is the enrollment page's path (admin.EnrollPath): what
// follows it is a one-time link's token, a bearer secret until it is
// used.
const enrollPath = "/oauth2/enroll/"

// LogPath is path as the access log and the panic log print it: the
// enrollment page's without its token, any other as it is.
func LogPath(path string) string {
	if i := strings.Index(path, enrollPath); i >= 0 && len(path) > i+len(enrollPath) {
		return path[:i+len(enrollPath)] + "[REDACTED]"
	}
	return path
}
