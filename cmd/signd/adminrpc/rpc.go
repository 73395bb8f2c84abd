package adminrpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"

	"github.com/labstack/echo/v4"
	"golang.org/x/sys/unix"

	"github.com/signd/signd/admin"
)

const rpcPrefix = "/admin/v1/"

// maxRPCBody bounds admin request bodies (a proof document, 10 MiB in
// base64, is the largest one).
const maxRPCBody = 16 << 20

// streamTrailer is the last line of a stream that failed; a stream's lines
// are JSON objects that never start like it.
type streamTrailer struct {
	Error string `json:"error"`
}

var streamTrailerPrefix = []byte(`{"error":`)

func kindStatus(k admin.Kind) int {
	switch k {
	case admin.KindPending:
		// Accepted, not performed: the act waits for a second operator.
		return http.StatusAccepted
	case admin.KindInvalid:
		return http.StatusBadRequest
	case admin.KindNotFound:
		return http.StatusNotFound
	case admin.KindExists, admin.KindConflict:
		return http.StatusConflict
	case admin.KindForbidden:
		return http.StatusForbidden
	case admin.KindUnavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// peerKey is the context key of the socket peer's credentials.
type peerKey struct{}

// ConnContext is the admin server's http.Server.ConnContext: it records
// the peer's SO_PEERCRED credentials of each connection in its context,
// where Handler finds them. A connection without them (not a Unix socket)
// carries none, and Handler refuses its requests.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	if cred, err := PeerCred(c); err == nil {
		return context.WithValue(ctx, peerKey{}, cred)
	}
	return ctx
}

// Peer returns the credentials ConnContext recorded in ctx.
func Peer(ctx context.Context) (*unix.Ucred, bool) {
	cred, ok := ctx.Value(peerKey{}).(*unix.Ucred)
	return cred, ok
}

// Handler serves an admin.Service on the admin socket.
type Handler struct {
	Service admin.Service
	// Principal names the peer with credentials cred, with its roles.
	Principal func(cred *unix.Ucred) admin.Principal
	Logger    *slog.Logger
}

// Mount registers the admin routes on g at their paths (the daemon passes
// the admin socket's root group).
func (h *Handler) Mount(g *echo.Group) error {
	if h.Principal == nil {
		return errors.New("adminrpc: Handler without Principal")
	}
	g.POST(rpcPrefix+":method", func(c echo.Context) error {
		op, ok := admin.Lookup(c.Param("method"))
		if !ok {
			return c.JSON(http.StatusNotFound, &admin.Error{Kind: admin.KindInvalid, Message: fmt.Sprintf("unknown admin method %q", c.Param("method"))})
		}
		cred, ok := Peer(c.Request().Context())
		if !ok {
			return c.JSON(http.StatusForbidden, &admin.Error{Kind: admin.KindForbidden, Message: "admin socket: the peer's credentials are unknown"})
		}
		body, err := io.ReadAll(io.LimitReader(c.Request().Body, maxRPCBody+1))
		if err != nil || len(body) > maxRPCBody {
			return c.JSON(http.StatusBadRequest, &admin.Error{Kind: admin.KindInvalid,
				Message: fmt.Sprintf("admin request body unreadable or larger than %d bytes", maxRPCBody)})
		}
		res, err := op.Call(c.Request().Context(), h.Service, h.Principal(cred), body)
		if err != nil {
			var ae *admin.Error
			if !errors.As(err, &ae) {
				h.logger().Error("admin method failed", "method", op.Name, "err", err)
				ae = &admin.Error{Kind: admin.KindInternal, Message: "internal error (see the signd log)"}
			}
			return c.JSON(kindStatus(ae.Kind), ae)
		}
		if st, ok := res.(admin.Stream); ok {
			h.writeStream(c, op.Name, st)
			return nil
		}
		return c.JSON(http.StatusOK, res)
	})
	return nil
}

func (h *Handler) logger() *slog.Logger {
	if h.Logger != nil {
		return h.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// writeStream answers 200 with what st writes and, when st fails, ends
// the answer with a streamTrailer line.
func (h *Handler) writeStream(c echo.Context, method string, st admin.Stream) {
	c.Response().Header().Set(echo.HeaderContentType, "application/x-ndjson")
	c.Response().WriteHeader(http.StatusOK)
	if err := st(c.Response()); err != nil {
		h.logger().Warn("admin stream stopped", "method", method, "err", err)
		line, _ := json.Marshal(streamTrailer{Error: err.Error()})
		_, _ = c.Response().Write(append(line, '\n'))
	}
}
