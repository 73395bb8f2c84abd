package adminapi

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/signd/signd/admin"
	"github.com/signd/signd/store"
)

// notRouted are the operations the provisioning API leaves to the box's
// own CLI: setting up signd's own keys (the OIDC signing keys, the
// time-stamping key, the audit key) and the token, not onboarding.
var notRouted = []string{"CreateOIDCKey", "ListOIDCKeys", "RotateOIDCKeys", "HSMInfo", "EnrollTSA", "ImportTSACertificate", "CreateAuditKey"}

// Every operation has a route or is left out on purpose: a new operation
// makes this test fail until it is decided.
func TestEveryOperationRouted(t *testing.T) {
	routed := map[string]bool{}
	for _, r := range routes() {
		routed[r.op] = true
	}
	for _, o := range admin.Operations() {
		if !routed[o.Name] && !slices.Contains(notRouted, o.Name) {
			t.Errorf("operation %s has no route and is not in notRouted", o.Name)
		}
		if routed[o.Name] && slices.Contains(notRouted, o.Name) {
			t.Errorf("operation %s has a route but is in notRouted", o.Name)
		}
	}
}

// docs/admin-openapi.yaml names every route, and nothing else.
func TestOpenAPINamesEveryRoute(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromFile("../../../docs/admin-openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{http.MethodGet + " " + Prefix + "/whoami": true}
	for _, r := range routes() {
		want[r.method+" "+Prefix+openAPIPath(r.path)] = true
	}
	got := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			got[method+" "+path] = true
		}
	}
	for k := range want {
		if !got[k] {
			t.Errorf("docs/admin-openapi.yaml does not describe %s", k)
		}
	}
	for k := range got {
		if !want[k] {
			t.Errorf("docs/admin-openapi.yaml describes %s, which is no route", k)
		}
	}
}

// openAPIPath writes echo's :param as OpenAPI's {param}.
func openAPIPath(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		if strings.HasPrefix(s, ":") {
			parts[i] = "{" + s[1:] + "}"
		}
	}
	return strings.Join(parts, "/")
}

// Every route refuses a certificate without a role of its operation (403
// forbidden, before the request is looked at) and lets one with a role
// through to the operation (whatever it then answers, not 403).
func TestRoutesRefuseOtherRoles(t *testing.T) {
	w := newWorld(t, map[string][]string{
		"security_officer": {"CN=so,O=Example"},
		"administrator":    {"CN=admin,O=Example"},
		"auditor":          {"CN=auditor,O=Example"},
	}, nil, nil)
	certs := map[admin.Role]clientCert{
		admin.RoleSecurityOfficer: issue(t, w.ca, "so", time.Time{}, time.Time{}),
		admin.RoleAdministrator:   issue(t, w.ca, "admin", time.Time{}, time.Time{}),
		admin.RoleAuditor:         issue(t, w.ca, "auditor", time.Time{}, time.Time{}),
	}
	// bodies: a request each operation decodes (its content may then be
	// refused as invalid or not found: only the role matters here).
	bodies := map[string]string{
		"AddUser": `{"username":"x","password":"correct horse battery"}`, "SetPassword": `{"secret":"correct horse battery"}`,
		"SetPIN": `{"secret":"4711"}`, "EnrollTOTP": `{}`, "AddProof": `{"id":"p","content_type":"application/pdf","content":"JVBERi0="}`,
		"AddClient": `{"id":"rp","redirect_uris":["https://rp.example/cb"]}`, "CreateCredential": `{"user":"nobody"}`,
		"ImportCertificate": `{"chain_pem":"x"}`, "SetCredentialAuth": `{"multisign":1}`, "AuditVerifyCheckpoint": `{"checkpoint":"x"}`,
	}
	for _, r := range routes() {
		op, _ := admin.Lookup(r.op)
		path := strings.NewReplacer(":name", "nobody", ":id", "nothing").Replace(r.path)
		for _, role := range admin.Roles() {
			cert := certs[role]
			var body []byte
			if b, ok := bodies[r.op]; ok {
				body = []byte(b)
			}
			st, out := w.call(&cert, r.method, path, body)
			allowed := slices.Contains(op.Roles, role)
			switch {
			case !allowed && (st != http.StatusForbidden || out["kind"] != string(admin.KindForbidden)):
				t.Errorf("%s %s as %s: %d %v, want 403 forbidden", r.method, r.path, role, st, out)
			case allowed && st == http.StatusForbidden:
				t.Errorf("%s %s as %s: refused: %v", r.method, r.path, role, out)
			}
		}
	}
}

// Every route refuses what is no request of it, in the one error shape
// (400, kind invalid) before its operation runs: a route that takes a
// JSON object refuses a malformed one, one with an unknown field, one
// that is no object, and one over MaxBody; a route that takes no body
// refuses one. The caller holds every role, so no refusal is the role's.
func TestRoutesRefuseMalformed(t *testing.T) {
	subject := []string{"CN=all,O=Example"}
	w := newWorld(t, map[string][]string{"security_officer": subject, "administrator": subject, "auditor": subject}, nil, nil)
	all := issue(t, w.ca, "all", time.Time{}, time.Time{})
	// The operations whose route takes the body as their request (an
	// empty one, or {}, for AuditCheckpoint), and those whose route adds
	// the path's name to the body's object.
	whole := []string{"AddUser", "AddClient", "CreateCredential", "AuditVerifyCheckpoint", "AuditCheckpoint"}
	named := []string{"SetPassword", "SetPIN", "EnrollTOTP", "AddProof", "ImportCertificate", "SetCredentialAuth"}
	big := `{"id":"` + strings.Repeat("x", MaxBody) + `"}`
	oversized := "the request body is larger than 16777216 bytes"
	type refusal struct{ name, body, msg string }
	before := len(w.audit())
	for _, r := range routes() {
		path := strings.NewReplacer(":name", "alice", ":id", "c1").Replace(r.path)
		var cases []refusal
		switch {
		case slices.Contains(whole, r.op):
			cases = []refusal{
				{"malformed", `{"id":`, "malformed admin request: the JSON value is cut off"},
				{"unknown field", `{"no_such_field":1}`, `malformed admin request: unknown field "no_such_field"`},
				{"no object", `["x"]`, "malformed admin request: the body must be a JSON object"},
				{"oversized", big, oversized},
			}
		case slices.Contains(named, r.op):
			cases = []refusal{
				{"malformed", `{"id":`, "malformed admin request: the body must be a JSON object"},
				{"unknown field", `{"no_such_field":1}`, `malformed admin request: unknown field "no_such_field"`},
				{"no object", `["x"]`, "malformed admin request: the body must be a JSON object"},
				{"oversized", big, oversized},
			}
		default:
			cases = []refusal{{"a body", `{}`, "this request takes no body"}, {"oversized", big, oversized}}
		}
		for _, c := range cases {
			st, out := w.call(&all, r.method, path, []byte(c.body))
			if msg, _ := out["message"].(string); st != http.StatusBadRequest || out["kind"] != string(admin.KindInvalid) || !strings.HasPrefix(msg, c.msg) {
				t.Errorf("%s %s, %s: %d %.200v, want 400 invalid %s...", r.method, r.path, c.name, st, out, c.msg)
			}
		}
	}
	// Refused before any operation: nothing was done, or read.
	for _, e := range w.audit()[before:] {
		if e.Kind != store.AuditAdminRefused {
			t.Errorf("a malformed request reached its operation: %+v", e)
		}
	}
}
