package ops

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

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

// The calls of op for a Service method by the shape of its request: the
// request itself (with), a name (named), a name and a switch (status), or
// nothing (bare).
func with[R, T any](f func(Service, context.Context, Principal, R) (T, error)) func(context.Context, Service, Principal, R) (any, error) {
	return func(ctx context.Context, s Service, by Principal, r R) (any, error) { return f(s, ctx, by, r) }
}

func named[T any](f func(Service, context.Context, Principal, string) (T, error)) func(context.Context, Service, Principal, NameRequest) (any, error) {
	return func(ctx context.Context, s Service, by Principal, r NameRequest) (any, error) {
		return f(s, ctx, by, r.Name)
	}
}

func status[T any](f func(Service, context.Context, Principal, string, bool) (T, error)) func(context.Context, Service, Principal, StatusRequest) (any, error) {
	return func(ctx context.Context, s Service, by Principal, r StatusRequest) (any, error) {
		return f(s, ctx, by, r.Name, r.Enabled)
	}
}

func bare[T any](f func(Service, context.Context, Principal) (T, error)) func(context.Context, Service, Principal, struct{}) (any, error) {
	return func(ctx context.Context, s Service, by Principal, _ struct{}) (any, error) { return f(s, ctx, by) }
}

// Operations is every administrative operation with the role it requires.
// It is the one place roles are declared: act.Core checks them, the
// admin socket dispatches by it, and the role table test walks it.
func Operations() []Operation {
	so, ad := []Role{roleSecurityOfficer}, []Role{roleAdministrator}
	soRead, adRead := []Role{roleSecurityOfficer, roleAuditor}, []Role{roleAdministrator, roleAuditor}
	au := []Role{roleAuditor}
	approvers := []Role{roleSecurityOfficer, roleAdministrator}
	return []Operation{
		op("AddUser", ad, false, with(Service.AddUser)),
		op("ListUsers", adRead, true, bare(Service.ListUsers)),
		op("ShowUser", adRead, true, named(Service.ShowUser)),
		op("SetUserStatus", ad, false, status(Service.SetUserStatus)),
		op("UnlockUser", ad, false, named(Service.UnlockUser)),
		op("UnlockPIN", so, false, named(Service.UnlockPIN)),
		op("SetPassword", ad, false, with(Service.SetPassword)),
		op("SetPIN", so, false, with(Service.SetPIN)),
		op("EnrollTOTP", ad, false, with(Service.EnrollTOTP)),
		op("RemoveTOTP", ad, false, named(Service.RemoveTOTP)),
		op("AddProof", ad, false, with(Service.AddProof)),
		op("IssueEnrollment", ad, false, named(Service.IssueEnrollment)),
		op("RemoveUser", ad, false, named(Service.RemoveUser)),
		op("AddClient", ad, false, with(Service.AddClient)),
		op("ListClients", adRead, true, bare(Service.ListClients)),
		op("ShowClient", adRead, true, named(Service.ShowClient)),
		op("RemoveClient", ad, false, named(Service.RemoveClient)),
		op("CreateCredential", so, false, with(Service.CreateCredential)),
		op("ImportCertificate", so, false, with(Service.ImportCertificate)),
		op("ListCredentials", soRead, true, named(Service.ListCredentials)),
		op("ShowCredential", soRead, true, named(Service.ShowCredential)),
		op("SetCredentialStatus", so, false, status(Service.SetCredentialStatus)),
		op("SetCredentialAuth", so, false, with(Service.SetCredentialAuth)),
		op("RemoveCredential", so, false, named(Service.RemoveCredential)),
		op("CreateOIDCKey", so, false, with(Service.CreateOIDCKey)),
		op("ListOIDCKeys", soRead, true, bare(Service.ListOIDCKeys)),
		op("RotateOIDCKeys", so, false, with(Service.RotateOIDCKeys)),
		op("HSMInfo", soRead, true, bare(Service.HSMInfo)),
		op("EnrollTSA", so, false, with(Service.EnrollTSA)),
		op("ImportTSACertificate", so, false, with(Service.ImportTSACertificate)),
		op("AuditVerify", au, true, bare(Service.AuditVerify)),
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
		op("ListPending", principal.Roles(), true, bare(Service.ListPending)),
		op("ApprovePending", approvers, false, named(Service.ApprovePending)),
		op("RejectPending", approvers, false, named(Service.RejectPending)),
		// The audit key is a key: the security officer's. A checkpoint
		// changes no record, it states what the log holds: the security
		// officer or the auditor (before an audit) may ask for one.
		op("CreateAuditKey", so, false, with(Service.CreateAuditKey)),
		op("ShowAuditKey", soRead, true, bare(Service.ShowAuditKey)),
		op("AuditCheckpoint", soRead, false, bare(Service.AuditCheckpoint)),
		op("AuditVerifyCheckpoint", au, true, with(Service.AuditVerifyCheckpoint)),
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
// It decodes with JSON v2 (github.com/go-json-experiment/json) rather
// than encoding/json: a member name must be a field's name exactly
// (encoding/json matches names case-insensitively, with Unicode folding:
// "uſername" would set Username) and may stand once (encoding/json lets
// the last of two win), so what a proxy, a log or a path check reads in
// the body is what the operation gets.
func decodeStrict(raw []byte, v any) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		return errorf(KindInvalid, "malformed admin request: no JSON value; send {} when the operation takes no parameters")
	}
	// The whole value first, so that a syntax error (a cut-off body, a
	// name given twice) is said before what its first members mean.
	dec := jsontext.NewDecoder(bytes.NewReader(raw))
	val, err := dec.ReadValue()
	if err != nil {
		return errorf(KindInvalid, "malformed admin request: %s", decodeProblem(err))
	}
	if val.Kind() == 'n' {
		// null would decode as {}: the operation with none of its fields.
		return errorf(KindInvalid, "malformed admin request: the body must be a JSON object")
	}
	if err := jsonv2.Unmarshal(val, v, jsonv2.RejectUnknownMembers(true)); err != nil {
		return errorf(KindInvalid, "malformed admin request: %s", decodeProblem(err))
	}
	// One JSON value, nothing after it: a second value would be silently
	// ignored.
	if _, err := dec.ReadToken(); err != io.EOF {
		return errorf(KindInvalid, "malformed admin request: data after the JSON value")
	}
	return nil
}

