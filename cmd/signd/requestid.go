package main

import (
	"context"
	"crypto/rand"

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
