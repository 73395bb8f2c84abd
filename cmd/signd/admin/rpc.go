package admin

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
)

// The admin socket speaks JSON over HTTP: POST /admin/v1/<Method> with the
// request as the body; a success is 200 with the result, a failure is the
// *Error as JSON with a status derived from its Kind. A method whose answer
// is a stream (AuditExport) answers 200 with JSON lines
// (application/x-ndjson); when it fails after the answer started, its last
// line is {"error": message}.

const rpcPrefix = "/admin/v1/"

// maxRPCBody bounds admin request bodies (a proof document, 10 MiB in
// base64, is the largest one).
const maxRPCBody = 16 << 20

type (
	nameReq   struct{ Name string }
	statusReq struct {
		Name    string
		Enabled bool
	}
)

// endpoints maps method names to adapters over a Service. The same table
// drives the Handler (server) and documents what Remote sends.
func endpoints(s Service) map[string]func(context.Context, json.RawMessage) (any, error) {
	return map[string]func(context.Context, json.RawMessage) (any, error){
		"AddUser":   decode(func(ctx context.Context, r AddUserRequest) (any, error) { return s.AddUser(ctx, r) }),
		"ListUsers": decode(func(ctx context.Context, _ struct{}) (any, error) { return s.ListUsers(ctx) }),
		"ShowUser":  decode(func(ctx context.Context, r nameReq) (any, error) { return s.ShowUser(ctx, r.Name) }),
		"SetUserStatus": decode(func(ctx context.Context, r statusReq) (any, error) {
			return s.SetUserStatus(ctx, r.Name, r.Enabled)
		}),
		"UnlockUser":  decode(func(ctx context.Context, r nameReq) (any, error) { return s.UnlockUser(ctx, r.Name) }),
		"SetPassword": decode(func(ctx context.Context, r SetSecretRequest) (any, error) { return s.SetPassword(ctx, r) }),
		"SetPIN":      decode(func(ctx context.Context, r SetSecretRequest) (any, error) { return s.SetPIN(ctx, r) }),
		"EnrollTOTP":  decode(func(ctx context.Context, r EnrollTOTPRequest) (any, error) { return s.EnrollTOTP(ctx, r) }),
		"RemoveTOTP":  decode(func(ctx context.Context, r nameReq) (any, error) { return s.RemoveTOTP(ctx, r.Name) }),
		"AddProof":    decode(func(ctx context.Context, r AddProofRequest) (any, error) { return s.AddProof(ctx, r) }),
		"AddClient":   decode(func(ctx context.Context, r AddClientRequest) (any, error) { return s.AddClient(ctx, r) }),
		"ListClients": decode(func(ctx context.Context, _ struct{}) (any, error) { return s.ListClients(ctx) }),
		"ShowClient":  decode(func(ctx context.Context, r nameReq) (any, error) { return s.ShowClient(ctx, r.Name) }),
		"RemoveClient": decode(func(ctx context.Context, r nameReq) (any, error) {
			return s.RemoveClient(ctx, r.Name)
		}),
		"RemoveUser": decode(func(ctx context.Context, r nameReq) (any, error) {
			return s.RemoveUser(ctx, r.Name)
		}),
		"CreateCredential": decode(func(ctx context.Context, r CreateCredentialRequest) (any, error) {
			return s.CreateCredential(ctx, r)
		}),
		"ImportCertificate": decode(func(ctx context.Context, r ImportCertificateRequest) (any, error) {
			return s.ImportCertificate(ctx, r)
		}),
		"ListCredentials": decode(func(ctx context.Context, r nameReq) (any, error) { return s.ListCredentials(ctx, r.Name) }),
		"ShowCredential":  decode(func(ctx context.Context, r nameReq) (any, error) { return s.ShowCredential(ctx, r.Name) }),
		"SetCredentialStatus": decode(func(ctx context.Context, r statusReq) (any, error) {
			return s.SetCredentialStatus(ctx, r.Name, r.Enabled)
		}),
		"SetCredentialAuth": decode(func(ctx context.Context, r SetCredentialAuthRequest) (any, error) {
			return s.SetCredentialAuth(ctx, r)
		}),
		"RemoveCredential": decode(func(ctx context.Context, r nameReq) (any, error) {
			return s.RemoveCredential(ctx, r.Name)
		}),
		"CreateOIDCKey": decode(func(ctx context.Context, r CreateOIDCKeyRequest) (any, error) { return s.CreateOIDCKey(ctx, r) }),
		"ListOIDCKeys":  decode(func(ctx context.Context, _ struct{}) (any, error) { return s.ListOIDCKeys(ctx) }),
		"RotateOIDCKeys": decode(func(ctx context.Context, r RotateOIDCKeysRequest) (any, error) {
			return s.RotateOIDCKeys(ctx, r)
		}),
		"HSMInfo":   decode(func(ctx context.Context, _ struct{}) (any, error) { return s.HSMInfo(ctx) }),
		"EnrollTSA": decode(func(ctx context.Context, r EnrollTSARequest) (any, error) { return s.EnrollTSA(ctx, r) }),
		"ImportTSACertificate": decode(func(ctx context.Context, r ImportTSACertificateRequest) (any, error) {
			return s.ImportTSACertificate(ctx, r)
		}),
		"AuditVerify": decode(func(ctx context.Context, _ struct{}) (any, error) { return s.AuditVerify(ctx) }),
		"AuditExport": decode(func(ctx context.Context, r AuditExportRequest) (any, error) {
			return stream(func(w io.Writer) error { return s.AuditExport(ctx, r, w) }), nil
		}),
	}
}

