package adminrpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/signd/signd/admin"
)

// Remote sends operations to a running daemon over its admin socket.
type Remote struct {
	Socket string
	client *http.Client
}

var _ admin.Service = (*Remote)(nil)

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
// any other answer becomes the *admin.Error the daemon sent.
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
	var ae admin.Error
	if json.Unmarshal(data, &ae) != nil || ae.Message == "" {
		return nil, &admin.Error{Kind: admin.KindInternal, Message: fmt.Sprintf("admin socket %s: HTTP %d", r.Socket, res.StatusCode)}
	}
	return nil, &ae
}

func (r *Remote) unavailable(err error) *admin.Error {
	return &admin.Error{Kind: admin.KindUnavailable, Message: fmt.Sprintf("admin socket %s: %v", r.Socket, err)}
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

// AddUser implements admin.Service.
func (r *Remote) AddUser(ctx context.Context, _ admin.Principal, req admin.AddUserRequest) (*admin.UserView, error) {
	return callT[*admin.UserView](r, ctx, "AddUser", req)
}

// ListUsers implements admin.Service.
func (r *Remote) ListUsers(ctx context.Context, _ admin.Principal) ([]admin.UserView, error) {
	return callT[[]admin.UserView](r, ctx, "ListUsers", struct{}{})
}

// ShowUser implements admin.Service.
func (r *Remote) ShowUser(ctx context.Context, _ admin.Principal, username string) (*admin.UserView, error) {
	return callT[*admin.UserView](r, ctx, "ShowUser", admin.NameRequest{Name: username})
}

// SetUserStatus implements admin.Service.
func (r *Remote) SetUserStatus(ctx context.Context, _ admin.Principal, username string, enabled bool) (*admin.UserView, error) {
	return callT[*admin.UserView](r, ctx, "SetUserStatus", admin.StatusRequest{Name: username, Enabled: enabled})
}

// UnlockUser implements admin.Service.
func (r *Remote) UnlockUser(ctx context.Context, _ admin.Principal, username string) (*admin.UserView, error) {
	return callT[*admin.UserView](r, ctx, "UnlockUser", admin.NameRequest{Name: username})
}

// UnlockPIN implements admin.Service.
func (r *Remote) UnlockPIN(ctx context.Context, _ admin.Principal, username string) (*admin.UserView, error) {
	return callT[*admin.UserView](r, ctx, "UnlockPIN", admin.NameRequest{Name: username})
}

// IssueEnrollment implements admin.Service.
func (r *Remote) IssueEnrollment(ctx context.Context, _ admin.Principal, username string) (*admin.UserView, error) {
	return callT[*admin.UserView](r, ctx, "IssueEnrollment", admin.NameRequest{Name: username})
}

// WhoAmI returns who the daemon takes the caller for, with its roles.
func (r *Remote) WhoAmI(ctx context.Context) (*admin.Identity, error) {
	return callT[*admin.Identity](r, ctx, whoAmIMethod, struct{}{})
}

// SetPassword implements admin.Service.
func (r *Remote) SetPassword(ctx context.Context, _ admin.Principal, req admin.SetSecretRequest) (*admin.UserView, error) {
	return callT[*admin.UserView](r, ctx, "SetPassword", req)
}

// EnrollTOTP implements admin.Service.
func (r *Remote) EnrollTOTP(ctx context.Context, _ admin.Principal, req admin.EnrollTOTPRequest) (*admin.TOTPEnrollment, error) {
	return callT[*admin.TOTPEnrollment](r, ctx, "EnrollTOTP", req)
}

// RemoveTOTP implements admin.Service.
func (r *Remote) RemoveTOTP(ctx context.Context, _ admin.Principal, username string) (*admin.UserView, error) {
	return callT[*admin.UserView](r, ctx, "RemoveTOTP", admin.NameRequest{Name: username})
}

// SetPIN implements admin.Service.
func (r *Remote) SetPIN(ctx context.Context, _ admin.Principal, req admin.SetSecretRequest) (*admin.UserView, error) {
	return callT[*admin.UserView](r, ctx, "SetPIN", req)
}

// AddClient implements admin.Service.
func (r *Remote) AddClient(ctx context.Context, _ admin.Principal, req admin.AddClientRequest) (*admin.AddClientResult, error) {
	return callT[*admin.AddClientResult](r, ctx, "AddClient", req)
}

// ListClients implements admin.Service.
func (r *Remote) ListClients(ctx context.Context, _ admin.Principal) ([]admin.ClientView, error) {
	return callT[[]admin.ClientView](r, ctx, "ListClients", struct{}{})
}

// ShowClient implements admin.Service.
func (r *Remote) ShowClient(ctx context.Context, _ admin.Principal, id string) (*admin.ClientView, error) {
	return callT[*admin.ClientView](r, ctx, "ShowClient", admin.NameRequest{Name: id})
}

// RemoveClient implements admin.Service.
func (r *Remote) RemoveClient(ctx context.Context, _ admin.Principal, id string) (*admin.RemoveResult, error) {
	return callT[*admin.RemoveResult](r, ctx, "RemoveClient", admin.NameRequest{Name: id})
}

// RemoveUser implements admin.Service.
func (r *Remote) RemoveUser(ctx context.Context, _ admin.Principal, username string) (*admin.RemoveResult, error) {
	return callT[*admin.RemoveResult](r, ctx, "RemoveUser", admin.NameRequest{Name: username})
}

// RemoveCredential implements admin.Service.
func (r *Remote) RemoveCredential(ctx context.Context, _ admin.Principal, id string) (*admin.RemoveCredentialResult, error) {
	return callT[*admin.RemoveCredentialResult](r, ctx, "RemoveCredential", admin.NameRequest{Name: id})
}

// CreateCredential implements admin.Service.
func (r *Remote) CreateCredential(ctx context.Context, _ admin.Principal, req admin.CreateCredentialRequest) (*admin.CreateCredentialResult, error) {
	return callT[*admin.CreateCredentialResult](r, ctx, "CreateCredential", req)
}

// ImportCertificate implements admin.Service.
func (r *Remote) ImportCertificate(ctx context.Context, _ admin.Principal, req admin.ImportCertificateRequest) (*admin.CredentialView, error) {
	return callT[*admin.CredentialView](r, ctx, "ImportCertificate", req)
}

// ListCredentials implements admin.Service.
func (r *Remote) ListCredentials(ctx context.Context, _ admin.Principal, owner string) ([]admin.CredentialView, error) {
	return callT[[]admin.CredentialView](r, ctx, "ListCredentials", admin.NameRequest{Name: owner})
}

// ShowCredential implements admin.Service.
func (r *Remote) ShowCredential(ctx context.Context, _ admin.Principal, id string) (*admin.CredentialView, error) {
	return callT[*admin.CredentialView](r, ctx, "ShowCredential", admin.NameRequest{Name: id})
}

// SetCredentialAuth implements admin.Service.
func (r *Remote) SetCredentialAuth(ctx context.Context, _ admin.Principal, req admin.SetCredentialAuthRequest) (*admin.CredentialView, error) {
	return callT[*admin.CredentialView](r, ctx, "SetCredentialAuth", req)
}

// SetCredentialStatus implements admin.Service.
func (r *Remote) SetCredentialStatus(ctx context.Context, _ admin.Principal, id string, enabled bool) (*admin.CredentialView, error) {
	return callT[*admin.CredentialView](r, ctx, "SetCredentialStatus", admin.StatusRequest{Name: id, Enabled: enabled})
}

// AddProof implements admin.Service.
func (r *Remote) AddProof(ctx context.Context, _ admin.Principal, req admin.AddProofRequest) (*admin.UserView, error) {
	return callT[*admin.UserView](r, ctx, "AddProof", req)
}

// HSMInfo implements admin.Service.
func (r *Remote) HSMInfo(ctx context.Context, _ admin.Principal) (*admin.HSMInfoView, error) {
	return callT[*admin.HSMInfoView](r, ctx, "HSMInfo", struct{}{})
}

// CreateOIDCKey implements admin.Service.
func (r *Remote) CreateOIDCKey(ctx context.Context, _ admin.Principal, req admin.CreateOIDCKeyRequest) (*admin.OIDCKeyView, error) {
	return callT[*admin.OIDCKeyView](r, ctx, "CreateOIDCKey", req)
}

// ListOIDCKeys implements admin.Service.
func (r *Remote) ListOIDCKeys(ctx context.Context, _ admin.Principal) ([]admin.OIDCKeyView, error) {
	return callT[[]admin.OIDCKeyView](r, ctx, "ListOIDCKeys", struct{}{})
}

// RotateOIDCKeys implements admin.Service.
func (r *Remote) RotateOIDCKeys(ctx context.Context, _ admin.Principal, req admin.RotateOIDCKeysRequest) (*admin.RotateOIDCKeysResult, error) {
	return callT[*admin.RotateOIDCKeysResult](r, ctx, "RotateOIDCKeys", req)
}

// AuditVerify implements admin.Service.
func (r *Remote) AuditVerify(ctx context.Context, _ admin.Principal) (*admin.AuditReport, error) {
	return callT[*admin.AuditReport](r, ctx, "AuditVerify", struct{}{})
}

// AuditExport implements admin.Service; the daemon walks its own store and
// streams the entries.
func (r *Remote) AuditExport(ctx context.Context, _ admin.Principal, req admin.AuditExportRequest, w io.Writer) error {
	return r.stream(ctx, "AuditExport", req, w)
}

// EnrollTSA implements admin.Service.
func (r *Remote) EnrollTSA(ctx context.Context, _ admin.Principal, req admin.EnrollTSARequest) (*admin.EnrollTSAResult, error) {
	return callT[*admin.EnrollTSAResult](r, ctx, "EnrollTSA", req)
}

// ImportTSACertificate implements admin.Service.
func (r *Remote) ImportTSACertificate(ctx context.Context, _ admin.Principal, req admin.ImportTSACertificateRequest) (*admin.TSACertificateView, error) {
	return callT[*admin.TSACertificateView](r, ctx, "ImportTSACertificate", req)
}

// ListPending implements admin.Service.
func (r *Remote) ListPending(ctx context.Context, _ admin.Principal) ([]admin.PendingView, error) {
	return callT[[]admin.PendingView](r, ctx, "ListPending", struct{}{})
}

// ApprovePending implements admin.Service.
func (r *Remote) ApprovePending(ctx context.Context, _ admin.Principal, id string) (*admin.ApprovalResult, error) {
	return callT[*admin.ApprovalResult](r, ctx, "ApprovePending", admin.NameRequest{Name: id})
}

// RejectPending implements admin.Service.
func (r *Remote) RejectPending(ctx context.Context, _ admin.Principal, id string) (*admin.PendingView, error) {
	return callT[*admin.PendingView](r, ctx, "RejectPending", admin.NameRequest{Name: id})
}

// CreateAuditKey implements admin.Service.
func (r *Remote) CreateAuditKey(ctx context.Context, _ admin.Principal, req admin.CreateAuditKeyRequest) (*admin.AuditKeyView, error) {
	return callT[*admin.AuditKeyView](r, ctx, "CreateAuditKey", req)
}

// ShowAuditKey implements admin.Service.
func (r *Remote) ShowAuditKey(ctx context.Context, _ admin.Principal) (*admin.AuditKeyView, error) {
	return callT[*admin.AuditKeyView](r, ctx, "ShowAuditKey", struct{}{})
}

// AuditCheckpoint implements admin.Service.
func (r *Remote) AuditCheckpoint(ctx context.Context, _ admin.Principal) (*admin.CheckpointView, error) {
	return callT[*admin.CheckpointView](r, ctx, "AuditCheckpoint", struct{}{})
}

// AuditVerifyCheckpoint implements admin.Service.
func (r *Remote) AuditVerifyCheckpoint(ctx context.Context, _ admin.Principal, req admin.AuditVerifyCheckpointRequest) (*admin.CheckpointReport, error) {
	return callT[*admin.CheckpointReport](r, ctx, "AuditVerifyCheckpoint", req)
}
