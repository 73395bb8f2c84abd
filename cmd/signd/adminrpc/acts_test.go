package adminrpc

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/json"
	"encoding/pem"
	"errors"
	"log/slog"
	"math/big"
	"os/user"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/signd/signd/admin"
	"github.com/signd/signd/checkpoint"
	"github.com/signd/signd/csc/certstatus/certstatustest"
	"github.com/signd/signd/hsm"
	"github.com/signd/signd/internal/logtest"
	"github.com/signd/signd/oidc"
	"github.com/signd/signd/store"
	"github.com/signd/signd/store/bolt"
	"github.com/signd/signd/store/storetest/backends"
)

// The secrets the acts below send; none may appear in the audit log or
// in the daemon's log.
const (
	alicePassword = "pw-Sentinel-alice-1"
	alicePIN      = "pin-Xq81z"
	newPassword   = "pw-Sentinel-new-2"
	newPIN        = "pin-Yr92w"
	clientSecret  = "cs-Sentinel-kkkkkkkkkkkkkkkkkkkkkkkkk"
	shortPassword = "pwSh0rt"              // refused: too short
	nobodySecret  = "pw-Sentinel-nobody-3" // refused: no such user
)

// actsWorld is the daemon's admin service on a bbolt file and the
// package's SoftHSM2 token, served on a Unix socket whose peers are
// named as the daemon names them (uid and user name), with every role.
type actsWorld struct {
	remote *Remote
	logs   *logtest.Buffer
	actor  string
	ca     *certstatustest.CA
	db     store.Store
	mk     *checkpoint.Maker
	tok    *hsm.Token
}

func newActsWorld(t *testing.T) *actsWorld {
	t.Helper()
	db := backends.Bolt(t, bolt.Options{})
	tok, err := hsm.Open(hsm.Config{Module: token.Module, TokenLabel: token.Label, PIN: token.PIN})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tok.Close() })
	hasher, err := store.NewHasher(store.Argon2Params{Time: 1, MemoryKiB: 64, Threads: 1, KeyLen: 32, SaltLen: 16})
	if err != nil {
		t.Fatal(err)
	}
	logs := &logtest.Buffer{}
	logger := slog.New(slog.NewJSONHandler(logs, nil))
	mk := &checkpoint.Maker{Store: db, Key: admin.AuditKeyFor(tok, "acts-audit"), Origin: "acts.example/audit", Dir: t.TempDir(), Logger: logger}
	local := admin.New(admin.Config{Store: db, Keys: tok, Hasher: hasher, Logger: logger, TSALabel: "acts-tsa",
		AuditKeyLabel: "acts-audit", Checkpoints: mk, EnrollBaseURL: "https://acts.example",
		OIDCKeys: &oidc.KeyRing{Store: store.Scope(db, func(tx store.Tx) oidc.KeyRingTx { return tx }),
			HSM: tok, IDTokenTTL: time.Hour, Logger: logger}})
	// As the daemon does (cmd/signd socketPrincipal): the uid, and the
	// name the user database gives it.
	named := func(cred *unix.Ucred) admin.Principal {
		name := ""
		if u, err := user.LookupId(strconv.FormatUint(uint64(cred.Uid), 10)); err == nil {
			name = u.Username
		}
		return admin.SocketPrincipal(cred.Uid, name, admin.Roles())
	}
	return &actsWorld{
		remote: serveAdminAs(t, local, named), logs: logs,
		actor: named(self()).Actor, ca: certstatustest.New(t, "Acts CA", nil), db: db, mk: mk, tok: tok,
	}
}

// export returns the audit log's lines, read through the socket (which
// appends the export's own admin_read entry first).
func (w *actsWorld) export(t *testing.T) []string {
	t.Helper()
	var b bytes.Buffer
	if err := w.remote.AuditExport(context.Background(), admin.Principal{}, admin.AuditExportRequest{}, &b); err != nil {
		t.Fatalf("export: %v", err)
	}
	return strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
}

// exported is one exported line as its JSON fields.
type exported struct {
	Kind    string            `json:"kind"`
	Actor   string            `json:"actor"`
	Target  string            `json:"target"`
	User    string            `json:"user"`
	Client  string            `json:"client"`
	Cred    string            `json:"credential"`
	Outcome string            `json:"outcome"`
	Reason  string            `json:"reason"`
	Fields  map[string]string `json:"fields"`
}

