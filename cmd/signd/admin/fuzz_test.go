package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/oidc"
	"github.com/signd/signd/store"
)

// FuzzValidateClaims checks identity attributes as `signd user add
// --claims` and the admin API take them. Accepted attributes are known
// keys with printable values of 1–256 bytes (dates as YYYY-MM-DD), pass
// the store's own validation of a user, and are what /userinfo releases
// for the scopes that cover them.
func FuzzValidateClaims(f *testing.F) {
	for _, s := range []string{
		`{"given_name":"Alice","last_name":"Jansen","birthdate":"1990-02-03","birthplace":"Utrecht","nationality":"NL",` +
			`"document_type":"passport","id_number":"NXC8R1234","nl_brp_voornaam":"Alice","nl_brp_voorvoegsel":"van",` +
			`"nl_brp_geslachtsnaam":"van Dam","nl_brp_geslachtsnaam_zonder_voorvoegsel":"Dam",` +
			`"id_document_issuance_date":"2020-12-01","id_document_issuance_place":"Utrecht"}`,
		`{"shoe":"42"}`, `{"given_name":""}`, `{"given_name":"a\nb"}`, `{"birthdate":"1990-02-31"}`,
		`{"birthdate":"03-02-1990"}`, `{"com.vendor.last_name":"J"}`, `{"given_name":"\u00e9l\u00e8ve"}`,
	} {
		f.Add([]byte(s))
	}
	claims := oidc.Claims{Namespace: "com.vendor"}
	scopes := []string{claims.ScopePersonalInfo(), claims.ScopeIDNumber()}
	f.Fuzz(func(t *testing.T, data []byte) {
		var m map[string]string
		if json.Unmarshal(data, &m) != nil {
			return
		}
		err := validateClaims(m)
		if err != nil {
			if KindOf(err) != KindInvalid || err.Error() == "" {
				t.Fatalf("%s: %v (kind %s)", data, err, KindOf(err))
			}
			return
		}
		u := &store.User{ID: "u1", Username: "alice", Status: store.UserActive, Claims: m}
		if err := u.Validate(); err != nil {
			t.Fatalf("%s: accepted, but the store refuses the user: %v", data, err)
		}
		released := claims.Identity(u, nil, scopes)
		if len(released) != len(m) {
			t.Fatalf("%s: %d attributes accepted, /userinfo releases %d: %v", data, len(m), len(released), released)
		}
		for k, v := range m {
			if !slices.Contains(ClaimKeys(), k) || len(v) == 0 || len(v) > maxClaimLen {
				t.Fatalf("%s: %q = %q accepted", data, k, v)
			}
			name := claims.Namespace + "." + k
			if k == "given_name" || k == "birthdate" {
				name = k
			}
			if k == "document_type" {
				name = claims.Namespace + ".document.type"
			}
			if released[name] != v {
				t.Fatalf("%s: %q = %q released as %v", data, k, v, released[name])
			}
		}
	})
}

// recordingService is a Service that records the request of each call and
// answers with empty results: FuzzRPC tests the decoding, not the
// operations.
type recordingService struct{ got any }

func (s *recordingService) rec(v any) { s.got = v }

func (s *recordingService) AddUser(_ context.Context, r AddUserRequest) (*UserView, error) {
	s.rec(r)
	return &UserView{}, nil
}
func (s *recordingService) ListUsers(context.Context) ([]UserView, error) {
	s.rec(struct{}{})
	return nil, nil
}
func (s *recordingService) ShowUser(_ context.Context, n string) (*UserView, error) {
	s.rec(nameReq{n})
	return &UserView{}, nil
}
func (s *recordingService) SetUserStatus(_ context.Context, n string, e bool) (*UserView, error) {
	s.rec(statusReq{n, e})
	return &UserView{}, nil
}
func (s *recordingService) UnlockUser(_ context.Context, n string) (*UserView, error) {
	s.rec(nameReq{n})
	return &UserView{}, nil
}
func (s *recordingService) SetPassword(_ context.Context, r SetSecretRequest) (*UserView, error) {
	s.rec(r)
	return &UserView{}, nil
}
func (s *recordingService) SetPIN(_ context.Context, r SetSecretRequest) (*UserView, error) {
	s.rec(r)
	return &UserView{}, nil
}
func (s *recordingService) EnrollTOTP(_ context.Context, r EnrollTOTPRequest) (*TOTPEnrollment, error) {
	s.rec(r)
	return &TOTPEnrollment{}, nil
}
func (s *recordingService) RemoveTOTP(_ context.Context, n string) (*UserView, error) {
	s.rec(nameReq{n})
	return &UserView{}, nil
}
func (s *recordingService) AddProof(_ context.Context, r AddProofRequest) (*UserView, error) {
	s.rec(r)
	return &UserView{}, nil
}
func (s *recordingService) AddClient(_ context.Context, r AddClientRequest) (*AddClientResult, error) {
	s.rec(r)
	return &AddClientResult{}, nil
}
func (s *recordingService) ListClients(context.Context) ([]ClientView, error) {
	s.rec(struct{}{})
	return nil, nil
}
func (s *recordingService) ShowClient(_ context.Context, n string) (*ClientView, error) {
	s.rec(nameReq{n})
	return &ClientView{}, nil
}
func (s *recordingService) RemoveClient(_ context.Context, n string) (*RemoveResult, error) {
	s.rec(nameReq{n})
	return &RemoveResult{}, nil
}

