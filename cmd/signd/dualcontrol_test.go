package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os/user"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/signd/signd/admin"
	"github.com/signd/signd/config"
	"github.com/signd/signd/hsm"
	"github.com/signd/signd/store"
)

// callOneAs posts method with body on socket as uid/gid (a helper
// process, see callAs) and returns "status N" and the answer.
func callOneAs(t *testing.T, socket string, uid, gid uint32, method, body string) (string, string) {
	t.Helper()
	c := callAs(t, socket, uid, gid, nil, []rpcCall{{Method: method, Body: body}})[0]
	return fmt.Sprintf("status %d", c.Status), c.Answer
}

// TestDualControlActsMatchOperations: admin.dual_control's acts are the
// admin operations that change something, and the configuration refuses
// exactly those the admin package will not hold.
func TestDualControlActsMatchOperations(t *testing.T) {
	acts := map[string]config.DualControlAct{}
	for _, a := range config.DualControlActs() {
		if _, ok := admin.Lookup(a.Op); !ok {
			t.Errorf("act %s names the unknown operation %s", a.Name, a.Op)
		}
		if err := admin.Holdable(a.Op); (err == nil) != (a.Refused == "") {
			t.Errorf("act %s: configuration refuses it: %q; admin.Holdable(%s) = %v", a.Name, a.Refused, a.Op, err)
		}
		acts[a.Op] = a
	}
	for _, o := range admin.Operations() {
		if _, ok := acts[o.Name]; !ok && !o.Read && o.Name != "ApprovePending" && o.Name != "RejectPending" {
			t.Errorf("operation %s changes something and has no act in config.DualControlActs", o.Name)
		}
	}
}

// twoOperators needs root and puts group 65534 in server.admin_group, so
// that root and uid 65534 (the test binary re-executed) are two operators
// on the admin socket; it returns their names as the audit log gives them.
func twoOperators(t *testing.T) (root, nobody string) {
	needRoot(t)
	grp, err := user.LookupGroupId("65534")
	if err != nil {
		t.Skipf("no group 65534 on this system: %v", err)
	}
	nobody = "uid:65534"
	if u, err := user.LookupId("65534"); err == nil {
		nobody = fmt.Sprintf("uid:65534 (%s)", u.Username)
	}
	root = "uid:0"
	if u, err := user.LookupId("0"); err == nil {
		root = fmt.Sprintf("uid:0 (%s)", u.Username)
	}
	t.Setenv("SIGND_SERVER_ADMIN_GROUP", grp.Name)
	return root, nobody
}

