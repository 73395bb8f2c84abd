package adminrpc

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/admin"
)

// recordingService is a admin.Service that records the request of each call and
// answers with empty results: FuzzRPC tests the decoding, not the
// operations.
type recordingService struct{ got any }

func (s *recordingService) rec(v any) { s.got = v }

func (s *recordingService) AddUser(_ context.Context, _ admin.Principal, r admin.AddUserRequest) (*admin.UserView, error) {
	s.rec(r)
	return &admin.UserView{}, nil
}
func (s *recordingService) ListUsers(_ context.Context, _ admin.Principal) ([]admin.UserView, error) {
	s.rec(struct{}{})
	return nil, nil
}
func (s *recordingService) ShowUser(_ context.Context, _ admin.Principal, n string) (*admin.UserView, error) {
	s.rec(admin.NameRequest{Name: n})
	return &admin.UserView{}, nil
}
func (s *recordingService) SetUserStatus(_ context.Context, _ admin.Principal, n string, e bool) (*admin.UserView, error) {
	s.rec(admin.StatusRequest{Name: n, Enabled: e})
	return &admin.UserView{}, nil
}
func (s *recordingService) UnlockUser(_ context.Context, _ admin.Principal, n string) (*admin.UserView, error) {
	s.rec(admin.NameRequest{Name: n})
	return &admin.UserView{}, nil
}
func (s *recordingService) UnlockPIN(_ context.Context, _ admin.Principal, n string) (*admin.UserView, error) {
	s.rec(admin.NameRequest{Name: n})
	return &admin.UserView{}, nil
}
func (s *recordingService) SetPassword(_ context.Context, _ admin.Principal, r admin.SetSecretRequest) (*admin.UserView, error) {
	s.rec(r)
	return &admin.UserView{}, nil
}
func (s *recordingService) SetPIN(_ context.Context, _ admin.Principal, r admin.SetSecretRequest) (*admin.UserView, error) {
	s.rec(r)
	return &admin.UserView{}, nil
}
func (s *recordingService) EnrollTOTP(_ context.Context, _ admin.Principal, r admin.EnrollTOTPRequest) (*admin.TOTPEnrollment, error) {
	s.rec(r)
	return &admin.TOTPEnrollment{}, nil
}
func (s *recordingService) RemoveTOTP(_ context.Context, _ admin.Principal, n string) (*admin.UserView, error) {
	s.rec(admin.NameRequest{Name: n})
	return &admin.UserView{}, nil
}
func (s *recordingService) AddProof(_ context.Context, _ admin.Principal, r admin.AddProofRequest) (*admin.UserView, error) {
	s.rec(r)
	return &admin.UserView{}, nil
}
func (s *recordingService) AddClient(_ context.Context, _ admin.Principal, r admin.AddClientRequest) (*admin.AddClientResult, error) {
	s.rec(r)
	return &admin.AddClientResult{}, nil
}
func (s *recordingService) ListClients(_ context.Context, _ admin.Principal) ([]admin.ClientView, error) {
	s.rec(struct{}{})
	return nil, nil
}
func (s *recordingService) ShowClient(_ context.Context, _ admin.Principal, n string) (*admin.ClientView, error) {
	s.rec(admin.NameRequest{Name: n})
	return &admin.ClientView{}, nil
}
func (s *recordingService) RemoveClient(_ context.Context, _ admin.Principal, n string) (*admin.RemoveResult, error) {
	s.rec(admin.NameRequest{Name: n})
	return &admin.RemoveResult{}, nil
}

func (s *recordingService) RemoveUser(_ context.Context, _ admin.Principal, n string) (*admin.RemoveResult, error) {
	s.rec(admin.NameRequest{Name: n})
	return &admin.RemoveResult{}, nil
}

func (s *recordingService) IssueEnrollment(_ context.Context, _ admin.Principal, n string) (*admin.UserView, error) {
	s.rec(admin.NameRequest{Name: n})
	return &admin.UserView{}, nil
}