func (s *recordingService) RemoveUser(_ context.Context, n string) (*RemoveResult, error) {
	s.rec(nameReq{n})
	return &RemoveResult{}, nil
}

func (s *recordingService) RemoveCredential(_ context.Context, n string) (*RemoveCredentialResult, error) {
	s.rec(nameReq{n})
	return &RemoveCredentialResult{}, nil
}
func (s *recordingService) CreateCredential(_ context.Context, r CreateCredentialRequest) (*CreateCredentialResult, error) {
	s.rec(r)
	return &CreateCredentialResult{}, nil
}
func (s *recordingService) ImportCertificate(_ context.Context, r ImportCertificateRequest) (*CredentialView, error) {
	s.rec(r)
	return &CredentialView{}, nil
}
func (s *recordingService) ListCredentials(_ context.Context, n string) ([]CredentialView, error) {
	s.rec(nameReq{n})
	return nil, nil
}
func (s *recordingService) ShowCredential(_ context.Context, n string) (*CredentialView, error) {
	s.rec(nameReq{n})
	return &CredentialView{}, nil
}
func (s *recordingService) SetCredentialStatus(_ context.Context, n string, e bool) (*CredentialView, error) {
	s.rec(statusReq{n, e})
	return &CredentialView{}, nil
}
func (s *recordingService) SetCredentialAuth(_ context.Context, r SetCredentialAuthRequest) (*CredentialView, error) {
	s.rec(r)
	return &CredentialView{}, nil
}
func (s *recordingService) CreateOIDCKey(_ context.Context, r CreateOIDCKeyRequest) (*OIDCKeyView, error) {
	s.rec(r)
	return &OIDCKeyView{}, nil
}
func (s *recordingService) ListOIDCKeys(context.Context) ([]OIDCKeyView, error) {
	s.rec(struct{}{})
	return nil, nil
}
func (s *recordingService) RotateOIDCKeys(_ context.Context, r RotateOIDCKeysRequest) (*RotateOIDCKeysResult, error) {
	s.rec(r)
	return &RotateOIDCKeysResult{}, nil
}
func (s *recordingService) HSMInfo(context.Context) (*HSMInfoView, error) {
	s.rec(struct{}{})
	return &HSMInfoView{}, nil
}
func (s *recordingService) EnrollTSA(_ context.Context, r EnrollTSARequest) (*EnrollTSAResult, error) {
	s.rec(r)
	return &EnrollTSAResult{}, nil
}
func (s *recordingService) ImportTSACertificate(_ context.Context, r ImportTSACertificateRequest) (*TSACertificateView, error) {
	s.rec(r)
	return &TSACertificateView{}, nil
}
func (s *recordingService) AuditVerify(context.Context) (*AuditReport, error) {
	s.rec(struct{}{})
	return &AuditReport{}, nil
}
func (s *recordingService) AuditExport(_ context.Context, r AuditExportRequest, _ io.Writer) error {
	s.rec(r)
	return nil
}

