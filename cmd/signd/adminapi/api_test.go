package adminapi

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/signd/signd/admin"
	"github.com/signd/signd/csc/certstatus/certstatustest"
	"github.com/signd/signd/store"
)

// Requests through the gate: each refusal in the one error shape with the
// status of its kind, every act audited with the certificate as actor.
func TestAPIRequests(t *testing.T) {
	w := newWorld(t, map[string][]string{
		"administrator":    {"CN=onboarding,O=Example"},
		"auditor":          {"CN=auditor,O=Example"},
		"security_officer": {"CN=officer,O=Example"},
	}, nil, nil)
	onboarding := issue(t, w.ca, "onboarding", time.Time{}, time.Time{})
	auditor := issue(t, w.ca, "auditor", time.Time{}, time.Time{})
	officer := issue(t, w.ca, "officer", time.Time{}, time.Time{})
	big := append(append([]byte(`{"username":"bob","password":"`), bytes.Repeat([]byte("a"), MaxBody)...), `"}`...)

	tests := []struct {
		name         string
		as           *clientCert
		method, path string
		body         string
		ctype        string // "" = application/json when there is a body
		status       int
		kind         admin.Kind
		msg          string
	}{
		{"create a user", &onboarding, "POST", "/users", `{"username":"alice","password":"correct horse battery"}`, "", 200, "", ""},
		{"the administrator may not set a PIN", &onboarding, "PUT", "/users/alice/pin", `{"secret":"4711"}`, "", 403, admin.KindForbidden, "SetPIN requires the role security_officer"},
		{"the security officer sets the PIN", &officer, "PUT", "/users/alice/pin", `{"secret":"4711"}`, "", 200, "", ""},
		{"the auditor may not create users", &auditor, "POST", "/users", `{"username":"eve","password":"correct horse battery"}`, "", 403, admin.KindForbidden, "AddUser requires the role administrator; cert:CN=auditor,O=Example sha256:"},
		{"the same user again", &onboarding, "POST", "/users", `{"username":"alice","password":"correct horse battery"}`, "", 409, admin.KindExists, "already exists"},
		{"an unknown field", &onboarding, "POST", "/users", `{"username":"bob","password":"correct horse battery","role":"admin"}`, "", 400, admin.KindInvalid, `malformed admin request: unknown field "role"`},
		{"malformed JSON", &onboarding, "POST", "/users", `{"username":`, "", 400, admin.KindInvalid, "malformed admin request: the JSON value is cut off"},
		{"two JSON values", &onboarding, "POST", "/users", `{"username":"bob","password":"correct horse battery"}{}`, "", 400, admin.KindInvalid, "data after the JSON value"},
		{"no body", &onboarding, "POST", "/users", "", "", 400, admin.KindInvalid, "the body must be a JSON object"},
		{"not JSON", &onboarding, "POST", "/users", `username=bob`, "application/x-www-form-urlencoded", 400, admin.KindInvalid, "the request body must be application/json"},
		{"oversized", &onboarding, "POST", "/users", string(big), "", 400, admin.KindInvalid, "the request body is larger than 16777216 bytes"},
		{"a body where none is taken", &onboarding, "GET", "/users/alice", `{}`, "", 400, admin.KindInvalid, "this request takes no body"},
		{"the path's name in the body", &onboarding, "PUT", "/users/alice/password", `{"username":"bob","secret":"another horse battery"}`, "", 400, admin.KindInvalid, `"username" is taken from the path, not the body`},
		{"a second user", &onboarding, "POST", "/users", `{"username":"bob","password":"correct horse battery"}`, "", 200, "", ""},
		// encoding/json would match these to Username (case and Unicode
		// folding: ſ is s) and set bob's password through alice's path.
		{"the path's name in another case", &onboarding, "PUT", "/users/alice/password", `{"Username":"bob","secret":"another horse battery"}`, "", 400, admin.KindInvalid, `unknown field "Username"`},
		{"the path's name folded", &onboarding, "PUT", "/users/alice/password", `{"uſername":"bob","secret":"another horse battery"}`, "", 400, admin.KindInvalid, `unknown field "uſername"`},
		{"a field twice", &onboarding, "PUT", "/users/alice/password", `{"secret":"correct horse battery","secret":"another horse battery"}`, "", 400, admin.KindInvalid, `field "secret" given twice`},
		{"the path not UTF-8", &onboarding, "PUT", "/users/al%FFice/password", `{"secret":"another horse battery"}`, "", 400, admin.KindInvalid, "not valid UTF-8"},
		{"a body that is no object", &onboarding, "PUT", "/users/alice/password", `["x"]`, "", 400, admin.KindInvalid, "the body must be a JSON object"},
		{"set the password", &onboarding, "PUT", "/users/alice/password", `{"secret":"another horse battery"}`, "", 200, "", ""},
		{"show a user", &auditor, "GET", "/users/alice", "", "", 200, "", ""},
		{"an unknown user", &onboarding, "GET", "/users/nobody", "", "", 404, admin.KindNotFound, "not found"},
		{"export: an unknown parameter", &auditor, "GET", "/audit/export?user=alice", "", "", 400, admin.KindInvalid, `unknown query parameter "user"`},
		{"export: a parameter twice", &auditor, "GET", "/audit/export?actor=a&actor=b", "", "", 400, admin.KindInvalid, `query parameter "actor" given 2 times`},
		{"export: a bad time", &auditor, "GET", "/audit/export?since=yesterday", "", "", 400, admin.KindInvalid, `since: "yesterday" is not an RFC 3339 time`},
		{"export: an unknown kind", &auditor, "GET", "/audit/export?kind=nope", "", "", 400, admin.KindInvalid, `unknown audit kind "nope"`},
		{"export: not for the administrator", &onboarding, "GET", "/audit/export", "", "", 403, admin.KindForbidden, "AuditExport requires the role auditor"},
		{"verify the audit log", &auditor, "GET", "/audit/verify", "", "", 200, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A reader of unknown length: sent chunked (the daemon's
			// journey sends a Content-Length).
			req, err := http.NewRequest(tt.method, "https://"+w.addr+Prefix+tt.path, io.MultiReader(strings.NewReader(tt.body)))
			if err != nil {
				t.Fatal(err)
			}
			if tt.body != "" {
				req.Header.Set("Content-Type", "application/json")
				if tt.ctype != "" {
					req.Header.Set("Content-Type", tt.ctype)
				}
			}
			res, err := w.client(tt.as, 0).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			var e admin.Error
			derr := json.NewDecoder(res.Body).Decode(&e)
			if res.StatusCode != tt.status {
				t.Fatalf("status %d (%+v), want %d", res.StatusCode, e, tt.status)
			}
			if tt.kind != "" && (derr != nil || e.Kind != tt.kind || !strings.Contains(e.Message, tt.msg)) {
				t.Errorf("answer %+v (%v), want kind %s, message ...%s...", e, derr, tt.kind, tt.msg)
			}
			for _, secret := range []string{"correct horse", "another horse", "4711"} {
				if strings.Contains(e.Message, secret) {
					t.Errorf("the answer echoes a secret: %q", e.Message)
				}
			}
		})
	}
	// Every act names the certificate; the refusal by role too.
	actor := admin.CertActor(onboarding.cert)
	var kinds []string
	for _, e := range w.audit() {
		if e.Actor == actor {
			kinds = append(kinds, string(e.Kind)+"/"+e.Outcome)
		}
	}
	want := []string{"user_added/ok", "user_added/refused", "user_password_set/ok", "admin_read/ok", "admin_refused/refused"}
	for _, k := range want {
		if !strings.Contains(strings.Join(kinds, " "), k) {
			t.Errorf("the audit log of %s holds %v, no %s", actor, kinds, k)
		}
	}
}