func (s *recordingService) RemoveCredential(_ context.Context, _ admin.Principal, n string) (*admin.RemoveCredentialResult, error) {
	s.rec(admin.NameRequest{Name: n})
	return &admin.RemoveCredentialResult{}, nil
}
func (s *recordingService) CreateCredential(_ context.Context, _ admin.Principal, r admin.CreateCredentialRequest) (*admin.CreateCredentialResult, error) {
	s.rec(r)
	return &admin.CreateCredentialResult{}, nil
}
func (s *recordingService) ImportCertificate(_ context.Context, _ admin.Principal, r admin.ImportCertificateRequest) (*admin.CredentialView, error) {
	s.rec(r)
	return &admin.CredentialView{}, nil
}
func (s *recordingService) ListCredentials(_ context.Context, _ admin.Principal, n string) ([]admin.CredentialView, error) {
	s.rec(admin.NameRequest{Name: n})
	return nil, nil
}
func (s *recordingService) ShowCredential(_ context.Context, _ admin.Principal, n string) (*admin.CredentialView, error) {
	s.rec(admin.NameRequest{Name: n})
	return &admin.CredentialView{}, nil
}
func (s *recordingService) SetCredentialStatus(_ context.Context, _ admin.Principal, n string, e bool) (*admin.CredentialView, error) {
	s.rec(admin.StatusRequest{Name: n, Enabled: e})
	return &admin.CredentialView{}, nil
}
func (s *recordingService) SetCredentialAuth(_ context.Context, _ admin.Principal, r admin.SetCredentialAuthRequest) (*admin.CredentialView, error) {
	s.rec(r)
	return &admin.CredentialView{}, nil
}
func (s *recordingService) CreateAuditKey(_ context.Context, _ admin.Principal, r admin.CreateAuditKeyRequest) (*admin.AuditKeyView, error) {
	s.rec(r)
	return &admin.AuditKeyView{}, nil
}
func (s *recordingService) ShowAuditKey(_ context.Context, _ admin.Principal) (*admin.AuditKeyView, error) {
	s.rec(struct{}{})
	return &admin.AuditKeyView{}, nil
}
func (s *recordingService) AuditCheckpoint(_ context.Context, _ admin.Principal) (*admin.CheckpointView, error) {
	s.rec(struct{}{})
	return &admin.CheckpointView{}, nil
}
func (s *recordingService) AuditVerifyCheckpoint(_ context.Context, _ admin.Principal, r admin.AuditVerifyCheckpointRequest) (*admin.CheckpointReport, error) {
	s.rec(r)
	return &admin.CheckpointReport{}, nil
}
func (s *recordingService) CreateOIDCKey(_ context.Context, _ admin.Principal, r admin.CreateOIDCKeyRequest) (*admin.OIDCKeyView, error) {
	s.rec(r)
	return &admin.OIDCKeyView{}, nil
}
func (s *recordingService) ListOIDCKeys(_ context.Context, _ admin.Principal) ([]admin.OIDCKeyView, error) {
	s.rec(struct{}{})
	return nil, nil
}
func (s *recordingService) RotateOIDCKeys(_ context.Context, _ admin.Principal, r admin.RotateOIDCKeysRequest) (*admin.RotateOIDCKeysResult, error) {
	s.rec(r)
	return &admin.RotateOIDCKeysResult{}, nil
}
func (s *recordingService) HSMInfo(_ context.Context, _ admin.Principal) (*admin.HSMInfoView, error) {
	s.rec(struct{}{})
	return &admin.HSMInfoView{}, nil
}
func (s *recordingService) EnrollTSA(_ context.Context, _ admin.Principal, r admin.EnrollTSARequest) (*admin.EnrollTSAResult, error) {
	s.rec(r)
	return &admin.EnrollTSAResult{}, nil
}
func (s *recordingService) ImportTSACertificate(_ context.Context, _ admin.Principal, r admin.ImportTSACertificateRequest) (*admin.TSACertificateView, error) {
	s.rec(r)
	return &admin.TSACertificateView{}, nil
}
func (s *recordingService) AuditVerify(_ context.Context, _ admin.Principal) (*admin.AuditReport, error) {
	s.rec(struct{}{})
	return &admin.AuditReport{}, nil
}
func (s *recordingService) AuditExport(_ context.Context, _ admin.Principal, r admin.AuditExportRequest, _ io.Writer) error {
	s.rec(r)
	return nil
}
func (s *recordingService) ListPending(_ context.Context, _ admin.Principal) ([]admin.PendingView, error) {
	s.rec(struct{}{})
	return nil, nil
}
func (s *recordingService) ApprovePending(_ context.Context, _ admin.Principal, id string) (*admin.ApprovalResult, error) {
	s.rec(admin.NameRequest{Name: id})
	return &admin.ApprovalResult{}, nil
}
func (s *recordingService) RejectPending(_ context.Context, _ admin.Principal, id string) (*admin.PendingView, error) {
	s.rec(admin.NameRequest{Name: id})
	return &admin.PendingView{}, nil
}

// sameRequest compares what the service got with what encoding/json
// reads; times are the same instant (a zone offset decodes to a new
// *time.Location each time).
func sameRequest(a, b any) bool {
	if x, ok := a.(admin.AuditExportRequest); ok {
		y, ok := b.(admin.AuditExportRequest)
		return ok && x.Since.Equal(y.Since)
	}
	return reflect.DeepEqual(a, b)
}

