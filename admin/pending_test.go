package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/signd/signd/store"
	"github.com/signd/signd/store/storetest"
)

// The operators of the dual-control tests: alice and bob are security
// officers (different uids, so different parties), alice2 is alice again
// under another name, carol an administrator, dave an auditor.
var (
	alice  = SocketPrincipal(1001, "alice", []Role{RoleSecurityOfficer})
	alice2 = SocketPrincipal(1001, "alice-admin", []Role{RoleSecurityOfficer, RoleAdministrator})
	bob    = SocketPrincipal(1002, "bob", []Role{RoleSecurityOfficer})
	carol  = SocketPrincipal(1003, "carol", []Role{RoleAdministrator})
	dave   = SocketPrincipal(1004, "dave", []Role{RoleAuditor})
)

// countingKeys is a KeyStore that counts DestroyKey calls, safe for
// concurrent use.
type countingKeys struct {
	destroyOnly
	destroyed atomic.Int32
}

func (k *countingKeys) DestroyKey(context.Context, []byte) error { k.destroyed.Add(1); return nil }

// dualWorld is removalWorld with RemoveCredential under dual control and
// an injected clock.
func dualWorld(t *testing.T) (*Local, *countingKeys, *storetest.Clock) {
	t.Helper()
	keys := &countingKeys{}
	l, _ := removalWorld(t, keys)
	clock := storetest.NewClock(time.Date(2030, 3, 4, 5, 6, 7, 0, time.UTC))
	l = l.reconfigured(func(c *Config) {
		c.Now, c.DualControl, c.RolesNow = clock.Now, []string{"RemoveCredential"}, rolesNowOf(alice, bob, carol, dave)
	})
	return l, keys, clock
}

// rolesNowOf is a RolesNow that finds a requester among ps by Party and
// gives their roles; a stranger holds none.
func rolesNowOf(ps ...Principal) RolesNow {
	return func(_ context.Context, party string, _ [][]byte) ([]Role, error) {
		for _, p := range ps {
			if p.Party == party {
				return p.Roles, nil
			}
		}
		return nil, nil
	}
}