// stream is an endpoint's answer that is written as JSON lines rather than
// encoded as one JSON value.
type stream func(w io.Writer) error

// streamTrailer is the last line of a stream that failed; a stream's lines
// are JSON objects that never start like it.
type streamTrailer struct {
	Error string `json:"error"`
}

var streamTrailerPrefix = []byte(`{"error":`)

func decode[R any](fn func(context.Context, R) (any, error)) func(context.Context, json.RawMessage) (any, error) {
	return func(ctx context.Context, raw json.RawMessage) (any, error) {
		var r R
		dec := json.NewDecoder(strings.NewReader(string(raw)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			return nil, errorf(KindInvalid, "malformed admin request: %v", err)
		}
		// One JSON value, nothing after it: a second value would be
		// silently ignored.
		if _, err := dec.Token(); err != io.EOF {
			return nil, errorf(KindInvalid, "malformed admin request: data after the JSON value")
		}
		return fn(ctx, r)
	}
}

func kindStatus(k Kind) int {
	switch k {
	case KindInvalid:
		return http.StatusBadRequest
	case KindNotFound:
		return http.StatusNotFound
	case KindExists, KindConflict:
		return http.StatusConflict
	case KindUnavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// Handler serves a Service on the admin socket.
type Handler struct {
	Service Service
	Logger  *slog.Logger
}

// Mount registers the admin routes on g at their paths (the daemon passes
// the admin socket's root group).
func (h *Handler) Mount(g *echo.Group) error {
	eps := endpoints(h.Service)
	g.POST(rpcPrefix+":method", func(c echo.Context) error {
		fn, ok := eps[c.Param("method")]
		if !ok {
			return c.JSON(http.StatusNotFound, errorf(KindInvalid, "unknown admin method %q", c.Param("method")))
		}
		body, err := io.ReadAll(io.LimitReader(c.Request().Body, maxRPCBody+1))
		if err != nil || len(body) > maxRPCBody {
			return c.JSON(http.StatusBadRequest, errorf(KindInvalid, "admin request body unreadable or larger than %d bytes", maxRPCBody))
		}
		res, err := fn(c.Request().Context(), body)
		if err != nil {
			var ae *Error
			if !errors.As(err, &ae) {
				if h.Logger != nil {
					h.Logger.Error("admin method failed", "method", c.Param("method"), "err", err)
				}
				ae = errorf(KindInternal, "internal error (see the signd log)")
			}
			return c.JSON(kindStatus(ae.Kind), ae)
		}
		if st, ok := res.(stream); ok {
			h.writeStream(c, st)
			return nil
		}
		return c.JSON(http.StatusOK, res)
	})
	return nil
}

// writeStream answers 200 with what st writes and, when st fails, ends
// the answer with a streamTrailer line.
func (h *Handler) writeStream(c echo.Context, st stream) {
	c.Response().Header().Set(echo.HeaderContentType, "application/x-ndjson")
	c.Response().WriteHeader(http.StatusOK)
	if err := st(c.Response()); err != nil {
		if h.Logger != nil {
			h.Logger.Warn("admin stream stopped", "method", c.Param("method"), "err", err)
		}
		line, _ := json.Marshal(streamTrailer{Error: err.Error()})
		_, _ = c.Response().Write(append(line, '\n'))
	}
}

// Remote sends operations to a running daemon over its admin socket.
type Remote struct {
	Socket string
	client *http.Client
}

var _ Service = (*Remote)(nil)

// Dial returns a Remote when a daemon trust accepts answers on socket. It
// returns (nil, nil) when nothing listens there (no file, or a stale
// socket), so the caller can fall back to Local, and an error when the
// socket or the process behind it is not trusted (see Trust). Every
// connection the Remote opens later is checked the same way before
// anything is sent on it.
func Dial(socket string, trust Trust) (*Remote, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	conn, err := trust.dial(ctx, socket)
	if errors.Is(err, errNoDaemon) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	conn.Close()
	r := &Remote{Socket: socket}
	r.client = &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			c, err := trust.dial(ctx, socket)
			if errors.Is(err, errNoDaemon) {
				return nil, fmt.Errorf("admin socket %s: the daemon is gone", socket)
			}
			return c, err
		},
	}}
	return r, nil
}

