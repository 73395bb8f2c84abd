package main

import (
	"context"
	"crypto/rand"
	"log/slog"

	"github.com/labstack/echo/v4"
)

// maxRequestIDLen is the longest client-sent X-Request-Id kept.
const maxRequestIDLen = 64

// requestIDKey is the context key under which requestID stores the
// request's ID, for the log handler (requestIDHandler) to add.
type requestIDKey struct{}

// validRequestID reports whether a client-sent X-Request-Id may be kept:
// 1 to 64 characters of [A-Za-z0-9._-]. Anything else (too long, control
// characters such as CR and LF, spaces, non-ASCII) could forge or smear
// log lines and is replaced.
func validRequestID(id string) bool {
	if id == "" || len(id) > maxRequestIDLen {
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

// requestID gives every request one ID: the client's X-Request-Id when
// validRequestID accepts it, otherwise a fresh random one. The ID is
// written back to the request header (which the access log reads), echoed
// in the response header, and put into the request's context so that
// every log line written with that context carries it.
func requestID(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		id := req.Header.Get(echo.HeaderXRequestID)
		if !validRequestID(id) || len(req.Header.Values(echo.HeaderXRequestID)) > 1 {
			id = rand.Text()
		}
		req.Header.Set(echo.HeaderXRequestID, id)
		c.Response().Header().Set(echo.HeaderXRequestID, id)
		c.SetRequest(req.WithContext(context.WithValue(req.Context(), requestIDKey{}, id)))
		return next(c)
	}
}

// requestIDFrom is the request ID requestID put into ctx, or "".
func requestIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// requestIDHandler adds the request_id of the record's context (put there
// by requestID) to every record logged with a *Context call while serving
// a request: the access-log line, "login failed", "token issued", the HSM's
// and the store's events alike. Records without one pass unchanged.
type requestIDHandler struct{ slog.Handler }

// withRequestID wraps l's handler in requestIDHandler, once.
func withRequestID(l *slog.Logger) *slog.Logger {
	if l == nil {
		return nil
	}
	if _, ok := l.Handler().(requestIDHandler); ok {
		return l
	}
	return slog.New(requestIDHandler{l.Handler()})
}

func (h requestIDHandler) Handle(ctx context.Context, r slog.Record) error {
	if id := requestIDFrom(ctx); id != "" {
		r.AddAttrs(slog.String("request_id", id))
	}
	return h.Handler.Handle(ctx, r)
}

func (h requestIDHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return requestIDHandler{h.Handler.WithAttrs(attrs)}
}

func (h requestIDHandler) WithGroup(name string) slog.Handler {
	return requestIDHandler{h.Handler.WithGroup(name)}
}
