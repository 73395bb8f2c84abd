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

// KindStatus is the HTTP status of an admin.Error of kind k, on the admin
// socket and on the provisioning API alike.
func KindStatus(k admin.Kind) int {
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
	// Identify describes the peer for WhoAmI; nil = what Principal says.
	Identify func(cred *unix.Ucred) admin.Identity
	Logger   *slog.Logger
}

// whoAmIMethod is the socket method outside admin.Operations that tells
// the caller who the daemon takes it for; it needs no role.
const whoAmIMethod = "WhoAmI"

// maxWhoAmIBody bounds WhoAmI's request, which has no parameters.
const maxWhoAmIBody = 1024

// whoAmI answers WhoAmI for the peer with credentials cred.
func (h *Handler) whoAmI(c echo.Context, cred *unix.Ucred) error {
	body, err := io.ReadAll(io.LimitReader(c.Request().Body, maxWhoAmIBody+1))
	var fields map[string]json.RawMessage
	if err != nil || len(body) > maxWhoAmIBody || json.Unmarshal(body, &fields) != nil || len(fields) > 0 {
		return c.JSON(http.StatusBadRequest, &admin.Error{Kind: admin.KindInvalid, Message: "malformed admin request: WhoAmI takes no parameters, send {}"})
	}
	if h.Identify != nil {
		return c.JSON(http.StatusOK, h.Identify(cred))
	}
	p := h.Principal(cred)
	id := admin.Identity{Actor: p.Actor, Roles: p.Roles, Via: "daemon"}
	if id.Roles == nil {
		id.Roles = []admin.Role{}
	}
	return c.JSON(http.StatusOK, id)
}

// Mount registers the admin routes on g at their paths (the daemon passes
// the admin socket's root group).
func (h *Handler) Mount(g *echo.Group) error {
	if h.Principal == nil {
		return errors.New("adminrpc: Handler without Principal")
	}
	g.POST(rpcPrefix+":method", func(c echo.Context) error {
		op, ok := admin.Lookup(c.Param("method"))
		whoAmI := c.Param("method") == whoAmIMethod
		if !ok && !whoAmI {
			return c.JSON(http.StatusNotFound, &admin.Error{Kind: admin.KindInvalid, Message: fmt.Sprintf("unknown admin method %q", c.Param("method"))})
		}
		cred, ok := Peer(c.Request().Context())
		if !ok {
			return c.JSON(http.StatusForbidden, &admin.Error{Kind: admin.KindForbidden, Message: "admin socket: the peer's credentials are unknown"})
		}
		if whoAmI {
			return h.whoAmI(c, cred)
		}
		body, err := io.ReadAll(io.LimitReader(c.Request().Body, maxRPCBody+1))
		if err != nil || len(body) > maxRPCBody {
			return c.JSON(http.StatusBadRequest, &admin.Error{Kind: admin.KindInvalid,
				Message: fmt.Sprintf("admin request body unreadable or larger than %d bytes", maxRPCBody)})
		}
		res, err := op.Call(c.Request().Context(), h.Service, h.Principal(cred), body)
		return WriteResult(c, h.logger(), op.Name, res, err)
	})
	return nil
}

func (h *Handler) logger() *slog.Logger {
	if h.Logger != nil {
		return h.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// WriteResult answers an operation's result res or its error err: an
// *admin.Error as JSON with its KindStatus (any other error is logged and
// answered as KindInternal), a Stream as JSON lines (writeStream), any
// other result as 200 JSON.
func WriteResult(c echo.Context, logger *slog.Logger, method string, res any, err error) error {
	if err != nil {
		var ae *admin.Error
		if !errors.As(err, &ae) {
			logger.Error("admin method failed", "method", method, "err", err)
			ae = &admin.Error{Kind: admin.KindInternal, Message: "internal error (see the signd log)"}
		}
		return c.JSON(KindStatus(ae.Kind), ae)
	}
	if st, ok := res.(admin.Stream); ok {
		return writeStream(c, logger, method, st)
	}
	return c.JSON(http.StatusOK, res)
}

// writeStream answers 200 with what st writes and, when st fails, ends
// the answer with a streamTrailer line. A stream that fails before its
// first byte (a refusal by role, a store that cannot be read) gets the
// error's own status instead, as any other method: nothing has been
// promised yet.
func writeStream(c echo.Context, logger *slog.Logger, method string, st admin.Stream) error {
	w := &lazyStream{res: c.Response()}
	err := st(w)
	if err != nil && !w.started {
		var ae *admin.Error
		if !errors.As(err, &ae) {
			logger.Error("admin method failed", "method", method, "err", err)
			ae = &admin.Error{Kind: admin.KindInternal, Message: "internal error (see the signd log)"}
		}
		return c.JSON(KindStatus(ae.Kind), ae)
	}
	w.start()
	if err != nil {
		logger.Warn("admin stream stopped", "method", method, "err", err)
		line, _ := json.Marshal(streamTrailer{Error: err.Error()})
		_, _ = c.Response().Write(append(line, '\n'))
	}
	return nil
}

// lazyStream sends the 200 and its content type with the first byte of a
// stream.
type lazyStream struct {
	res     *echo.Response
	started bool
}

func (w *lazyStream) start() {
	if !w.started {
		w.started = true
		w.res.Header().Set(echo.HeaderContentType, "application/x-ndjson")
		w.res.WriteHeader(http.StatusOK)
	}
}

func (w *lazyStream) Write(p []byte) (int, error) {
	w.start()
	return w.res.Write(p)
}