// HTTPClient returns the client r sends requests with; its connections
// are checked like Dial's.
func (r *Remote) HTTPClient() *http.Client {
	return r.client
}

// post sends req to method and returns the answer when it is a success;
// any other answer becomes the *Error the daemon sent.
func (r *Remote) post(ctx context.Context, method string, req any) (*http.Response, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://signd"+rpcPrefix+method, strings.NewReader(string(body)))
	if err != nil {
		return nil, err
	}
	hr.Header.Set("Content-Type", "application/json")
	res, err := r.client.Do(hr)
	if err != nil {
		return nil, r.unavailable(err)
	}
	if res.StatusCode == http.StatusOK {
		return res, nil
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, 64<<20))
	if err != nil {
		return nil, r.unavailable(err)
	}
	var ae Error
	if json.Unmarshal(data, &ae) != nil || ae.Message == "" {
		return nil, &Error{Kind: KindInternal, Message: fmt.Sprintf("admin socket %s: HTTP %d", r.Socket, res.StatusCode)}
	}
	return nil, &ae
}

func (r *Remote) unavailable(err error) *Error {
	return &Error{Kind: KindUnavailable, Message: fmt.Sprintf("admin socket %s: %v", r.Socket, err)}
}

func (r *Remote) call(ctx context.Context, method string, req, resp any) error {
	res, err := r.post(ctx, method, req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, 64<<20))
	if err != nil {
		return r.unavailable(err)
	}
	if resp == nil {
		return nil
	}
	return json.Unmarshal(data, resp)
}

// stream copies the lines of method's streamed answer to w. A trailer line
// ends it with the daemon's error.
func (r *Remote) stream(ctx context.Context, method string, req any, w io.Writer) error {
	res, err := r.post(ctx, method, req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if bytes.HasPrefix(line, streamTrailerPrefix) {
			var t streamTrailer
			_ = json.Unmarshal(line, &t)
			return errors.New(t.Error)
		}
		if _, err := w.Write(append(line, '\n')); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("admin socket: %w", err)
	}
	return nil
}

func callT[T any](r *Remote, ctx context.Context, method string, req any) (T, error) {
	var out T
	err := r.call(ctx, method, req, &out)
	return out, err
}

// AddUser implements Service.
func (r *Remote) AddUser(ctx context.Context, req AddUserRequest) (*UserView, error) {
	return callT[*UserView](r, ctx, "AddUser", req)
}

// ListUsers implements Service.
func (r *Remote) ListUsers(ctx context.Context) ([]UserView, error) {
	return callT[[]UserView](r, ctx, "ListUsers", struct{}{})
}

// ShowUser implements Service.
func (r *Remote) ShowUser(ctx context.Context, username string) (*UserView, error) {
	return callT[*UserView](r, ctx, "ShowUser", nameReq{username})
}

// SetUserStatus implements Service.
func (r *Remote) SetUserStatus(ctx context.Context, username string, enabled bool) (*UserView, error) {
	return callT[*UserView](r, ctx, "SetUserStatus", statusReq{username, enabled})
}

// UnlockUser implements Service.
func (r *Remote) UnlockUser(ctx context.Context, username string) (*UserView, error) {
	return callT[*UserView](r, ctx, "UnlockUser", nameReq{username})
}

// SetPassword implements Service.
func (r *Remote) SetPassword(ctx context.Context, req SetSecretRequest) (*UserView, error) {
	return callT[*UserView](r, ctx, "SetPassword", req)
}

// EnrollTOTP implements Service.
func (r *Remote) EnrollTOTP(ctx context.Context, req EnrollTOTPRequest) (*TOTPEnrollment, error) {
	return callT[*TOTPEnrollment](r, ctx, "EnrollTOTP", req)
}