// sameRequest compares what the service got with what encoding/json
// reads; times are the same instant (a zone offset decodes to a new
// *time.Location each time).
func sameRequest(a, b any) bool {
	if x, ok := a.(AuditExportRequest); ok {
		y, ok := b.(AuditExportRequest)
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
	if err := (&Handler{Service: svc}).Mount(e.Group("")); err != nil {
		f.Fatal(err)
	}
	types := map[string]reflect.Type{}
	for name, v := range map[string]any{
		"AddUser": AddUserRequest{}, "ListUsers": struct{}{}, "ShowUser": nameReq{}, "SetUserStatus": statusReq{},
		"UnlockUser": nameReq{}, "SetPassword": SetSecretRequest{}, "SetPIN": SetSecretRequest{}, "AddProof": AddProofRequest{},
		"AddClient": AddClientRequest{}, "ListClients": struct{}{}, "ShowClient": nameReq{}, "RemoveClient": nameReq{},
		"CreateCredential": CreateCredentialRequest{}, "ImportCertificate": ImportCertificateRequest{},
		"ListCredentials": nameReq{}, "ShowCredential": nameReq{}, "SetCredentialStatus": statusReq{},
		"SetCredentialAuth": SetCredentialAuthRequest{},
		"CreateOIDCKey":     CreateOIDCKeyRequest{}, "ListOIDCKeys": struct{}{}, "RotateOIDCKeys": RotateOIDCKeysRequest{},
		"RemoveUser": nameReq{}, "RemoveCredential": nameReq{},
		"EnrollTOTP": EnrollTOTPRequest{}, "RemoveTOTP": nameReq{},
		"HSMInfo":   struct{}{},
		"EnrollTSA": EnrollTSARequest{}, "ImportTSACertificate": ImportTSACertificateRequest{},
		"AuditVerify": struct{}{}, "AuditExport": AuditExportRequest{},
	} {
		types[name] = reflect.TypeOf(v)
	}
	if len(types) != len(endpoints(svc)) {
		f.Fatalf("the fuzz target knows %d methods, the handler %d", len(types), len(endpoints(svc)))
	}
	// What Remote sends for each method.
	for _, s := range []struct {
		method string
		req    any
	}{
		{"AddUser", AddUserRequest{Username: "alice", Password: "correct horse", PIN: "1234", Email: "alice@example.com", EmailVerified: true, Claims: map[string]string{"given_name": "Alice"}}},
		{"ListUsers", struct{}{}}, {"ShowUser", nameReq{"alice"}}, {"SetUserStatus", statusReq{"alice", true}},
		{"SetPIN", SetSecretRequest{"alice", "4321"}}, {"AddProof", AddProofRequest{"alice", "passport", "application/pdf", []byte("%PDF-1.7")}},
		{"AddClient", AddClientRequest{ID: "rp", Name: "RP", RedirectURIs: []string{"https://rp.example/cb"}, Scopes: []string{"service", "credential"}, RequirePKCE: true, IDTokenAlg: "ES256"}},
		{"CreateCredential", CreateCredentialRequest{User: "alice", Algo: "rsa-3072", Subject: "CN=Alice,O=Example B.V.,C=NL", Multisign: 10, AuthMode: "explicit"}},
		{"SetCredentialAuth", SetCredentialAuthRequest{ID: "kr3e3rdpe6muvlifxu2m3wpecu", Multisign: 5, AuthMode: "oauth2code"}},
		{"ImportCertificate", ImportCertificateRequest{ID: "kr3e3rdpe6muvlifxu2m3wpecu", ChainPEM: "-----BEGIN CERTIFICATE-----\nMAA=\n-----END CERTIFICATE-----\n"}},
		{"SetCredentialStatus", statusReq{"kr3e3rdpe6muvlifxu2m3wpecu", false}}, {"RotateOIDCKeys", RotateOIDCKeysRequest{Alg: "PS256", Force: true}}, {"CreateOIDCKey", CreateOIDCKeyRequest{Alg: "ES256"}},
		{"EnrollTOTP", EnrollTOTPRequest{"alice", "signd"}}, {"RemoveTOTP", nameReq{"alice"}},
		{"EnrollTSA", EnrollTSARequest{Algo: "rsa-3072", Subject: "CN=signd TSA,O=Example B.V.,C=NL"}},
		{"ImportTSACertificate", ImportTSACertificateRequest{KeyID: "00ff", CertPEM: "-----BEGIN CERTIFICATE-----\nMAA=\n-----END CERTIFICATE-----\n"}},
		{"AuditVerify", struct{}{}}, {"AuditExport", AuditExportRequest{Since: time.Date(2026, 1, 2, 15, 4, 5, 0, time.FixedZone("", 3600))}},
	} {
		body, _ := json.Marshal(s.req)
		f.Add(s.method, body)
	}
	f.Add("ShowUser", []byte(`{"Name":"alice","Extra":1}`))
	f.Add("ShowUser", []byte(`{"Name":"alice"} {"Name":"root"}`))
	f.Add("ShowUser", []byte(`null`))
	f.Add("NoSuchMethod", []byte(`{}`))
	f.Fuzz(func(t *testing.T, method string, body []byte) {
		if strings.Contains(method, "/") || method == "" {
			return // not one path segment
		}
		svc.got = nil
		req := httptest.NewRequest(http.MethodPost, rpcPrefix, bytes.NewReader(body))
		req.URL = &url.URL{Path: rpcPrefix + method}
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		typ, known := types[method]
		if rec.Code != http.StatusOK {
			var ae Error
			if json.Unmarshal(rec.Body.Bytes(), &ae) != nil || ae.Kind != KindInvalid || ae.Message == "" || svc.got != nil ||
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
		e.ServeHTTP(rec, req)
		again, _ := json.Marshal(svc.got)
		if rec.Code != http.StatusOK || !bytes.Equal(again, sent) {
			t.Fatalf("%s %+v: sent as %s, decoded as %s (%d)", method, got, sent, again, rec.Code)
		}
	})
}