// FuzzRPC posts any body to any admin method of the admin socket's
// handler. The answer is 200, or 400 invalid / 404 unknown method with a
// message, never a 5xx. A call reaches the service only with a body that
// is exactly one JSON value naming only fields of the method's request,
// and the service gets what encoding/json reads from it; Remote's own
// encoding of that request decodes to the same request (round trip).
func FuzzRPC(f *testing.F) {
	svc := &recordingService{}
	e := echo.New()
	if err := (&Handler{Service: svc, Principal: everyRole}).Mount(e.Group("")); err != nil {
		f.Fatal(err)
	}
	types := map[string]reflect.Type{}
	for name, v := range map[string]any{
		"AddUser": admin.AddUserRequest{}, "ListUsers": struct{}{}, "ShowUser": admin.NameRequest{}, "SetUserStatus": admin.StatusRequest{},
		"UnlockUser": admin.NameRequest{}, "UnlockPIN": admin.NameRequest{}, "SetPassword": admin.SetSecretRequest{}, "SetPIN": admin.SetSecretRequest{}, "AddProof": admin.AddProofRequest{},
		"AddClient": admin.AddClientRequest{}, "ListClients": struct{}{}, "ShowClient": admin.NameRequest{}, "RemoveClient": admin.NameRequest{},
		"CreateCredential": admin.CreateCredentialRequest{}, "ImportCertificate": admin.ImportCertificateRequest{},
		"ListCredentials": admin.NameRequest{}, "ShowCredential": admin.NameRequest{}, "SetCredentialStatus": admin.StatusRequest{},
		"SetCredentialAuth": admin.SetCredentialAuthRequest{},
		"CreateOIDCKey":     admin.CreateOIDCKeyRequest{}, "ListOIDCKeys": struct{}{}, "RotateOIDCKeys": admin.RotateOIDCKeysRequest{},
		"RemoveUser": admin.NameRequest{}, "RemoveCredential": admin.NameRequest{}, "IssueEnrollment": admin.NameRequest{},
		"EnrollTOTP": admin.EnrollTOTPRequest{}, "RemoveTOTP": admin.NameRequest{},
		"HSMInfo":   struct{}{},
		"EnrollTSA": admin.EnrollTSARequest{}, "ImportTSACertificate": admin.ImportTSACertificateRequest{},
		"AuditVerify": struct{}{}, "AuditExport": admin.AuditExportRequest{},
		"ListPending": struct{}{}, "ApprovePending": admin.NameRequest{}, "RejectPending": admin.NameRequest{},
		"CreateAuditKey": admin.CreateAuditKeyRequest{}, "ShowAuditKey": struct{}{}, "AuditCheckpoint": struct{}{},
		"AuditVerifyCheckpoint": admin.AuditVerifyCheckpointRequest{},
	} {
		types[name] = reflect.TypeOf(v)
	}
	if len(types) != len(admin.Operations()) {
		f.Fatalf("the fuzz target knows %d methods, the handler %d", len(types), len(admin.Operations()))
	}
	// What Remote sends for each method.
	for _, s := range []struct {
		method string
		req    any
	}{
		{"AddUser", admin.AddUserRequest{Username: "alice", Password: "correct horse", PIN: "1234", Email: "alice@example.com", EmailVerified: true, Claims: map[string]string{"given_name": "Alice"}}},
		{"ListUsers", struct{}{}}, {"ShowUser", admin.NameRequest{Name: "alice"}}, {"SetUserStatus", admin.StatusRequest{Name: "alice", Enabled: true}},
		{"SetPIN", admin.SetSecretRequest{Username: "alice", Secret: "4321"}}, {"AddProof", admin.AddProofRequest{Username: "alice", ID: "passport", ContentType: "application/pdf", Content: []byte("%PDF-1.7")}},
		{"AddClient", admin.AddClientRequest{ID: "rp", Name: "RP", RedirectURIs: []string{"https://rp.example/cb"}, Scopes: []string{"service", "credential"}, RequirePKCE: true, IDTokenAlg: "ES256"}},
		{"CreateCredential", admin.CreateCredentialRequest{User: "alice", Algo: "rsa-3072", Subject: "CN=Alice,O=Example B.V.,C=NL", Multisign: 10, AuthMode: "explicit"}},
		{"SetCredentialAuth", admin.SetCredentialAuthRequest{ID: "kr3e3rdpe6muvlifxu2m3wpecu", Multisign: 5, AuthMode: "oauth2code"}},
		{"ImportCertificate", admin.ImportCertificateRequest{ID: "kr3e3rdpe6muvlifxu2m3wpecu", ChainPEM: "-----BEGIN CERTIFICATE-----\nMAA=\n-----END CERTIFICATE-----\n"}},
		{"SetCredentialStatus", admin.StatusRequest{Name: "kr3e3rdpe6muvlifxu2m3wpecu", Enabled: false}}, {"RotateOIDCKeys", admin.RotateOIDCKeysRequest{Alg: "PS256", Force: true}}, {"CreateOIDCKey", admin.CreateOIDCKeyRequest{Alg: "ES256"}},
		{"EnrollTOTP", admin.EnrollTOTPRequest{Username: "alice", Issuer: "signd"}}, {"RemoveTOTP", admin.NameRequest{Name: "alice"}},
		{"UnlockUser", admin.NameRequest{Name: "alice"}}, {"UnlockPIN", admin.NameRequest{Name: "alice"}}, {"IssueEnrollment", admin.NameRequest{Name: "alice"}},
		{"EnrollTSA", admin.EnrollTSARequest{Algo: "rsa-3072", Subject: "CN=signd TSA,O=Example B.V.,C=NL"}},
		{"ImportTSACertificate", admin.ImportTSACertificateRequest{KeyID: "00ff", CertPEM: "-----BEGIN CERTIFICATE-----\nMAA=\n-----END CERTIFICATE-----\n"}},
		{"AuditVerify", struct{}{}}, {"AuditExport", admin.AuditExportRequest{Since: time.Date(2026, 1, 2, 15, 4, 5, 0, time.FixedZone("", 3600))}},
		{"ListPending", struct{}{}}, {"ApprovePending", admin.NameRequest{Name: "kr3e3rdpe6muvlifxu2m3wpecu"}}, {"RejectPending", admin.NameRequest{Name: "kr3e3rdpe6muvlifxu2m3wpecu"}},
	} {
		body, _ := json.Marshal(s.req)
		f.Add(s.method, body)
	}
	f.Add("ShowUser", []byte(`{"Name":"alice","Extra":1}`))
	f.Add("ShowUser", []byte(`{"Name":"alice"} {"Name":"root"}`))
	f.Add("ShowUser", []byte(`null`))
	f.Add("NoSuchMethod", []byte(`{}`))
	f.Add(whoAmIMethod, []byte(`{}`))
	f.Add(whoAmIMethod, []byte(`{"Name":"root"}`))
	f.Fuzz(func(t *testing.T, method string, body []byte) {
		if strings.Contains(method, "/") || method == "" {
			return // not one path segment
		}
		svc.got = nil
		req := httptest.NewRequest(http.MethodPost, rpcPrefix, bytes.NewReader(body))
		req.URL = &url.URL{Path: rpcPrefix + method}
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, withPeer(req))
		if method == whoAmIMethod { // outside the service: answers who asks, or 400
			var id admin.Identity
			var ae admin.Error
			if svc.got != nil || !(rec.Code == http.StatusOK && json.Unmarshal(rec.Body.Bytes(), &id) == nil && id.Actor != "" ||
				rec.Code == http.StatusBadRequest && json.Unmarshal(rec.Body.Bytes(), &ae) == nil && ae.Kind == admin.KindInvalid) {
				t.Fatalf("%s %q: %d %s", method, body, rec.Code, rec.Body)
			}
			return
		}
		typ, known := types[method]
		if rec.Code != http.StatusOK {
			var ae admin.Error
			if json.Unmarshal(rec.Body.Bytes(), &ae) != nil || ae.Kind != admin.KindInvalid || ae.Message == "" || svc.got != nil ||
				(rec.Code != http.StatusBadRequest || !known) && (rec.Code != http.StatusNotFound || known) {
				t.Fatalf("%s %q: %d %s", method, body, rec.Code, rec.Body)
			}
			return
		}
		if !known || svc.got == nil {
			t.Fatalf("%s %q: 200 without a call", method, body)
		}
		dec := json.NewDecoder(bytes.NewReader(body))
		var first json.RawMessage
		if err := dec.Decode(&first); err != nil || dec.More() || !json.Valid(body) {
			t.Fatalf("%s %q: accepted, but the body is not exactly one JSON value", method, body)
		}
		ref := reflect.New(typ)
		if err := json.Unmarshal(body, ref.Interface()); err != nil || !sameRequest(ref.Elem().Interface(), svc.got) {
			t.Fatalf("%s %q: the service got %+v, encoding/json reads %+v (%v)", method, body, svc.got, ref.Elem().Interface(), err)
		}
		// Round trip: what Remote would send for this request.
		sent, err := json.Marshal(svc.got)
		if err != nil {
			t.Fatalf("%s: %+v does not encode: %v", method, svc.got, err)
		}
		got := svc.got
		svc.got = nil
		rec = httptest.NewRecorder()
		req = httptest.NewRequest(http.MethodPost, rpcPrefix, bytes.NewReader(sent))
		req.URL = &url.URL{Path: rpcPrefix + method}
		e.ServeHTTP(rec, withPeer(req))
		again, _ := json.Marshal(svc.got)
		if rec.Code != http.StatusOK || !bytes.Equal(again, sent) {
			t.Fatalf("%s %+v: sent as %s, decoded as %s (%d)", method, got, sent, again, rec.Code)
		}
	})
}
