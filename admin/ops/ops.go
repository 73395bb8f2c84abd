package ops

import (
	"context"
	"encoding/json"
	"io"
	"strings"

	"github.com/signd/signd/admin/principal"
)

// NameRequest names one record: a username, a client ID, a credential ID,
// a pending request's ID or, for ListCredentials, an owner ("" for all).
type NameRequest struct{ Name string }

// StatusRequest switches a user or a credential on or off.
type StatusRequest struct {
	Name    string
	Enabled bool
}

// Stream is an operation's answer that is written as JSON lines rather
// than encoded as one JSON value (AuditExport).
type Stream func(w io.Writer) error

// Operation is one administrative operation as transports see it: its
// name (the admin socket's method), the roles that may perform it, and a
// call that decodes its JSON request and performs it on a Service.
type Operation struct {
	Name string
	// Roles may perform the operation; a principal needs one of them.
	// A change needs the role that owns what it changes; a listing is
	// open to that role and to the auditor; the audit log to the
	// auditor alone.
	Roles []Role
	// Read is true for the operations that change nothing.
	Read bool
	// Request is the zero value of the request type the call decodes.
	Request any
	call    func(ctx context.Context, s Service, by Principal, raw []byte) (any, error)
}

// op builds an Operation whose request has type R.
func op[R any](name string, roles []Role, read bool, fn func(context.Context, Service, Principal, R) (any, error)) Operation {
	var zero R
	return Operation{Name: name, Roles: roles, Read: read, Request: zero,
		call: func(ctx context.Context, s Service, by Principal, raw []byte) (any, error) {
			var r R
			if err := decodeStrict(raw, &r); err != nil {
				return nil, err
			}
			return fn(ctx, s, by, r)
		}}
}