// TestDualControlThroughSocket: with credential_remove under dual
// control, root's `signd credential remove` leaves the key in the token
// and answers with a pending request; root cannot approve it; uid 65534
// approves it through the admin socket, and the key is destroyed; a
// second approval finds nothing; a request approved after
// admin.pending_ttl (the daemon's clock moved) expires; a rejected one is
// never performed; the audit log names the requester and the approver.
func TestDualControlThroughSocket(t *testing.T) {
	rootName, nobodyName := twoOperators(t)
	e := newEnv(t, "admin:\n  dual_control: [credential_remove]\n  pending_ttl: 1h\n")
	var skew atomic.Int64
	clock := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	_, stop := e.startDaemonWith(func(a *app) { a.now = clock })
	socket := filepath.Join(e.dir, "s.sock")
	chown(t, e.dir, 0, nobody)
	chmod(t, e.dir, 0o750)

	e.must("a long password\n", "user", "add", "alice", "--password-file", "-")
	keyIDs := map[string]string{}
	var creds []string
	for range 3 {
		var res admin.CreateCredentialResult
		if err := json.Unmarshal([]byte(e.must("", "credential", "create", "--user", "alice", "--key-type", "ec-p256", "--json")), &res); err != nil {
			t.Fatal(err)
		}
		creds = append(creds, res.Credential.ID)
		keyIDs[res.Credential.ID] = res.Credential.KeyID
	}
	approved, expired, rejected := creds[0], creds[1], creds[2]
	pendingID := regexp.MustCompile(`^pending request ([a-z2-7]{26}): RemoveCredential needs approval by a second operator within 1h \(signd pending approve ([a-z2-7]{26})\)$`)
	request := func(cred string) string {
		t.Helper()
		_, _, err := e.run("", "credential", "remove", cred)
		m := pendingID.FindStringSubmatch(fmt.Sprint(err))
		if admin.KindOf(err) != admin.KindPending || m == nil || m[1] != m[2] {
			t.Fatalf("credential remove under dual control: %v", err)
		}
		return m[1]
	}

	id := request(approved)
	// The requester cannot approve, through the CLI and the socket.
	_, _, err := e.run("", "pending", "approve", id)
	if want := fmt.Sprintf("%s requested %s: a second operator must approve it", rootName, id); admin.KindOf(err) != admin.KindForbidden || fmt.Sprint(err) != want {
		t.Fatalf("self-approval: %v, want %q", err, want)
	}
	var list []admin.PendingView
	var held admin.NameRequest
	if err := json.Unmarshal([]byte(e.must("", "pending", "list", "--json")), &list); err != nil || len(list) != 1 ||
		list[0].ID != id || list[0].RequestedBy != rootName || json.Unmarshal(list[0].Request, &held) != nil || held.Name != approved {
		t.Fatalf("pending list: %+v, %v", list, err)
	}
	if out := e.must("", "credential", "show", approved); !strings.Contains(out, approved) {
		t.Fatalf("the credential is gone before the approval: %s", out)
	}

	status, answer := callOneAs(t, socket, nobody, nobody, "ApprovePending", fmt.Sprintf(`{"Name":%q}`, id))
	var res admin.ApprovalResult
	var removed admin.RemoveCredentialResult
	if status != "status 200" || json.Unmarshal([]byte(answer), &res) != nil || json.Unmarshal(res.Result, &removed) != nil ||
		res.ApprovedBy != nobodyName || res.Pending.RequestedBy != rootName || removed.Removed != approved ||
		strings.Join(removed.Destroyed, ",") != "private key,public key" {
		t.Fatalf("approval by uid 65534: %s %s", status, answer)
	}
	if status, answer := callOneAs(t, socket, nobody, nobody, "ApprovePending", fmt.Sprintf(`{"Name":%q}`, id)); status != "status 404" ||
		!strings.Contains(answer, "already approved, rejected or expired") {
		t.Errorf("second approval: %s %s", status, answer)
	}
	if status, answer := callOneAs(t, socket, nobody, nobody, "ApprovePending", `{"Name":"aaaaaaaaaaaaaaaaaaaaaaaaaa"}`); status != "status 404" {
		t.Errorf("unknown ID: %s %s", status, answer)
	}

	id2 := request(expired)
	skew.Store(int64(time.Hour))
	if out := e.must("", "pending", "list"); !strings.Contains(out, id2) || !strings.Contains(out, "(expired)") {
		t.Errorf("pending list after the TTL:\n%s", out)
	}
	if status, answer := callOneAs(t, socket, nobody, nobody, "ApprovePending", fmt.Sprintf(`{"Name":%q}`, id2)); status != "status 409" ||
		!strings.Contains(answer, "expired unapproved") {
		t.Errorf("approval after the TTL: %s %s", status, answer)
	}

	id3 := request(rejected)
	if status, answer := callOneAs(t, socket, nobody, nobody, "RejectPending", fmt.Sprintf(`{"Name":%q}`, id3)); status != "status 200" {
		t.Fatalf("reject: %s %s", status, answer)
	}
	if _, _, err := e.run("", "pending", "approve", id3); admin.KindOf(err) != admin.KindNotFound {
		t.Errorf("approval of a rejected request: %v", err)
	}
	if out := e.must("", "pending", "list"); strings.Contains(out, id3) || strings.Contains(out, id2) {
		t.Errorf("decided requests still listed:\n%s", out)
	}
	stop()

	// The token: only the approved removal destroyed its key.
	tok, err := hsm.Open(hsm.Config{Module: token.Module, TokenLabel: token.Label, PIN: token.PIN})
	if err != nil {
		t.Fatal(err)
	}
	for cred, hexID := range keyIDs {
		kid, _ := hex.DecodeString(hexID)
		_, err := tok.Key(context.Background(), kid)
		switch {
		case cred == approved && !errors.Is(err, hsm.ErrKeyNotFound):
			t.Errorf("key of the approved removal: %v, want ErrKeyNotFound", err)
		case cred != approved && err != nil:
			t.Errorf("key of %s (expired or rejected removal): %v", cred, err)
		}
	}
	tok.Close()

	var got []string
	for _, line := range strings.Split(strings.TrimSpace(e.must("", "audit", "export")), "\n") {
		ent, err := store.DecodeAuditEntry([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(ent.Kind), "pending_") && ent.Kind != store.AuditCredentialRemoved && ent.Kind != store.AuditAdminRefused {
			continue
		}
		got = append(got, fmt.Sprintf("%s %s id=%s requested_by=%s approved_by=%s", ent.Kind, ent.Actor, ent.Fields["id"],
			ent.Fields["requested_by"], ent.Fields["approved_by"]))
	}
	want := []string{
		fmt.Sprintf("pending_requested %s id=%s requested_by=%s approved_by=", rootName, id, rootName),
		fmt.Sprintf("admin_refused %s id=%s requested_by=%s approved_by=", rootName, id, rootName),
		fmt.Sprintf("pending_approved %s id=%s requested_by=%s approved_by=", nobodyName, id, rootName),
		fmt.Sprintf("credential_removed %s id= requested_by= approved_by=%s", rootName, nobodyName),
		fmt.Sprintf("pending_requested %s id=%s requested_by=%s approved_by=", rootName, id2, rootName),
		fmt.Sprintf("pending_expired signd id=%s requested_by=%s approved_by=", id2, rootName),
		fmt.Sprintf("pending_requested %s id=%s requested_by=%s approved_by=", rootName, id3, rootName),
		fmt.Sprintf("pending_rejected %s id=%s requested_by=%s approved_by=", nobodyName, id3, rootName),
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("audit:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestDualControlWithoutDaemon: the CLI working on the store itself holds
// the act as the daemon does; its operator cannot approve it, and may
// withdraw it.
func TestDualControlWithoutDaemon(t *testing.T) {
	e := newEnv(t, "admin:\n  dual_control: [credential_remove, user_remove]\n")
	e.must("a long password\n", "user", "add", "alice", "--password-file", "-")
	_, _, err := e.run("", "user", "remove", "alice")
	ae, ok := err.(*admin.Error)
	if !ok || ae.Kind != admin.KindPending || !strings.HasSuffix(ae.Message, "RemoveUser needs approval by a second operator within 24h (signd pending approve "+ae.ID+")") {
		t.Fatalf("user remove under dual control: %v", err)
	}
	if _, _, err := e.run("", "pending", "approve", ae.ID); admin.KindOf(err) != admin.KindForbidden {
		t.Errorf("self-approval: %v", err)
	}
	if out := e.must("", "pending", "reject", ae.ID); !strings.HasPrefix(out, "rejected pending request "+ae.ID+": RemoveUser {\"Name\":\"alice\"} requested by uid:") {
		t.Errorf("withdrawal: %q", out)
	}
	if out := e.must("", "user", "show", "alice"); !strings.Contains(out, "alice") {
		t.Errorf("alice after the withdrawn removal: %s", out)
	}
	if out := e.must("", "pending", "list", "--json"); strings.TrimSpace(out) != "[]" {
		t.Errorf("pending after the withdrawal: %s", out)
	}
}

// TestDualControlSweptByDaemon: the daemon's sweeper removes a request
// left past admin.pending_ttl (the daemon's clock moved) and audits it as
// pending_expired by signd. The test waits for the sweeper's ticker
// (oauth.sweep_interval 1s), not for the expiry.
func TestDualControlSweptByDaemon(t *testing.T) {
	e := newEnv(t, "admin:\n  dual_control: [user_remove]\noauth:\n  sweep_interval: 1s\n")
	var skew atomic.Int64
	e.startDaemonWith(func(a *app) { a.now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) } })
	e.must("a long password\n", "user", "add", "alice", "--password-file", "-")
	_, _, err := e.run("", "user", "remove", "alice")
	ae, ok := err.(*admin.Error)
	if !ok || ae.Kind != admin.KindPending {
		t.Fatalf("user remove under dual control: %v", err)
	}
	skew.Store(int64(24 * time.Hour))
	deadline := time.Now().Add(15 * time.Second)
	for strings.TrimSpace(e.must("", "pending", "list", "--json")) != "[]" {
		if time.Now().After(deadline) {
			t.Fatal("the sweeper left the expired request")
		}
		time.Sleep(50 * time.Millisecond)
	}
	var expired []store.AuditEntry
	for _, line := range strings.Split(strings.TrimSpace(e.must("", "audit", "export")), "\n") {
		ent, err := store.DecodeAuditEntry([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		if ent.Kind == store.AuditPendingExpired {
			expired = append(expired, *ent)
		}
	}
	if len(expired) != 1 || expired[0].Actor != "signd" || expired[0].Fields["id"] != ae.ID || expired[0].Fields["op"] != "RemoveUser" {
		t.Errorf("pending_expired entries: %+v", expired)
	}
	if out := e.must("", "user", "show", "alice"); !strings.Contains(out, "alice") {
		t.Errorf("alice after the expired removal: %s", out)
	}
}

// TestDualControlRolesAtApproval: the daemon looks up a requester's roles
// at the approval by their uid's groups in the database, not by the gid
// of the process that asked. An operator who was an administrator by the
// gid of their process (54402, unknown to the database) asks for a user
// removal; when a second administrator approves it, the requester holds
// no role: the request is rejected, nothing is removed, and the audit log
// says why.
func TestDualControlRolesAtApproval(t *testing.T) {
	r := newRolesEnv(t, "  dual_control: [user_remove]\n")
	admins := r.roleGID[admin.RoleAdministrator]
	asked := callAs(t, r.socket, 54402, admins, []uint32{r.operators}, []rpcCall{{Method: "RemoveUser", Body: `{"Name":"alice"}`}})[0]
	var held admin.Error
	if err := json.Unmarshal([]byte(asked.Answer), &held); err != nil || asked.Status != 202 || held.Kind != admin.KindPending || held.ID == "" {
		t.Fatalf("RemoveUser under dual control: %d %s", asked.Status, asked.Answer)
	}
	got := callAs(t, r.socket, 54412, admins, []uint32{r.operators}, []rpcCall{
		{Method: "ApprovePending", Body: fmt.Sprintf(`{"Name":%q}`, held.ID)},
		{Method: "ApprovePending", Body: fmt.Sprintf(`{"Name":%q}`, held.ID)},
	})
	want := held.ID + " is rejected: its requester uid:54402 no longer holds a role of RemoveUser (the role administrator); they hold no role now"
	var refusal admin.Error
	if err := json.Unmarshal([]byte(got[0].Answer), &refusal); err != nil || got[0].Status != 403 || refusal.Message != want {
		t.Fatalf("approval: %d %s, want 403 %q", got[0].Status, got[0].Answer, want)
	}
	if got[1].Status != 404 {
		t.Errorf("second approval: %d %s, want 404: the request was rejected", got[1].Status, got[1].Answer)
	}
	audit := r.exportAsAuditor(t)
	for _, want := range []string{`"kind":"pending_rejected"`, `"actor":"signd"`, `"approval_by":"uid:54412"`, `"reason":"` + want + `"`} {
		if !strings.Contains(audit, want) {
			t.Errorf("the audit log lacks %s:\n%s", want, audit)
		}
	}
}