// actCase is one call of an admin socket method and the audit entry it
// must leave.
type actCase struct {
	op      string
	req     func() any
	kind    store.AuditKind
	target  func() string
	outcome string            // "" = ok
	fields  map[string]string // must be among the entry's fields
	reason  string            // refused: must be in the entry's reason
	// then reads the method's answer (IDs for the rows after).
	then func(t *testing.T, res json.RawMessage)
}

func fixed(s string) func() string { return func() string { return s } }
func req(v any) func() any         { return func() any { return v } }

// TestEveryAdminActAudited calls every operation of admin.Operations()
// through the admin socket and checks that each call appended exactly one
// audit entry, naming the socket peer as the actor, with the operation's
// kind, target and outcome, and wrote one log line naming the same; and
// one refusal of each kind of validation error. No secret sent is in the
// audit log or the log.
func TestEveryAdminActAudited(t *testing.T) {
	w := newActsWorld(t)
	var credID, csrPEM, tsaKeyID, tsaCSR, kid, nextKID, totpSecret, auditKeyID, enrollLink string
	var verified admin.AuditReport
	png := append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 32)...)

	cases := []actCase{
		{op: "AddUser", req: req(admin.AddUserRequest{Username: "alice", Password: alicePassword, PIN: alicePIN, Email: "alice@example.org",
			Claims: map[string]string{"given_name": "Alice"}}),
			kind: store.AuditUserAdded, target: fixed("user:alice"),
			fields: map[string]string{"password": "set", "pin": "set", "email": "alice@example.org", "claims": "given_name"}},
		{op: "AddUser", req: req(admin.AddUserRequest{Username: "bob", Password: alicePassword}),
			kind: store.AuditUserAdded, target: fixed("user:bob")},
		// With a one-time enrollment link: answered once, never audited.
		{op: "AddUser", req: req(admin.AddUserRequest{Username: "erin", Enroll: true}),
			kind: store.AuditUserAdded, target: fixed("user:erin"), fields: map[string]string{"enroll": "link"},
			then: func(t *testing.T, res json.RawMessage) {
				var u admin.UserView
				if err := json.Unmarshal(res, &u); err != nil || u.Enrollment == nil || !strings.HasPrefix(u.Enrollment.Link, "https://acts.example/oauth2/enroll/erin~") {
					t.Fatalf("AddUser with enroll: %s", res)
				}
				enrollLink = strings.TrimPrefix(u.Enrollment.Link, "https://acts.example/oauth2/enroll/erin~")
			}},
		{op: "IssueEnrollment", req: req(admin.NameRequest{Name: "erin"}), kind: store.AuditUserPasswordSet, target: fixed("user:erin"),
			fields: map[string]string{"enroll": "link", "replaced": "the open link"}},
		{op: "ListUsers", req: req(struct{}{}), kind: store.AuditAdminRead, target: fixed("users")},
		{op: "ShowUser", req: req(admin.NameRequest{Name: "alice"}), kind: store.AuditAdminRead, target: fixed("user:alice")},
		{op: "SetUserStatus", req: req(admin.StatusRequest{Name: "bob"}), kind: store.AuditUserDisabled, target: fixed("user:bob"),
			fields: map[string]string{"status": "disabled", "revoked": "0 access tokens, 0 SADs, 0 authorization codes, 0 pending authorization requests, 0 login sessions"}},
		{op: "UnlockUser", req: req(admin.NameRequest{Name: "alice"}), kind: store.AuditUserUnlocked, target: fixed("user:alice"),
			fields: map[string]string{"lock": "password", "password_locked": "false"}},
		{op: "UnlockPIN", req: req(admin.NameRequest{Name: "alice"}), kind: store.AuditUserUnlocked, target: fixed("user:alice"),
			fields: map[string]string{"lock": "pin", "pin_locked": "false"}},
		{op: "SetPassword", req: req(admin.SetSecretRequest{Username: "alice", Secret: newPassword}),
			kind: store.AuditUserPasswordSet, target: fixed("user:alice"), fields: map[string]string{"password": "changed"}},
		{op: "SetPIN", req: req(admin.SetSecretRequest{Username: "alice", Secret: newPIN}),
			kind: store.AuditUserPINSet, target: fixed("user:alice"), fields: map[string]string{"pin": "changed"}},
		{op: "EnrollTOTP", req: req(admin.EnrollTOTPRequest{Username: "alice"}), kind: store.AuditUserTOTPEnrolled, target: fixed("user:alice"),
			fields: map[string]string{"totp": "enrolled", "issuer": "signd"},
			then: func(t *testing.T, res json.RawMessage) {
				var e admin.TOTPEnrollment
				if err := json.Unmarshal(res, &e); err != nil || e.Secret == "" {
					t.Fatalf("enrollment %s: %v", res, err)
				}
				totpSecret = e.Secret
			}},
		{op: "RemoveTOTP", req: req(admin.NameRequest{Name: "alice"}), kind: store.AuditUserTOTPRemoved, target: fixed("user:alice")},
		{op: "AddProof", req: req(admin.AddProofRequest{Username: "alice", ID: "passport", ContentType: "image/png", Content: png}),
			kind: store.AuditUserProofAdded, target: fixed("user:alice"),
			fields: map[string]string{"proof_id": "passport", "content_type": "image/png", "size": strconv.Itoa(len(png))}},
		{op: "RemoveUser", req: req(admin.NameRequest{Name: "bob"}), kind: store.AuditUserRemoved, target: fixed("user:bob")},
		{op: "AddClient", req: req(admin.AddClientRequest{ID: "rp", Secret: clientSecret, RedirectURIs: []string{"https://rp.example/cb"}}),
			kind: store.AuditClientAdded, target: fixed("client:rp"),
			fields: map[string]string{"secret": "given", "redirect_uris": "https://rp.example/cb", "scopes": "service credential"}},
		{op: "ListClients", req: req(struct{}{}), kind: store.AuditAdminRead, target: fixed("clients")},
		{op: "ShowClient", req: req(admin.NameRequest{Name: "rp"}), kind: store.AuditAdminRead, target: fixed("client:rp")},
		{op: "RemoveClient", req: req(admin.NameRequest{Name: "rp"}), kind: store.AuditClientRemoved, target: fixed("client:rp"),
			fields: map[string]string{"revoked": "0 access tokens, 0 SADs, 0 authorization codes, 0 pending authorization requests, 0 login sessions"}},
		{op: "CreateCredential", req: req(admin.CreateCredentialRequest{User: "alice", Algo: "rsa-2048", Subject: "CN=Alice"}),
			kind: store.AuditCredentialEnrolled, outcome: string(store.CredentialPending),
			target: func() string { return "credential:" + credID }, fields: map[string]string{"algorithm": "rsa-2048"},
			then: func(t *testing.T, res json.RawMessage) {
				var r admin.CreateCredentialResult
				if err := json.Unmarshal(res, &r); err != nil {
					t.Fatal(err)
				}
				credID, csrPEM = r.Credential.ID, r.CSRPEM
			}},
		{op: "ImportCertificate", req: func() any {
			return admin.ImportCertificateRequest{ID: credID, ChainPEM: w.issue(t, csrPEM, nil) + pemOf(w.ca.Cert)}
		}, kind: store.AuditCredentialEnrolled, outcome: string(store.CredentialEnabled),
			target: func() string { return "credential:" + credID }, fields: map[string]string{"subject": "CN=Alice", "chain_length": "2"}},
		{op: "ListCredentials", req: req(admin.NameRequest{Name: "alice"}), kind: store.AuditAdminRead, target: fixed("credentials"),
			fields: map[string]string{"owner": "alice"}},
		{op: "ShowCredential", req: func() any { return admin.NameRequest{Name: credID} }, kind: store.AuditAdminRead,
			target: func() string { return "credential:" + credID }},
		{op: "SetCredentialStatus", req: func() any { return admin.StatusRequest{Name: credID} }, kind: store.AuditCredentialDisabled,
			target: func() string { return "credential:" + credID }, fields: map[string]string{"status": "disabled"}},
		{op: "SetCredentialAuth", req: func() any { return admin.SetCredentialAuthRequest{ID: credID, Multisign: 2} }, kind: store.AuditCredentialAuth,
			target: func() string { return "credential:" + credID }, fields: map[string]string{"multisign": "2"}},
		{op: "RemoveCredential", req: func() any { return admin.NameRequest{Name: credID} }, kind: store.AuditCredentialRemoved,
			target: func() string { return "credential:" + credID }, fields: map[string]string{"destroyed": "private key, public key, certificate"}},
		{op: "CreateOIDCKey", req: req(admin.CreateOIDCKeyRequest{}), kind: store.AuditOIDCKeyCreated,
			target: func() string { return "oidc-key:" + kid }, fields: map[string]string{"alg": "RS256", "state": "active"},
			then: func(t *testing.T, res json.RawMessage) { kid = decodeField(t, res, "kid") }},
		{op: "CreateOIDCKey", req: req(admin.CreateOIDCKeyRequest{Alg: "RS256"}), kind: store.AuditOIDCKeyCreated,
			target: func() string { return "oidc-key:" + nextKID }, fields: map[string]string{"alg": "RS256", "state": "next"},
			then: func(t *testing.T, res json.RawMessage) { nextKID = decodeField(t, res, "kid") }},
		{op: "ListOIDCKeys", req: req(struct{}{}), kind: store.AuditAdminRead, target: fixed("oidc-keys")},
		{op: "RotateOIDCKeys", req: req(admin.RotateOIDCKeysRequest{Force: true}), kind: store.AuditOIDCKeysRotated,
			target: func() string { return "oidc-key:" + nextKID }, fields: map[string]string{"force": "true"}},
		{op: "HSMInfo", req: req(struct{}{}), kind: store.AuditAdminRead, target: fixed("hsm")},
		{op: "EnrollTSA", req: req(admin.EnrollTSARequest{Algo: "rsa-2048"}), kind: store.AuditTSAEnrolled,
			target: func() string { return "tsa-key:" + tsaKeyID }, fields: map[string]string{"algorithm": "rsa-2048", "subject": "CN=signd TSA"},
			then: func(t *testing.T, res json.RawMessage) {
				var r admin.EnrollTSAResult
				if err := json.Unmarshal(res, &r); err != nil {
					t.Fatal(err)
				}
				tsaKeyID, tsaCSR = r.KeyID, r.CSRPEM
			}},
		{op: "ImportTSACertificate", req: func() any {
			eku, _ := asn1.Marshal([]asn1.ObjectIdentifier{{1, 3, 6, 1, 5, 5, 7, 3, 8}})
			return admin.ImportTSACertificateRequest{KeyID: tsaKeyID,
				CertPEM: w.issue(t, tsaCSR, []pkix.Extension{{Id: asn1.ObjectIdentifier{2, 5, 29, 37}, Critical: true, Value: eku}})}
		}, kind: store.AuditTSAImported, target: func() string { return "tsa-key:" + tsaKeyID }, fields: map[string]string{"subject": "CN=signd TSA"}},
		{op: "ListPending", req: req(struct{}{}), kind: store.AuditAdminRead, target: fixed("pending")},
		{op: "CreateAuditKey", req: req(admin.CreateAuditKeyRequest{}), kind: store.AuditAuditKeyCreated,
			target: func() string { return "audit-key:" + auditKeyID }, fields: map[string]string{"label": "acts-audit", "algorithm": "Ed25519"},
			then: func(t *testing.T, res json.RawMessage) { auditKeyID = decodeField(t, res, "id") }},
		{op: "ShowAuditKey", req: req(struct{}{}), kind: store.AuditAdminRead, target: fixed("audit-keys")},
		{op: "AuditVerifyCheckpoint", req: func() any { return admin.AuditVerifyCheckpointRequest{Checkpoint: w.checkpointNote(t)} },
			kind: store.AuditAdminRead, target: fixed("audit"), fields: map[string]string{"extends": "true"}},
		{op: "AuditVerify", req: req(struct{}{}), kind: store.AuditAdminRead, target: fixed("audit"),
			then: func(t *testing.T, res json.RawMessage) {
				var r admin.AuditReport
				if err := json.Unmarshal(res, &r); err != nil || !r.OK {
					t.Fatalf("verify %s: %v", res, err)
				}
				verified = r
			}},
		{op: "AuditExport", req: req(admin.AuditExportRequest{Kinds: []string{"user_added"}, Actor: "uid:"}), kind: store.AuditAdminRead,
			target: fixed("audit"), fields: map[string]string{"kinds": "user_added", "actor": "uid:"}},

		// One refusal of each kind of validation error: its own entry,
		// outcome refused, the operator's message as the reason.
		{op: "AddUser", req: req(admin.AddUserRequest{Username: "carol", Password: shortPassword}), kind: store.AuditUserAdded,
			target: fixed("user:carol"), outcome: store.AuditRefused, reason: "password must be 8 to 1024 bytes long"},
		{op: "SetPassword", req: req(admin.SetSecretRequest{Username: "nobody", Secret: nobodySecret}), kind: store.AuditUserPasswordSet,
			target: fixed("user:nobody"), outcome: store.AuditRefused, reason: `user "nobody": not found`},
		{op: "AddUser", req: req(admin.AddUserRequest{Username: "alice", Password: nobodySecret}), kind: store.AuditUserAdded,
			target: fixed("user:alice"), outcome: store.AuditRefused, reason: `user "alice": already exists`},
		{op: "RemoveTOTP", req: req(admin.NameRequest{Name: "alice"}), kind: store.AuditUserTOTPRemoved,
			target: fixed("user:alice"), outcome: store.AuditRefused, reason: `user "alice" has no TOTP`},
		{op: "AuditExport", req: req(admin.AuditExportRequest{Kinds: []string{"user_added", "no_such_kind"}}), kind: store.AuditAdminRead,
			target: fixed("audit"), outcome: store.AuditRefused, reason: `unknown audit kind "no_such_kind"`},
	}

	// Every operation has a row that is done: an operation added without
	// its entry (or without a row here) fails. Three leave other entries
	// than one of their own, and are tested where those are:
	// ApprovePending appends pending_approved and then the approved act's
	// entry, RejectPending pending_rejected (admin TestDualControlApproval,
	// TestDualControlReject; cmd/signd TestDualControlThroughSocket, which
	// has the second operator a socket needs); AuditCheckpoint has the
	// checkpoint maker append audit_checkpoint, as the daemon's timer does
	// (cmd/signd TestAuditCheckpointJourney, checkpoint TestMakeAndExtend).
	done := map[string]bool{"ApprovePending": true, "RejectPending": true, "AuditCheckpoint": true}
	for _, c := range cases {
		if c.outcome != store.AuditRefused {
			done[c.op] = true
		}
	}
	for _, o := range admin.Operations() {
		if !done[o.Name] {
			t.Errorf("operation %s has no row in this table", o.Name)
		}
	}

	ctx := context.Background()
	for i, c := range cases {
		before := w.export(t)
		logStart := len(w.logs.String())
		var res json.RawMessage
		var err error
		if c.op == "AuditExport" {
			var b bytes.Buffer
			err = w.remote.stream(ctx, c.op, c.req(), &b)
		} else {
			err = w.remote.call(ctx, c.op, c.req(), &res)
		}
		refused := c.outcome == store.AuditRefused
		if ae := (*admin.Error)(nil); refused != (err != nil) || (refused && (!errors.As(err, &ae) || ae.Kind == admin.KindForbidden)) {
			t.Fatalf("row %d %s: err = %v, want refused %v", i, c.op, err, refused)
		}
		if err == nil && c.then != nil {
			c.then(t, res)
		}
		callLogs := w.logs.String()[logStart:]
		after := w.export(t)
		if len(after) != len(before)+2 {
			t.Errorf("row %d %s: %d audit entries appended, want 1:\n%s", i, c.op, len(after)-len(before)-1,
				strings.Join(after[len(before):], "\n"))
			continue
		}
		var e exported
		if err := json.Unmarshal([]byte(after[len(before)]), &e); err != nil {
			t.Fatal(err)
		}
		outcome := c.outcome
		if outcome == "" {
			outcome = store.AuditOK
		}
		if e.Kind != string(c.kind) || e.Actor != w.actor || e.Target != c.target() || e.Outcome != outcome || e.Fields["op"] != c.op {
			t.Errorf("row %d %s: entry %s\nwant kind %s, actor %s, target %s, outcome %s, fields.op %s",
				i, c.op, after[len(before)], c.kind, w.actor, c.target(), outcome, c.op)
		}
		if c.op == "AuditVerify" {
			// The entries and head it verified: those before its entry.
			c.fields = map[string]string{"entries": strconv.FormatUint(verified.Entries, 10), "head": verified.Head}
			if verified.Entries != uint64(len(before)) {
				t.Errorf("verified %d entries, %d before its own", verified.Entries, len(before))
			}
		}
		for k, v := range c.fields {
			if e.Fields[k] != v {
				t.Errorf("row %d %s: field %s = %q, want %q (entry %s)", i, c.op, k, e.Fields[k], v, after[len(before)])
			}
		}
		if refused && !strings.Contains(e.Reason, c.reason) {
			t.Errorf("row %d %s: reason %q, want %q", i, c.op, e.Reason, c.reason)
		}
		// One log line of the act: INFO done, WARN refused, naming the op,
		// the actor and the target.
		var lines []map[string]any
		for _, l := range strings.Split(strings.TrimSpace(callLogs), "\n") {
			var m map[string]any
			if json.Unmarshal([]byte(l), &m) == nil && strings.HasPrefix(m["msg"].(string), "admin ") && m["op"] == c.op {
				lines = append(lines, m)
			}
		}
		wantLevel := "INFO"
		if refused {
			wantLevel = "WARN"
		}
		if strings.Contains(callLogs, `"level":"ERROR"`) {
			t.Errorf("row %d %s: an error was logged:\n%s", i, c.op, callLogs)
		}
		if len(lines) != 1 || lines[0]["level"] != wantLevel || lines[0]["actor"] != w.actor || lines[0]["target"] != c.target() {
			t.Errorf("row %d %s: log lines of the act %v, want one at %s naming %s and %s\n%s", i, c.op, lines, wantLevel, w.actor, c.target(), callLogs)
		}
	}

	// The log still verifies, and holds no secret that was sent.
	rep, err := w.remote.AuditVerify(ctx, admin.Principal{})
	if err != nil || !rep.OK {
		t.Fatalf("verify: %+v, %v", rep, err)
	}
	all := strings.Join(w.export(t), "\n")
	for _, secret := range []string{alicePassword, alicePIN, newPassword, newPIN, clientSecret, shortPassword, nobodySecret, totpSecret, token.PIN, enrollLink} {
		if secret == "" {
			t.Fatal("a secret was not captured")
		}
		if strings.Contains(all, secret) {
			t.Errorf("the audit log holds the secret %q", secret)
		}
		if strings.Contains(w.logs.String(), secret) {
			t.Errorf("the log holds the secret %q", secret)
		}
	}
}