// decodeProblem says what is wrong with a request body in the operator's
// words (JSON's, never Go's types), quoting no value (it may be a
// password's).
func decodeProblem(err error) string {
	var sem *jsonv2.SemanticError
	var syn *jsontext.SyntacticError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "the JSON value is cut off"
	case errors.As(err, &syn) && errors.Is(syn.Err, jsontext.ErrDuplicateName):
		return fmt.Sprintf("field %q given twice", syn.JSONPointer.LastToken())
	case errors.As(err, &syn):
		// The position, counted from 1; not the decoder's text, which
		// quotes the offending character.
		return fmt.Sprintf("not valid JSON at byte %d", syn.ByteOffset+1)
	case errors.As(err, &sem) && errors.Is(sem.Err, jsonv2.ErrUnknownName):
		return fmt.Sprintf("unknown field %q", sem.JSONPointer.LastToken())
	case errors.As(err, &sem) && sem.GoType == reflect.TypeFor[time.Time]():
		// time.Time's own decoder failed, or the value is not a string.
		return "a value does not fit its field (times are RFC 3339 strings, e.g. 2026-11-28T12:00:00Z)"
	case errors.As(err, &sem) && sem.JSONPointer == "":
		return "the body must be a JSON object"
	case errors.As(err, &sem) && sem.GoType != nil:
		field, got := sem.JSONPointer.LastToken(), kindName(sem.JSONKind)
		if want := jsonKind(sem.GoType); want != "a "+got && want != "an "+got && !(got == "boolean" && want == "true or false") {
			return fmt.Sprintf("field %q must be %s, not %s", field, want, got)
		}
		// The kind is right and the value is not: an overflowing number.
		// Only the kind is said (it may be a PIN).
		return fmt.Sprintf("field %q is out of range", field)
	}
	return "a value does not fit its field"
}

// kindName names a JSON kind as the messages do.
func kindName(k jsontext.Kind) string {
	switch k {
	case '"':
		return "string"
	case '0':
		return "number"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	case '[':
		return "array"
	default:
		return "object"
	}
}

// jsonKind names the JSON value a Go type is decoded from.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	default:
		return "an object"
	}
}