// Operations is every administrative operation with the role it requires.
// It is the one place roles are declared: Local checks them (allow), the
// admin socket dispatches by it, and the role table test walks it.
func Operations() []Operation {
	so, ad := []Role{roleSecurityOfficer}, []Role{roleAdministrator}
	soRead, adRead := []Role{roleSecurityOfficer, roleAuditor}, []Role{roleAdministrator, roleAuditor}
	au := []Role{roleAuditor}
	approvers := []Role{roleSecurityOfficer, roleAdministrator}
	type none = struct{}
	return []Operation{
		op("AddUser", ad, false, func(ctx context.Context, s Service, by Principal, r AddUserRequest) (any, error) {
			return s.AddUser(ctx, by, r)
		}),
		op("ListUsers", adRead, true, func(ctx context.Context, s Service, by Principal, _ none) (any, error) { return s.ListUsers(ctx, by) }),
		op("ShowUser", adRead, true, func(ctx context.Context, s Service, by Principal, r NameRequest) (any, error) {
			return s.ShowUser(ctx, by, r.Name)
		}),
		op("SetUserStatus", ad, false, func(ctx context.Context, s Service, by Principal, r StatusRequest) (any, error) {
			return s.SetUserStatus(ctx, by, r.Name, r.Enabled)
		}),
		op("UnlockUser", ad, false, func(ctx context.Context, s Service, by Principal, r NameRequest) (any, error) {
			return s.UnlockUser(ctx, by, r.Name)
		}),
		op("UnlockPIN", so, false, func(ctx context.Context, s Service, by Principal, r NameRequest) (any, error) {
			return s.UnlockPIN(ctx, by, r.Name)
		}),
		op("SetPassword", ad, false, func(ctx context.Context, s Service, by Principal, r SetSecretRequest) (any, error) {
			return s.SetPassword(ctx, by, r)
		}),
		op("SetPIN", so, false, func(ctx context.Context, s Service, by Principal, r SetSecretRequest) (any, error) {
			return s.SetPIN(ctx, by, r)
		}),
		op("EnrollTOTP", ad, false, func(ctx context.Context, s Service, by Principal, r EnrollTOTPRequest) (any, error) {
			return s.EnrollTOTP(ctx, by, r)
		}),
		op("RemoveTOTP", ad, false, func(ctx context.Context, s Service, by Principal, r NameRequest) (any, error) {
			return s.RemoveTOTP(ctx, by, r.Name)
		}),
		op("AddProof", ad, false, func(ctx context.Context, s Service, by Principal, r AddProofRequest) (any, error) {
			return s.AddProof(ctx, by, r)
		}),
		op("IssueEnrollment", ad, false, func(ctx context.Context, s Service, by Principal, r NameRequest) (any, error) {
			return s.IssueEnrollment(ctx, by, r.Name)
		}),
		op("RemoveUser", ad, false, func(ctx context.Context, s Service, by Principal, r NameRequest) (any, error) {
			return s.RemoveUser(ctx, by, r.Name)
		}),
		op("AddClient", ad, false, func(ctx context.Context, s Service, by Principal, r AddClientRequest) (any, error) {
			return s.AddClient(ctx, by, r)
		}),
		op("ListClients", adRead, true, func(ctx context.Context, s Service, by Principal, _ none) (any, error) { return s.ListClients(ctx, by) }),
		op("ShowClient", adRead, true, func(ctx context.Context, s Service, by Principal, r NameRequest) (any, error) {
			return s.ShowClient(ctx, by, r.Name)
		}),
		op("RemoveClient", ad, false, func(ctx context.Context, s Service, by Principal, r NameRequest) (any, error) {
			return s.RemoveClient(ctx, by, r.Name)
		}),
		op("CreateCredential", so, false, func(ctx context.Context, s Service, by Principal, r CreateCredentialRequest) (any, error) {
			return s.CreateCredential(ctx, by, r)
		}),
		op("ImportCertificate", so, false, func(ctx context.Context, s Service, by Principal, r ImportCertificateRequest) (any, error) {
			return s.ImportCertificate(ctx, by, r)
		}),
		op("ListCredentials", soRead, true, func(ctx context.Context, s Service, by Principal, r NameRequest) (any, error) {
			return s.ListCredentials(ctx, by, r.Name)
		}),
		op("ShowCredential", soRead, true, func(ctx context.Context, s Service, by Principal, r NameRequest) (any, error) {
			return s.ShowCredential(ctx, by, r.Name)
		}),
		op("SetCredentialStatus", so, false, func(ctx context.Context, s Service, by Principal, r StatusRequest) (any, error) {
			return s.SetCredentialStatus(ctx, by, r.Name, r.Enabled)
		}),
		op("SetCredentialAuth", so, false, func(ctx context.Context, s Service, by Principal, r SetCredentialAuthRequest) (any, error) {
			return s.SetCredentialAuth(ctx, by, r)
		}),
		op("RemoveCredential", so, false, func(ctx context.Context, s Service, by Principal, r NameRequest) (any, error) {
			return s.RemoveCredential(ctx, by, r.Name)
		}),
		op("CreateOIDCKey", so, false, func(ctx context.Context, s Service, by Principal, r CreateOIDCKeyRequest) (any, error) {
			return s.CreateOIDCKey(ctx, by, r)
		}),
		op("ListOIDCKeys", soRead, true, func(ctx context.Context, s Service, by Principal, _ none) (any, error) {
			return s.ListOIDCKeys(ctx, by)
		}),
		op("RotateOIDCKeys", so, false, func(ctx context.Context, s Service, by Principal, r RotateOIDCKeysRequest) (any, error) {
			return s.RotateOIDCKeys(ctx, by, r)
		}),
		op("HSMInfo", soRead, true, func(ctx context.Context, s Service, by Principal, _ none) (any, error) { return s.HSMInfo(ctx, by) }),
		op("EnrollTSA", so, false, func(ctx context.Context, s Service, by Principal, r EnrollTSARequest) (any, error) {
			return s.EnrollTSA(ctx, by, r)
		}),
		op("ImportTSACertificate", so, false, func(ctx context.Context, s Service, by Principal, r ImportTSACertificateRequest) (any, error) {
			return s.ImportTSACertificate(ctx, by, r)
		}),
		op("AuditVerify", au, true, func(ctx context.Context, s Service, by Principal, _ none) (any, error) { return s.AuditVerify(ctx, by) }),
		op("AuditExport", au, true, func(ctx context.Context, s Service, by Principal, r AuditExportRequest) (any, error) {
			// A filter in error is answered before the stream starts, so
			// that the error keeps its kind; s refuses it too, and audits
			// the refusal.
			if cerr := r.Check(); cerr != nil {
				if err := s.AuditExport(ctx, by, r, io.Discard); err != nil {
					return nil, err
				}
				return nil, cerr
			}
			return Stream(func(w io.Writer) error { return s.AuditExport(ctx, by, r, w) }), nil
		}),
		// Dual control (admin/pending): whoever may approve, and the auditor,
		// see what waits; approving also needs a role of the held act.
		op("ListPending", principal.Roles(), true, func(ctx context.Context, s Service, by Principal, _ none) (any, error) {
			return s.ListPending(ctx, by)
		}),
		op("ApprovePending", approvers, false, func(ctx context.Context, s Service, by Principal, r NameRequest) (any, error) {
			return s.ApprovePending(ctx, by, r.Name)
		}),
		op("RejectPending", approvers, false, func(ctx context.Context, s Service, by Principal, r NameRequest) (any, error) {
			return s.RejectPending(ctx, by, r.Name)
		}),
		// The audit key is a key: the security officer's. A checkpoint
		// changes no record, it states what the log holds: the security
		// officer or the auditor (before an audit) may ask for one.
		op("CreateAuditKey", so, false, func(ctx context.Context, s Service, by Principal, r CreateAuditKeyRequest) (any, error) {
			return s.CreateAuditKey(ctx, by, r)
		}),
		op("ShowAuditKey", soRead, true, func(ctx context.Context, s Service, by Principal, _ none) (any, error) {
			return s.ShowAuditKey(ctx, by)
		}),
		op("AuditCheckpoint", soRead, false, func(ctx context.Context, s Service, by Principal, _ none) (any, error) {
			return s.AuditCheckpoint(ctx, by)
		}),
		op("AuditVerifyCheckpoint", au, true, func(ctx context.Context, s Service, by Principal, r AuditVerifyCheckpointRequest) (any, error) {
			return s.AuditVerifyCheckpoint(ctx, by, r)
		}),
	}
}

// Lookup returns the operation named name.
func Lookup(name string) (Operation, bool) {
	for _, o := range Operations() {
		if o.Name == name {
			return o, true
		}
	}
	return Operation{}, false
}

// Call decodes raw as the operation's request and performs it on s as by.
// A body that is not exactly one JSON value of the request type (unknown
// fields included) is KindInvalid, and s is not called.
func (o Operation) Call(ctx context.Context, s Service, by Principal, raw []byte) (any, error) {
	return o.call(ctx, s, by, raw)
}

// decodeStrict decodes exactly one JSON value naming only fields of v.
func decodeStrict(raw []byte, v any) error {
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return errorf(KindInvalid, "malformed admin request: %v", err)
	}
	// One JSON value, nothing after it: a second value would be silently
	// ignored.
	if _, err := dec.Token(); err != io.EOF {
		return errorf(KindInvalid, "malformed admin request: data after the JSON value")
	}
	return nil
}