// checkpointNote signs a checkpoint of the whole log with the audit key,
// as the maker would, without appending the maker's entry.
func (w *actsWorld) checkpointNote(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	var n uint64
	var head []byte
	err := w.db.View(ctx, func(tx store.Tx) (err error) {
		n, head, err = store.VerifyAudit(tx)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	key, err := w.mk.Key(ctx, w.mk.Origin)
	if err != nil {
		t.Fatal(err)
	}
	note, err := checkpoint.Sign(&checkpoint.Checkpoint{Origin: w.mk.Origin, Size: n, Hash: head}, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(note)
}

// issue has the world's CA certify the key of the PEM CSR, with its
// subject, and returns the certificate as PEM.
func (w *actsWorld) issue(t *testing.T, csrPEM string, exts []pkix.Extension) string {
	t.Helper()
	return w.issueAt(t, csrPEM, exts, time.Now().Add(-time.Hour))
}

// issueAt is issue with the certificate valid from notBefore.
func (w *actsWorld) issueAt(t *testing.T, csrPEM string, exts []pkix.Extension, notBefore time.Time) string {
	t.Helper()
	b, _ := pem.Decode([]byte(csrPEM))
	if b == nil {
		t.Fatalf("no PEM in %q", csrPEM)
	}
	csr, err := x509.ParseCertificateRequest(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: csr.Subject,
		NotBefore: notBefore, NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageContentCommitment, ExtraExtensions: exts}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, w.ca.Cert, csr.PublicKey, w.ca.Key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return pemOf(cert)
}

func pemOf(c *x509.Certificate) string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw}))
}

// decodeField returns the string field name of a JSON object.
func decodeField(t *testing.T, res json.RawMessage, name string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(res, &m); err != nil {
		t.Fatal(err)
	}
	s, _ := m[name].(string)
	if s == "" {
		t.Fatalf("no %s in %s", name, res)
	}
	return s
}