// auditOf returns the audit log as "kind actor k=v ..." lines, the fields
// named in keys only.
func auditOf(t *testing.T, l *Local, keys ...string) []string {
	t.Helper()
	var lines []string
	err := l.core.Store.View(context.Background(), func(tx store.Tx) error {
		return store.AuditEntries(tx, 1, func(e *store.AuditEntry) error {
			if e.Kind == store.AuditAdminRead {
				return nil // the reads of the test itself (acts_test covers them)
			}
			line := fmt.Sprintf("%s %s %s", e.Kind, e.Outcome, e.Actor)
			for _, k := range keys {
				if v, ok := e.Fields[k]; ok {
					line += fmt.Sprintf(" %s=%s", k, v)
				}
			}
			lines = append(lines, line)
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return lines
}

// request asks alice's RemoveCredential c1 and returns the pending ID.
func request(t *testing.T, l *Local) string {
	t.Helper()
	_, err := l.RemoveCredential(context.Background(), alice, "c1")
	ae, ok := err.(*Error)
	if !ok || ae.Kind != KindPending || ae.ID == "" {
		t.Fatalf("RemoveCredential under dual control = %v, want KindPending with an ID", err)
	}
	want := fmt.Sprintf("pending request %s: RemoveCredential needs approval by a second operator within 24h (signd pending approve %s)", ae.ID, ae.ID)
	if ae.Message != want {
		t.Errorf("message %q, want %q", ae.Message, want)
	}
	return ae.ID
}

func credentialExists(t *testing.T, l *Local) bool {
	t.Helper()
	_, err := l.ShowCredential(context.Background(), operator, "c1")
	if err != nil && KindOf(err) != KindNotFound {
		t.Fatal(err)
	}
	return err == nil
}

// TestDualControlApproval: the request destroys nothing; the requester
// cannot approve it under any name, nor can an operator without the
// operation's role; a second security officer's approval performs it as
// the requester, and the audit log names both; the request is then gone.
func TestDualControlApproval(t *testing.T) {
	ctx := context.Background()
	l, keys, _ := dualWorld(t)
	id := request(t, l)
	if keys.destroyed.Load() != 0 || !credentialExists(t, l) {
		t.Fatal("the held removal destroyed the key or the credential")
	}
	list, err := l.ListPending(ctx, dave)
	if err != nil || len(list) != 1 || list[0].ID != id || list[0].Op != "RemoveCredential" ||
		string(list[0].Request) != `{"Name":"c1"}` || list[0].RequestedBy != "uid:1001 (alice)" || list[0].Expired ||
		!list[0].ExpiresAt.Equal(list[0].CreatedAt.Add(24*time.Hour)) {
		t.Fatalf("ListPending = %+v, %v", list, err)
	}

	refusals := []struct {
		name string
		by   Principal
		kind Kind
		msg  string
	}{
		{"self", alice, KindForbidden, "uid:1001 (alice) requested " + id + ": a second operator must approve it"},
		{"self under another name", alice2, KindForbidden, "uid:1001 (alice-admin) requested " + id + ": a second operator must approve it"},
		{"no party", Daemon(), KindForbidden, "signd cannot be told apart from the requester of " + id},
		{"without the operation's role", carol, KindForbidden, "approving " + id + " (RemoveCredential) requires a role of the operation: the role security_officer; uid:1003 (carol) holds the role administrator"},
		{"auditor", dave, KindForbidden, "ApprovePending requires the role security_officer or administrator"},
		{"unknown ID", bob, KindNotFound, `no pending request "no-such-id" (unknown, or already approved, rejected or expired)`},
	}
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			pid := id
			if tt.kind == KindNotFound {
				pid = "no-such-id"
			}
			_, err := l.ApprovePending(ctx, tt.by, pid)
			if KindOf(err) != tt.kind || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("ApprovePending = %v (kind %s), want %s %q", err, KindOf(err), tt.kind, tt.msg)
			}
		})
	}
	if keys.destroyed.Load() != 0 || !credentialExists(t, l) {
		t.Fatal("a refused approval destroyed the key or the credential")
	}

	res, err := l.ApprovePending(ctx, bob, id)
	if err != nil {
		t.Fatal(err)
	}
	var removed RemoveCredentialResult
	if err := json.Unmarshal(res.Result, &removed); err != nil || removed.Removed != "c1" || res.ApprovedBy != "uid:1002 (bob)" ||
		res.Pending.RequestedBy != "uid:1001 (alice)" || strings.Join(removed.Destroyed, ",") != "private key,public key" {
		t.Fatalf("ApprovePending = %+v (%s), %v", res, res.Result, err)
	}
	if keys.destroyed.Load() != 1 || credentialExists(t, l) {
		t.Fatalf("after the approval: %d destroys, credential still there %v", keys.destroyed.Load(), credentialExists(t, l))
	}
	if _, err := l.ApprovePending(ctx, bob, id); KindOf(err) != KindNotFound {
		t.Errorf("second approval = %v, want not found", err)
	}
	if list, _ := l.ListPending(ctx, dave); len(list) != 0 {
		t.Errorf("still pending: %+v", list)
	}
	want := []string{
		"pending_requested ok uid:1001 (alice) id=" + id + " op=RemoveCredential requested_by=uid:1001 (alice)",
		"admin_refused refused uid:1001 (alice) id=" + id + " op=ApprovePending requested_by=uid:1001 (alice)",
		"admin_refused refused uid:1001 (alice-admin) id=" + id + " op=ApprovePending requested_by=uid:1001 (alice)",
		"admin_refused refused signd id=" + id + " op=ApprovePending requested_by=uid:1001 (alice)",
		"admin_refused refused uid:1003 (carol) id=" + id + " op=ApprovePending requested_by=uid:1001 (alice)",
		"admin_refused refused uid:1004 (dave) op=ApprovePending",
		"pending_approved ok uid:1002 (bob) id=" + id + " op=RemoveCredential requested_by=uid:1001 (alice)",
		"credential_removed ok uid:1001 (alice) op=RemoveCredential approved_by=uid:1002 (bob)",
	}
	if got := auditOf(t, l, "id", "op", "requested_by", "approved_by"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("audit log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestDualControlRequesterRolesNow: the approval looks up the
// requester's roles again. A requester who left the operation's role
// since asking (a group taken from them), whose roles cannot be
// established (a certificate revoked since), or for whom signd has no
// lookup at all, has the request rejected by the approval: nothing is
// performed, the request is gone, and the audit log says why.
func TestDualControlRequesterRolesNow(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name     string
		rolesNow RolesNow
		reason   string
	}{
		{"left the role", rolesNowOf(SocketPrincipal(1001, "alice", []Role{RoleAuditor})),
			"its requester uid:1001 (alice) no longer holds a role of RemoveCredential (the role security_officer); they hold the role auditor now"},
		{"no role left", rolesNowOf(), "its requester uid:1001 (alice) no longer holds a role of RemoveCredential (the role security_officer); they hold no role now"},
		{"not admitted", func(context.Context, string, [][]byte) ([]Role, error) {
			return nil, fmt.Errorf("the client certificate (serial 7) is revoked")
		}, "the roles of its requester uid:1001 (alice) cannot be established now: the client certificate (serial 7) is revoked"},
		{"no lookup", nil, "the roles of its requester uid:1001 (alice) cannot be established now: signd has no way to look up the roles of a requester"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, keys, _ := dualWorld(t)
			id := request(t, l)
			l = l.reconfigured(func(c *Config) { c.RolesNow = tt.rolesNow })
			_, err := l.ApprovePending(ctx, bob, id)
			if want := id + " is rejected: " + tt.reason; KindOf(err) != KindForbidden || err.Error() != want {
				t.Fatalf("ApprovePending = %v (kind %s), want forbidden %q", err, KindOf(err), want)
			}
			if keys.destroyed.Load() != 0 || !credentialExists(t, l) {
				t.Fatal("the request of a requester without the role was performed")
			}
			if list, _ := l.ListPending(ctx, dave); len(list) != 0 {
				t.Errorf("the request still waits: %+v", list)
			}
			if _, err := l.ApprovePending(ctx, carol, id); KindOf(err) != KindNotFound {
				t.Errorf("approval after the rejection = %v, want not found", err)
			}
			var rejected *store.AuditEntry
			_ = l.core.Store.View(ctx, func(tx store.Tx) error {
				return store.AuditEntries(tx, 1, func(e *store.AuditEntry) error {
					if e.Kind == store.AuditPendingRejected {
						rejected = e
					}
					return nil
				})
			})
			if rejected == nil || rejected.Actor != "signd" || rejected.Reason != id+" is rejected: "+tt.reason ||
				rejected.Fields["id"] != id || rejected.Fields["approval_by"] != bob.Actor || rejected.Fields["requested_by"] != alice.Actor {
				t.Errorf("pending_rejected entry %+v", rejected)
			}
			want := []string{
				"pending_requested ok uid:1001 (alice) id=" + id,
				"pending_rejected ok signd id=" + id,
				"admin_refused refused uid:1002 (bob) id=" + id,
			}
			if got := auditOf(t, l, "id"); strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("audit log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
	// A requester who holds the role still is not rejected, and an
	// approver without the role rejects nothing.
	l, keys, _ := dualWorld(t)
	id := request(t, l)
	l = l.reconfigured(func(c *Config) { c.RolesNow = rolesNowOf() })
	if _, err := l.ApprovePending(ctx, carol, id); KindOf(err) != KindForbidden || !strings.Contains(err.Error(), "requires a role of the operation") {
		t.Fatalf("ApprovePending by an administrator = %v", err)
	}
	if list, _ := l.ListPending(ctx, dave); len(list) != 1 || keys.destroyed.Load() != 0 {
		t.Fatalf("an approver without the role decided the request: %+v", list)
	}
}

// TestDualControlRace: approvals by several second operators at once
// perform the act exactly once; the others find the request decided.
func TestDualControlRace(t *testing.T) {
	l, keys, _ := dualWorld(t)
	id := request(t, l)
	const n = 8
	errs := make([]error, n)
	storetest.AtOnce(n, func(i int) {
		_, errs[i] = l.ApprovePending(context.Background(), SocketPrincipal(uint32(2000+i), "", []Role{RoleSecurityOfficer}), id)
	})
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case KindOf(err) != KindNotFound:
			t.Errorf("a losing approval: %v, want not found", err)
		}
	}
	if ok != 1 || keys.destroyed.Load() != 1 {
		t.Errorf("%d approvals succeeded and the key was destroyed %d times, want 1 and 1", ok, keys.destroyed.Load())
	}
	approved := 0
	for _, line := range auditOf(t, l) {
		if strings.HasPrefix(line, "pending_approved ") {
			approved++
		}
	}
	if approved != 1 {
		t.Errorf("%d pending_approved entries, want 1", approved)
	}
}

// TestDualControlExpiry: once the TTL has passed (injected clock) the
// request is listed as expired and refused at approval, which removes it
// with a pending_expired entry; the key stays.
func TestDualControlExpiry(t *testing.T) {
	ctx := context.Background()
	l, keys, clock := dualWorld(t)
	l = l.reconfigured(func(c *Config) { c.PendingTTL = time.Hour })
	_, err := l.RemoveCredential(ctx, alice, "c1")
	id := err.(*Error).ID
	if !strings.Contains(err.Error(), "within 1h ") {
		t.Errorf("message %q, want the TTL", err)
	}
	clock.Advance(time.Hour - time.Nanosecond)
	if list, _ := l.ListPending(ctx, dave); len(list) != 1 || list[0].Expired {
		t.Fatalf("a nanosecond before expiry: %+v", list)
	}
	clock.Advance(time.Nanosecond)
	if list, _ := l.ListPending(ctx, dave); len(list) != 1 || !list[0].Expired {
		t.Fatalf("at expiry: %+v", list)
	}
	_, err = l.ApprovePending(ctx, bob, id)
	if KindOf(err) != KindConflict || !strings.Contains(err.Error(), "expired unapproved at 2030-03-04T06:06:07Z") {
		t.Fatalf("late approval = %v (kind %s), want conflict: expired", err, KindOf(err))
	}
	if keys.destroyed.Load() != 0 || !credentialExists(t, l) {
		t.Fatal("an expired request was performed")
	}
	if _, err := l.ApprovePending(ctx, bob, id); KindOf(err) != KindNotFound {
		t.Errorf("approval after the expiry was recorded = %v, want not found", err)
	}
	got := auditOf(t, l, "id")
	if len(got) != 2 || got[1] != "pending_expired ok signd id="+id {
		t.Errorf("audit log %q", got)
	}
}

// TestDualControlReject: an operator without the operation's role cannot
// reject; the requester may withdraw, and another security officer
// refuse; a rejected request cannot be approved.
func TestDualControlReject(t *testing.T) {
	ctx := context.Background()
	l, keys, _ := dualWorld(t)
	for _, by := range []Principal{bob, alice} {
		id := request(t, l)
		if _, err := l.RejectPending(ctx, carol, id); KindOf(err) != KindForbidden ||
			!strings.Contains(err.Error(), "rejecting "+id+" (RemoveCredential) requires a role of the operation") {
			t.Errorf("RejectPending by an administrator = %v", err)
		}
		v, err := l.RejectPending(ctx, by, id)
		if err != nil || v.ID != id {
			t.Fatalf("RejectPending by %s = %+v, %v", by.Actor, v, err)
		}
		if _, err := l.ApprovePending(ctx, bob, id); KindOf(err) != KindNotFound {
			t.Errorf("approval of a rejected request = %v, want not found", err)
		}
		if got := auditOf(t, l, "id"); got[len(got)-1] != "pending_rejected ok "+by.Actor+" id="+id {
			t.Errorf("last audit entry %q", got[len(got)-1])
		}
	}
	if keys.destroyed.Load() != 0 || !credentialExists(t, l) {
		t.Fatal("a rejected request was performed")
	}
}

// TestDualControlRefusesPartyless: a principal with no Party cannot ask
// for an act under dual control: no one could be told apart from it.
func TestDualControlRefusesPartyless(t *testing.T) {
	l, keys, _ := dualWorld(t)
	_, err := l.RemoveCredential(context.Background(), Daemon(), "c1")
	if KindOf(err) != KindForbidden || !strings.Contains(err.Error(), "RemoveCredential is under dual control and signd cannot be told apart") {
		t.Fatalf("RemoveCredential by the daemon = %v", err)
	}
	if list, _ := l.ListPending(context.Background(), dave); len(list) != 0 || keys.destroyed.Load() != 0 {
		t.Errorf("pending %+v, destroyed %d", list, keys.destroyed.Load())
	}
}

// TestEveryHoldableOperationIsHeld walks Operations: every operation that
// can be put under dual control is held when it is — its method goes
// through hold after its role check — and nothing else is.
func TestEveryHoldableOperationIsHeld(t *testing.T) {
	held := 0
	for _, o := range Operations() {
		if Holdable(o.Name) != nil {
			continue
		}
		held++
		t.Run(o.Name, func(t *testing.T) {
			l, keys, _ := dualWorld(t)
			l = l.reconfigured(func(c *Config) { c.DualControl = []string{o.Name} })
			raw, _ := json.Marshal(o.Request)
			_, err := o.Call(context.Background(), l, operator, raw)
			var id string
			if ae, ok := err.(*Error); ok && ae.Kind == KindPending {
				id = ae.ID
			} else {
				t.Fatalf("%s under dual control = %v, want KindPending", o.Name, err)
			}
			list, err := l.ListPending(context.Background(), operator)
			if err != nil || len(list) != 1 || list[0].ID != id || list[0].Op != o.Name || string(list[0].Request) != string(raw) {
				t.Errorf("pending %+v, %v", list, err)
			}
			if keys.destroyed.Load() != 0 {
				t.Error("the held operation destroyed a key")
			}
		})
	}
	if held < 10 {
		t.Errorf("only %d operations can be held", held)
	}
}

// TestHoldable: operations whose request or answer carries a secret, that
// change nothing or that decide pending requests cannot be held.
func TestHoldable(t *testing.T) {
	for op, want := range map[string]string{
		"RemoveCredential": "",
		"RotateOIDCKeys":   "",
		"EnrollTSA":        "",
		"AddUser":          "AddUser cannot wait for approval: its request carries the password and the PIN",
		"SetPassword":      "SetPassword cannot wait for approval: its request carries the new password",
		"SetPIN":           "SetPIN cannot wait for approval: its request carries the new PIN",
		"AddClient":        "AddClient cannot wait for approval: its request or its answer carries the client secret",
		"EnrollTOTP":       "EnrollTOTP cannot wait for approval: its answer carries the TOTP secret",
		"AddProof":         "AddProof cannot wait for approval: its request carries an identity document",
		"ListUsers":        "ListUsers changes nothing",
		"ApprovePending":   "ApprovePending decides pending requests",
		"RejectPending":    "RejectPending decides pending requests",
		"NoSuchOp":         `unknown operation "NoSuchOp"`,
	} {
		err := Holdable(op)
		if want == "" && err != nil || want != "" && (err == nil || !strings.HasPrefix(err.Error(), want)) {
			t.Errorf("Holdable(%s) = %v, want %q", op, err, want)
		}
	}
}