// RemoveTOTP implements Service.
func (r *Remote) RemoveTOTP(ctx context.Context, username string) (*UserView, error) {
	return callT[*UserView](r, ctx, "RemoveTOTP", nameReq{username})
}

// SetPIN implements Service.
func (r *Remote) SetPIN(ctx context.Context, req SetSecretRequest) (*UserView, error) {
	return callT[*UserView](r, ctx, "SetPIN", req)
}

// AddClient implements Service.
func (r *Remote) AddClient(ctx context.Context, req AddClientRequest) (*AddClientResult, error) {
	return callT[*AddClientResult](r, ctx, "AddClient", req)
}

// ListClients implements Service.
func (r *Remote) ListClients(ctx context.Context) ([]ClientView, error) {
	return callT[[]ClientView](r, ctx, "ListClients", struct{}{})
}

// ShowClient implements Service.
func (r *Remote) ShowClient(ctx context.Context, id string) (*ClientView, error) {
	return callT[*ClientView](r, ctx, "ShowClient", nameReq{id})
}

// RemoveClient implements Service.
func (r *Remote) RemoveClient(ctx context.Context, id string) (*RemoveResult, error) {
	return callT[*RemoveResult](r, ctx, "RemoveClient", nameReq{id})
}

// RemoveUser implements Service.
func (r *Remote) RemoveUser(ctx context.Context, username string) (*RemoveResult, error) {
	return callT[*RemoveResult](r, ctx, "RemoveUser", nameReq{username})
}

// RemoveCredential implements Service.
func (r *Remote) RemoveCredential(ctx context.Context, id string) (*RemoveCredentialResult, error) {
	return callT[*RemoveCredentialResult](r, ctx, "RemoveCredential", nameReq{id})
}

// CreateCredential implements Service.
func (r *Remote) CreateCredential(ctx context.Context, req CreateCredentialRequest) (*CreateCredentialResult, error) {
	return callT[*CreateCredentialResult](r, ctx, "CreateCredential", req)
}

// ImportCertificate implements Service.
func (r *Remote) ImportCertificate(ctx context.Context, req ImportCertificateRequest) (*CredentialView, error) {
	return callT[*CredentialView](r, ctx, "ImportCertificate", req)
}

// ListCredentials implements Service.
func (r *Remote) ListCredentials(ctx context.Context, owner string) ([]CredentialView, error) {
	return callT[[]CredentialView](r, ctx, "ListCredentials", nameReq{owner})
}

// ShowCredential implements Service.
func (r *Remote) ShowCredential(ctx context.Context, id string) (*CredentialView, error) {
	return callT[*CredentialView](r, ctx, "ShowCredential", nameReq{id})
}

// SetCredentialAuth implements Service.
func (r *Remote) SetCredentialAuth(ctx context.Context, req SetCredentialAuthRequest) (*CredentialView, error) {
	return callT[*CredentialView](r, ctx, "SetCredentialAuth", req)
}

// SetCredentialStatus implements Service.
func (r *Remote) SetCredentialStatus(ctx context.Context, id string, enabled bool) (*CredentialView, error) {
	return callT[*CredentialView](r, ctx, "SetCredentialStatus", statusReq{id, enabled})
}

// AddProof implements Service.
func (r *Remote) AddProof(ctx context.Context, req AddProofRequest) (*UserView, error) {
	return callT[*UserView](r, ctx, "AddProof", req)
}

// HSMInfo implements Service.
func (r *Remote) HSMInfo(ctx context.Context) (*HSMInfoView, error) {
	return callT[*HSMInfoView](r, ctx, "HSMInfo", struct{}{})
}

// CreateOIDCKey implements Service.
func (r *Remote) CreateOIDCKey(ctx context.Context, req CreateOIDCKeyRequest) (*OIDCKeyView, error) {
	return callT[*OIDCKeyView](r, ctx, "CreateOIDCKey", req)
}

// ListOIDCKeys implements Service.
func (r *Remote) ListOIDCKeys(ctx context.Context) ([]OIDCKeyView, error) {
	return callT[[]OIDCKeyView](r, ctx, "ListOIDCKeys", struct{}{})
}

// RotateOIDCKeys implements Service.
func (r *Remote) RotateOIDCKeys(ctx context.Context, req RotateOIDCKeysRequest) (*RotateOIDCKeysResult, error) {
	return callT[*RotateOIDCKeysResult](r, ctx, "RotateOIDCKeys", req)
}