// Dual control through the API: the request waits for a second
// certificate; the requester cannot approve it; the approval names both.
func TestAPIDualControl(t *testing.T) {
	w := newWorld(t, map[string][]string{"administrator": {"CN=one,O=Example", "CN=two,O=Example"}}, []string{"RemoveUser"}, nil)
	one := issue(t, w.ca, "one", time.Time{}, time.Time{})
	two := issue(t, w.ca, "two", time.Time{}, time.Time{})
	if st, out := w.call(&one, "POST", "/users", []byte(`{"username":"carol","password":"correct horse battery"}`)); st != 200 {
		t.Fatalf("POST /users: %d %v", st, out)
	}
	st, out := w.call(&one, "DELETE", "/users/carol", nil)
	if st != http.StatusAccepted || out["kind"] != string(admin.KindPending) || out["id"] == "" {
		t.Fatalf("DELETE /users/carol: %d %v, want 202 pending with an id", st, out)
	}
	id, _ := out["id"].(string)
	if st, out := w.call(&one, "POST", "/pending/"+id+"/approve", nil); st != http.StatusForbidden && st != http.StatusConflict ||
		!strings.Contains(out["message"].(string), "a second operator must approve it") {
		t.Errorf("self-approval: %d %v", st, out)
	}
	// A second certificate of the same subject, for a new key (a
	// renewal), is the same operator.
	again := issue(t, w.ca, "one", time.Time{}, time.Time{})
	if admin.SPKIFingerprint(again.cert) == admin.SPKIFingerprint(one.cert) {
		t.Fatal("the second certificate has the first one's key")
	}
	want := admin.CertActor(again.cert) + " requested " + id + ": a second operator must approve it" +
		" (a certificate with the subject CN=one,O=Example is the same operator, whatever its key)"
	if st, out := w.call(&again, "POST", "/pending/"+id+"/approve", nil); st != http.StatusForbidden || out["message"] != want {
		t.Errorf("approval by the requester's subject with another key: %d %v, want 403 %q", st, out, want)
	}
	if st, out := w.call(&two, "POST", "/pending/"+id+"/approve", nil); st != 200 {
		t.Fatalf("approval by a second certificate: %d %v", st, out)
	}
	if st, _ := w.call(&two, "GET", "/users/carol", nil); st != http.StatusNotFound {
		t.Errorf("carol after the approved removal: %d", st)
	}
	var removed *store.AuditEntry
	for _, e := range w.audit() {
		if e.Kind == store.AuditUserRemoved && e.Outcome == store.AuditOK {
			removed = e
		}
	}
	if removed == nil || removed.Actor != admin.CertActor(one.cert) || removed.Fields["approved_by"] != admin.CertActor(two.cert) {
		t.Errorf("the removal's entry %+v, want actor %s approved by %s", removed, admin.CertActor(one.cert), admin.CertActor(two.cert))
	}
}

