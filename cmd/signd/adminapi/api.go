package adminapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/labstack/echo/v4"

	"github.com/signd/signd/admin"
	"github.com/signd/signd/cmd/signd/adminrpc"
)

// Prefix is the path of every route.
const Prefix = "/admin/api/v1"

// MaxBody bounds a request body: an identity proof, 10 MiB in base64, is
// the largest one (as on the admin socket).
const MaxBody = 16 << 20

// Handler serves admin.Service to the callers Gate let in.
type Handler struct {
	Service admin.Service
	Gate    *Gate
	Logger  *slog.Logger // nil = discard
}

func (h *Handler) logger() *slog.Logger {
	if h.Logger != nil {
		return h.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// route is one REST route: the operation it calls and how its request is
// made of the path, the query and the body.
type route struct {
	method, path, op string
	// request builds the operation's JSON request; nil = the body as it is.
	request func(c echo.Context, body []byte) ([]byte, error)
}

// routes is the API, one row a route; docs/admin-openapi.yaml describes
// the same.
func routes() []route {
	return []route{
		{http.MethodPost, "/users", "AddUser", nil},
		{http.MethodGet, "/users", "ListUsers", empty},
		{http.MethodGet, "/users/:name", "ShowUser", name("name")},
		{http.MethodDelete, "/users/:name", "RemoveUser", name("name")},
		{http.MethodPost, "/users/:name/enable", "SetUserStatus", status("name", true)},
		{http.MethodPost, "/users/:name/disable", "SetUserStatus", status("name", false)},
		{http.MethodPost, "/users/:name/unlock", "UnlockUser", name("name")},
		{http.MethodPost, "/users/:name/unlock-pin", "UnlockPIN", name("name")},
		{http.MethodPut, "/users/:name/password", "SetPassword", inBody("name", "username")},
		{http.MethodPut, "/users/:name/pin", "SetPIN", inBody("name", "username")},
		{http.MethodPost, "/users/:name/totp", "EnrollTOTP", inBody("name", "username")},
		{http.MethodDelete, "/users/:name/totp", "RemoveTOTP", name("name")},
		{http.MethodPost, "/users/:name/proofs", "AddProof", inBody("name", "username")},
		{http.MethodPost, "/users/:name/enrollment", "IssueEnrollment", name("name")},

		{http.MethodPost, "/clients", "AddClient", nil},
		{http.MethodGet, "/clients", "ListClients", empty},
		{http.MethodGet, "/clients/:id", "ShowClient", name("id")},
		{http.MethodDelete, "/clients/:id", "RemoveClient", name("id")},

		{http.MethodPost, "/credentials", "CreateCredential", nil},
		{http.MethodGet, "/credentials", "ListCredentials", ownerQuery},
		{http.MethodGet, "/credentials/:id", "ShowCredential", name("id")},
		{http.MethodDelete, "/credentials/:id", "RemoveCredential", name("id")},
		{http.MethodPost, "/credentials/:id/chain", "ImportCertificate", inBody("id", "id")},
		{http.MethodPost, "/credentials/:id/enable", "SetCredentialStatus", status("id", true)},
		{http.MethodPost, "/credentials/:id/disable", "SetCredentialStatus", status("id", false)},
		{http.MethodPut, "/credentials/:id/auth", "SetCredentialAuth", inBody("id", "id")},

		{http.MethodGet, "/audit/export", "AuditExport", exportQuery},
		{http.MethodGet, "/audit/verify", "AuditVerify", empty},
		{http.MethodGet, "/audit/key", "ShowAuditKey", empty},
		{http.MethodPost, "/audit/checkpoints", "AuditCheckpoint", emptyBody},
		{http.MethodPost, "/audit/checkpoints/verify", "AuditVerifyCheckpoint", nil},

		{http.MethodGet, "/pending", "ListPending", empty},
		{http.MethodPost, "/pending/:id/approve", "ApprovePending", name("id")},
		{http.MethodPost, "/pending/:id/reject", "RejectPending", name("id")},
	}
}

func invalid(format string, args ...any) error {
	return &admin.Error{Kind: admin.KindInvalid, Message: fmt.Sprintf(format, args...)}
}

// noBody refuses a body where the route takes none.
func noBody(body []byte) error {
	if len(body) > 0 {
		return invalid("this request takes no body")
	}
	return nil
}

// empty: the operation takes no parameters, the request no body.
func empty(c echo.Context, body []byte) ([]byte, error) {
	if err := noBody(body); err != nil {
		return nil, err
	}
	return []byte("{}"), nil
}

// emptyBody: no parameters; an empty body or {} (POST clients send one).
func emptyBody(_ echo.Context, body []byte) ([]byte, error) {
	if len(body) == 0 {
		return []byte("{}"), nil
	}
	return body, nil
}

// name: an admin.NameRequest of the path parameter param.
func name(param string) func(echo.Context, []byte) ([]byte, error) {
	return func(c echo.Context, body []byte) ([]byte, error) {
		if err := noBody(body); err != nil {
			return nil, err
		}
		return json.Marshal(admin.NameRequest{Name: c.Param(param)})
	}
}

// status: an admin.StatusRequest of the path parameter param.
func status(param string, enabled bool) func(echo.Context, []byte) ([]byte, error) {
	return func(c echo.Context, body []byte) ([]byte, error) {
		if err := noBody(body); err != nil {
			return nil, err
		}
		return json.Marshal(admin.StatusRequest{Name: c.Param(param), Enabled: enabled})
	}
}

// inBody: the body, a JSON object, with the path parameter param as its
// field field; the body must not name that field itself. The object is
// read as the operation's decoder reads it (JSON v2: names exactly, each
// once), so that no spelling of field in the body ("Username",
// "uſername", a second "username") reaches the operation in place of
// the path's.
func inBody(param, field string) func(echo.Context, []byte) ([]byte, error) {
	return func(c echo.Context, body []byte) ([]byte, error) {
		var obj map[string]jsontext.Value
		var syn *jsontext.SyntacticError
		err := jsonv2.Unmarshal(body, &obj)
		switch {
		case errors.As(err, &syn) && errors.Is(syn.Err, jsontext.ErrDuplicateName):
			return nil, invalid("malformed admin request: field %q given twice", syn.JSONPointer.LastToken())
		case err != nil || obj == nil:
			return nil, invalid("malformed admin request: the body must be a JSON object")
		}
		if _, ok := obj[field]; ok {
			return nil, invalid("malformed admin request: %q is taken from the path, not the body", field)
		}
		v, err := jsontext.AppendQuote(nil, c.Param(param))
		if err != nil {
			return nil, invalid("malformed admin request: the path's %s is not valid UTF-8", param)
		}
		obj[field] = v
		return jsonv2.Marshal(obj, jsonv2.Deterministic(true))
	}
}

// ownerQuery: ListCredentials of ?owner= ("" = every owner).
func ownerQuery(c echo.Context, body []byte) ([]byte, error) {
	if err := noBody(body); err != nil {
		return nil, err
	}
	if err := onlyQuery(c, "owner"); err != nil {
		return nil, err
	}
	return json.Marshal(admin.NameRequest{Name: c.QueryParam("owner")})
}

// exportQuery: the audit export's filters from the query: since, until
// (RFC 3339), kind (repeated), actor, target.
func exportQuery(c echo.Context, body []byte) ([]byte, error) {
	if err := noBody(body); err != nil {
		return nil, err
	}
	if err := onlyQuery(c, "since", "until", "kind", "actor", "target"); err != nil {
		return nil, err
	}
	q := c.QueryParams()
	var r admin.AuditExportRequest
	for _, t := range []struct {
		key string
		dst *time.Time
	}{{"since", &r.Since}, {"until", &r.Until}} {
		if v := q.Get(t.key); v != "" {
			tm, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				return nil, invalid("%s: %.64q is not an RFC 3339 time (2026-01-02T15:04:05Z)", t.key, v)
			}
			*t.dst = tm
		}
	}
	r.Kinds, r.Actor, r.Target = q["kind"], q.Get("actor"), q.Get("target")
	return json.Marshal(r)
}

// onlyQuery refuses query parameters other than names, and any given
// twice but "kind".
func onlyQuery(c echo.Context, names ...string) error {
	for k, vs := range c.QueryParams() {
		known := false
		for _, n := range names {
			known = known || k == n
		}
		switch {
		case !known:
			return invalid("unknown query parameter %.64q", k)
		case len(vs) > 1 && k != "kind":
			return invalid("query parameter %q given %d times", k, len(vs))
		}
	}
	return nil
}

// Mount registers the routes on g. Every route first names the caller
// from its verified certificate; a request that reaches it without one
// (not through Gate.Listen) is refused.
func (h *Handler) Mount(g *echo.Group) error {
	if h.Service == nil || h.Gate == nil {
		return errors.New("adminapi: Handler without Service or Gate")
	}
	for _, r := range routes() {
		op, ok := admin.Lookup(r.op)
		if !ok {
			return fmt.Errorf("adminapi: route %s %s calls unknown operation %s", r.method, r.path, r.op)
		}
		g.Add(r.method, Prefix+r.path, h.serve(op, r.request))
	}
	g.GET(Prefix+"/whoami", h.whoAmI)
	return nil
}

// whoAmIOp names GET /whoami in an admin_refused entry.
const whoAmIOp = "WhoAmI"

// principal is the caller, from the certificate the handshake verified,
// admitted by the gate again for this request (Gate.Admit: the CRL in
// force now). It answers the refusal itself, in the one error shape,
// and closes the connection after it; ok is false then.
func (h *Handler) principal(c echo.Context, op string) (by admin.Principal, ok bool, _ error) {
	req := c.Request()
	by, ok, err := h.Gate.Admit(req.Context(), req.TLS, req.RemoteAddr, op)
	if !ok {
		return by, false, c.JSON(http.StatusForbidden, errNoCert)
	}
	if err != nil {
		c.Response().Header().Set(echo.HeaderConnection, "close")
		return by, false, adminrpc.WriteResult(c, h.logger(), op, nil, err)
	}
	return by, true, nil
}

var errNoCert = &admin.Error{Kind: admin.KindForbidden, Message: "provisioning API: no verified client certificate"}

func (h *Handler) serve(op admin.Operation, request func(echo.Context, []byte) ([]byte, error)) echo.HandlerFunc {
	return func(c echo.Context) error {
		by, ok, err := h.principal(c, op.Name)
		if !ok {
			return err
		}
		body, err := readBody(c)
		if err == nil && request != nil {
			body, err = request(c, body)
		} else if err == nil && request == nil && len(body) == 0 {
			err = invalid("malformed admin request: the body must be a JSON object")
		}
		if err != nil {
			return adminrpc.WriteResult(c, h.logger(), op.Name, nil, err)
		}
		res, err := op.Call(c.Request().Context(), h.Service, by, body)
		return adminrpc.WriteResult(c, h.logger(), op.Name, res, err)
	}
}

// readBody reads at most MaxBody bytes of JSON; a larger body is refused
// as KindInvalid before the operation sees any of it.
func readBody(c echo.Context) ([]byte, error) {
	// Read up to the limit even when Content-Length announces more: a
	// client still writing its body would otherwise lose the answer to
	// the connection's reset.
	req := c.Request()
	body, err := io.ReadAll(io.LimitReader(req.Body, MaxBody+1))
	if err != nil {
		return nil, invalid("the request body could not be read: %v", err)
	}
	if len(body) > MaxBody {
		return nil, tooLarge
	}
	if len(body) > 0 {
		if mt, _, err := mime.ParseMediaType(req.Header.Get(echo.HeaderContentType)); err != nil || mt != echo.MIMEApplicationJSON {
			return nil, invalid("the request body must be application/json")
		}
	}
	return body, nil
}

var tooLarge = &admin.Error{Kind: admin.KindInvalid, Message: "the request body is larger than " + strconv.Itoa(MaxBody) + " bytes"}

// whoAmI says who the API takes the caller for; it needs no role.
func (h *Handler) whoAmI(c echo.Context) error {
	by, ok, err := h.principal(c, whoAmIOp)
	if !ok {
		return err
	}
	id := admin.Identity{Actor: by.Actor, Roles: by.Roles, SeparationOfDuties: true, Via: "api"}
	if id.Roles == nil {
		id.Roles = []admin.Role{}
	}
	return c.JSON(http.StatusOK, id)
}
