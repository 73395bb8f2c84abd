package reqlog

import (
	"context"
	"crypto/rand"
	"log/slog"

	"github.com/labstack/echo/v4"
)

// maxIDLen is the longest client-sent X-Request-Id kept.
const maxIDLen = 64

// idKey is the context key under which RequestID stores the request's
// ID, for the log handler (Handler) to add.
type idKey struct{}

// ValidID reports whether a client-sent X-Request-Id may be kept:
// 1 to 64 characters of [A-Za-z0-9._-]. Anything else (too long, control
// characters such as CR and LF, spaces, non-ASCII) could forge or smear
// log lines and is replaced.
func ValidID(id string) bool {
	if id == "" || len(id) > maxIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		switch c := id[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// RequestID gives every request one ID: the client's X-Request-Id when
// ValidID accepts it, otherwise a fresh random one. The ID is
// written back to the request header (which the access log reads), echoed
// in the response header, and put into the request's context so that
// every log line written with that context carries it.
func RequestID(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		id := req.Header.Get(echo.HeaderXRequestID)
		if !ValidID(id) || len(req.Header.Values(echo.HeaderXRequestID)) > 1 {
			id = rand.Text()
		}
		req.Header.Set(echo.HeaderXRequestID, id)
		c.Response().Header().Set(echo.HeaderXRequestID, id)
		c.SetRequest(req.WithContext(context.WithValue(req.Context(), idKey{}, id)))
		return next(c)
	}
}

// ID is the request ID RequestID put into ctx, or "".
func ID(ctx context.Context) string {
	id, _ := ctx.Value(idKey{}).(string)
	return id
}

// Handler adds the request_id of the record's context (put there by
// RequestID) to every record logged with a *Context call while serving
// a request: the access-log line, "login failed", "token issued", the HSM's
// and the store's events alike. Records without one pass unchanged.
type Handler struct{ slog.Handler }

// WithRequestID wraps l's handler in Handler, once.
func WithRequestID(l *slog.Logger) *slog.Logger {
	if l == nil {
		return nil
	}
	if _, ok := l.Handler().(Handler); ok {
		return l
	}
	return slog.New(Handler{l.Handler()})
}

func (h Handler) Handle(ctx context.Context, r slog.Record) error {
	if id := ID(ctx); id != "" {
		r.AddAttrs(slog.String("request_id", id))
	}
	return h.Handler.Handle(ctx, r)
}

func (h Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return Handler{h.Handler.WithAttrs(attrs)}
}

func (h Handler) WithGroup(name string) slog.Handler {
	return Handler{h.Handler.WithGroup(name)}
}