// TestAPIDualControlKeyPinned: with a role granted to a key
// ("sha256:…" in admin.api_roles), a certificate of that key under
// another subject (a renewal whose CN changed) holds the role too, and is
// still the requester: it cannot approve the request.
func TestAPIDualControlKeyPinned(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	spki, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		t.Fatal(err)
	}
	fp := sha256.Sum256(spki)
	w := newWorld(t, map[string][]string{"administrator": {"sha256:" + hex.EncodeToString(fp[:]), "CN=two,O=Example"}}, []string{"RemoveUser"}, nil)
	under := func(cn string) clientCert {
		cert := w.ca.Issue(t, key.Public(), certstatustest.Leaf{Subject: pkix.Name{CommonName: cn, Organization: []string{"Example"}},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
		return clientCert{cert, tls.Certificate{Certificate: [][]byte{cert.Raw}, PrivateKey: key, Leaf: cert}}
	}
	alice, renewed := under("alice"), under("alice.smith")
	two := issue(t, w.ca, "two", time.Time{}, time.Time{})
	if st, out := w.call(&alice, "POST", "/users", []byte(`{"username":"carol","password":"correct horse battery"}`)); st != 200 {
		t.Fatalf("POST /users: %d %v", st, out)
	}
	st, out := w.call(&alice, "DELETE", "/users/carol", nil)
	id, _ := out["id"].(string)
	if st != http.StatusAccepted || id == "" {
		t.Fatalf("DELETE /users/carol: %d %v, want 202 pending", st, out)
	}
	want := admin.CertActor(renewed.cert) + " holds the key of the requester of " + id + " (" + admin.CertActor(alice.cert) + "): a second operator must approve it"
	if st, out := w.call(&renewed, "POST", "/pending/"+id+"/approve", nil); st != http.StatusForbidden || out["message"] != want {
		t.Errorf("approval by the requester's key under another subject: %d %v, want 403 %q", st, out, want)
	}
	if st, out := w.call(&two, "POST", "/pending/"+id+"/approve", nil); st != 200 {
		t.Fatalf("approval by a second operator: %d %v", st, out)
	}
}

// TestAPIDualControlRequesterRevoked: a request whose requester's
// certificate is revoked before the approval is rejected by it: the
// approval asks whether the gate admits the certificate now, not when it
// asked.
func TestAPIDualControlRequesterRevoked(t *testing.T) {
	w := newWorld(t, map[string][]string{"administrator": {"CN=one,O=Example", "CN=two,O=Example"}}, []string{"RemoveUser"}, nil)
	w.gate.CRL = crlOf(t, w.ca)
	one := issue(t, w.ca, "one", time.Time{}, time.Time{})
	two := issue(t, w.ca, "two", time.Time{}, time.Time{})
	if st, out := w.call(&one, "POST", "/users", []byte(`{"username":"carol","password":"correct horse battery"}`)); st != 200 {
		t.Fatalf("POST /users: %d %v", st, out)
	}
	_, out := w.call(&one, "DELETE", "/users/carol", nil)
	id, _ := out["id"].(string)
	w.ca.Revoke(one.cert.SerialNumber, 1)
	w.gate.SetCRL(crlOf(t, w.ca))
	st, out := w.call(&two, "POST", "/pending/"+id+"/approve", nil)
	want := id + " is rejected: the roles of its requester " + admin.CertActor(one.cert) + " cannot be established now: " +
		"the requester's client certificate is no longer admitted: the client certificate (serial " + one.cert.SerialNumber.String() + ") is revoked"
	if msg, _ := out["message"].(string); st != http.StatusForbidden || !strings.HasPrefix(msg, want) {
		t.Fatalf("approval of a revoked requester's request: %d %v, want 403 %q", st, out, want)
	}
	if st, _ := w.call(&two, "GET", "/users/carol", nil); st != http.StatusOK {
		t.Errorf("carol after the refused approval: %d", st)
	}
	if st, out := w.call(&two, "POST", "/pending/"+id+"/approve", nil); st != http.StatusNotFound {
		t.Errorf("second approval: %d %v, want 404 (rejected)", st, out)
	}
	var rejected *store.AuditEntry
	for _, e := range w.audit() {
		if e.Kind == store.AuditPendingRejected {
			rejected = e
		}
	}
	if rejected == nil || rejected.Actor != "signd" || !strings.HasPrefix(rejected.Reason, want) || rejected.Fields["approval_by"] != admin.CertActor(two.cert) {
		t.Errorf("pending_rejected entry %+v", rejected)
	}
}
