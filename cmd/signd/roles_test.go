package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/signd/signd/admin"
	"github.com/signd/signd/cmd/signd/adminrpc"
	"github.com/signd/signd/store"
	"github.com/signd/signd/store/bolt"
)

// Trusted roles through the real admin socket: the helper process runs
// as another uid with the gid of one role's group, so the daemon learns
// its roles from SO_PEERCRED as it would an operator's.

// rpcCall is one admin socket call of the "calls" helper, and its answer.
type rpcCall struct {
	Method string `json:"method"`
	Body   string `json:"body"`
	Status int    `json:"status,omitempty"`
	Answer string `json:"answer,omitempty"`
}

// runCalls is the "calls" helper: it reads a JSON list of calls from
// stdin, makes each on the admin socket and prints each call with its
// status and answer, one JSON line a call.
func runCalls(socket string) int {
	var calls []rpcCall
	if err := json.NewDecoder(os.Stdin).Decode(&calls); err != nil {
		fmt.Println("bad input:", err)
		return 1
	}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
	}}
	enc := json.NewEncoder(os.Stdout)
	for _, c := range calls {
		res, err := client.Post("http://signd/admin/v1/"+c.Method, "application/json", strings.NewReader(c.Body))
		if err != nil {
			c.Answer = "error: " + err.Error()
		} else {
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			c.Status, c.Answer = res.StatusCode, string(b)
		}
		_ = enc.Encode(c)
	}
	return 0
}

// callAs makes calls on socket as uid with gid and the supplementary
// groups, from a helper process, and returns the answers.
func callAs(t *testing.T, socket string, uid, gid uint32, groups []uint32, calls []rpcCall) []rpcCall {
	t.Helper()
	in, _ := json.Marshal(calls)
	cmd := childCommand(t, uid, gid, groups, "calls", socket)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper as uid %d: %v: %s%s", uid, err, out, stderr.String())
	}
	var got []rpcCall
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var c rpcCall
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("helper as uid %d printed %q", uid, sc.Text())
		}
		got = append(got, c)
	}
	if len(got) != len(calls) {
		t.Fatalf("helper as uid %d answered %d of %d calls:\n%s", uid, len(got), len(calls), out)
	}
	return got
}

// spareGroups returns n groups of the system's group database that root
// is not a member of: the role groups of the tests. They are looked up,
// not created, so that a test never changes /etc/group.
func spareGroups(t *testing.T, n int) []*user.Group {
	t.Helper()
	rootGroups, err := adminrpc.UserGroupIDs(0)
	if err != nil {
		t.Fatal(err)
	}
	var out []*user.Group
	for gid := 1; gid < 1000 && len(out) < n; gid++ {
		g, err := user.LookupGroupId(strconv.Itoa(gid))
		if err != nil || slices.Contains(rootGroups, uint32(gid)) {
			continue
		}
		out = append(out, g)
	}
	if len(out) < n {
		t.Skipf("the group database has %d groups below 1000 without root, the test needs %d", len(out), n)
	}
	return out
}

func groupID(g *user.Group) uint32 {
	n, _ := strconv.ParseUint(g.Gid, 10, 32)
	return uint32(n)
}

// rolesEnv is an installation with admin.roles: one group per role, and
// server.admin_group (every operator's group) that lets them reach the
// socket file, set up as README says. When the group database puts uid
// 65534 in group 65534, that group holds the auditor role too
// (dbAuditor). adminKeys are more lines of the admin section
// ("  dual_control: [user_remove]\n").
type rolesEnv struct {
	*env
	socket    string
	logs      *syncBuffer
	roleGID   map[admin.Role]uint32
	operators uint32 // gid of server.admin_group
	dbAuditor bool
}

func newRolesEnv(t *testing.T, adminKeys ...string) *rolesEnv {
	t.Helper()
	needRoot(t)
	gs := spareGroups(t, 4)
	r := &rolesEnv{roleGID: map[admin.Role]uint32{
		admin.RoleSecurityOfficer: groupID(gs[0]), admin.RoleAdministrator: groupID(gs[1]), admin.RoleAuditor: groupID(gs[2]),
	}, operators: groupID(gs[3])}
	auditors := gs[2].Name
	if g, err := user.LookupGroupId(strconv.Itoa(nobody)); err == nil {
		gids, err := adminrpc.UserGroupIDs(nobody)
		if r.dbAuditor = err == nil && slices.Contains(gids, nobody) && !slices.ContainsFunc(gs, func(s *user.Group) bool { return s.Gid == g.Gid }); r.dbAuditor {
			auditors += ", " + g.Name
		}
	}
	r.env = newEnv(t, fmt.Sprintf("admin:\n  roles:\n    security_officer: [%s]\n    administrator: [%s]\n    auditor: [%s]\n%s",
		gs[0].Name, gs[1].Name, auditors, strings.Join(adminKeys, "")))
	r.setConfig("  admin_socket:", fmt.Sprintf("  admin_group: %s\n  admin_socket:", gs[3].Name))
	_, r.logs = r.daemon()
	r.socket = filepath.Join(r.dir, "s.sock")
	chown(t, r.dir, 0, int(r.operators))
	chmod(t, r.dir, 0o750)
	return r
}

// bodies are requests that pass decoding and make no change worth making
// when the role allows the call: an algorithm no token has, a name no
// record has.
var bodies = map[string]string{
	"CreateOIDCKey":  `{"alg":"HS256"}`,
	"RotateOIDCKeys": `{"alg":"HS256"}`,
	"EnrollTSA":      `{"algo":"rsa-1"}`,
}

func bodyOf(op string) string {
	if b, ok := bodies[op]; ok {
		return b
	}
	return "{}"
}

// Every operation refuses, through the socket, a principal holding a role
// the operation does not allow: 403 forbidden, and one admin_refused
// audit entry naming the actor and the operation. A principal holding an
// allowed role is not refused. The principals are helper processes of
// other uids whose gid is their role's group.
func TestAdminRolesThroughSocket(t *testing.T) {
	r := newRolesEnv(t)
	uids := map[admin.Role]uint32{admin.RoleSecurityOfficer: 54401, admin.RoleAdministrator: 54402, admin.RoleAuditor: 54403}

	// The operations of admin.Operations, and the store's methods the
	// daemon serves beside them (a backup is the security officer's).
	ops := append(admin.Operations(),
		admin.Operation{Name: "StoreCheck", Roles: admin.Roles()},
		admin.Operation{Name: "StoreBackup", Roles: []admin.Role{admin.RoleSecurityOfficer}})
	var calls []rpcCall
	calls = append(calls, rpcCall{Method: "WhoAmI", Body: "{}"})
	for _, op := range ops {
		calls = append(calls, rpcCall{Method: op.Name, Body: bodyOf(op.Name)})
	}
	refused := map[string]int{} // "actor op" → refusals the test expects
	for _, role := range admin.Roles() {
		uid := uids[role]
		actor := fmt.Sprintf("uid:%d", uid)
		got := callAs(t, r.socket, uid, r.roleGID[role], []uint32{r.operators}, calls)

		var id admin.Identity
		if got[0].Status != http.StatusOK || json.Unmarshal([]byte(got[0].Answer), &id) != nil ||
			id.Actor != actor || !slices.Equal(id.Roles, []admin.Role{role}) || !id.SeparationOfDuties {
			t.Errorf("%s: WhoAmI %d %s", role, got[0].Status, got[0].Answer)
		}
		for i, op := range ops {
			c := got[i+1]
			if !slices.Contains(op.Roles, role) {
				var ae admin.Error
				want := fmt.Sprintf("%s requires the role %s; %s holds the role %s", op.Name, joinRoles(op.Roles), actor, role)
				if c.Status != http.StatusForbidden || json.Unmarshal([]byte(c.Answer), &ae) != nil || ae.Kind != admin.KindForbidden || ae.Message != want {
					t.Errorf("%s by a %s: %d %s; want 403 %q", op.Name, role, c.Status, c.Answer, want)
				}
				refused[actor+" "+op.Name]++
				continue
			}
			if c.Status == http.StatusForbidden || c.Status == 0 {
				t.Errorf("%s by a %s (allowed): %d %s", op.Name, role, c.Status, c.Answer)
			}
		}
	}
	if len(refused) == 0 {
		t.Fatal("no operation refused any role")
	}

	// The audit, read by the auditor: one refusal per refused call, with
	// the actor and the operation, and none for an allowed one.
	export := callAs(t, r.socket, uids[admin.RoleAuditor], r.roleGID[admin.RoleAuditor], []uint32{r.operators},
		[]rpcCall{{Method: "AuditExport", Body: "{}"}})[0]
	if export.Status != http.StatusOK {
		t.Fatalf("audit export by the auditor: %d %s", export.Status, export.Answer)
	}
	audited := map[string]int{}
	for line := range strings.Lines(export.Answer) {
		e, err := store.DecodeAuditEntry([]byte(strings.TrimSpace(line)))
		if err != nil {
			t.Fatalf("audit line %q: %v", line, err)
		}
		if e.Kind == store.AuditAdminRefused {
			if e.Outcome != store.AuditRefused || !strings.Contains(e.Reason, e.Fields["op"]+" requires the role") {
				t.Errorf("refusal entry %+v", e)
			}
			audited[e.Actor+" "+e.Fields["op"]]++
		}
	}
	for k, n := range refused {
		if audited[k] != n {
			t.Errorf("%s: %d admin_refused entries, want %d", k, audited[k], n)
		}
	}
	for k, n := range audited {
		if refused[k] == 0 {
			t.Errorf("%s: %d admin_refused entries for an allowed call", k, n)
		}
	}
	if strings.Contains(r.logs.String(), "admin.roles is not set") {
		t.Error("the no-roles warning was logged with admin.roles set")
	}
}

func joinRoles(roles []admin.Role) string {
	names := make([]string, len(roles))
	for i, r := range roles {
		names[i] = string(r)
	}
	return strings.Join(names, " or ")
}

// With admin.roles, root and the daemon's own user hold what their groups
// give them (here nothing): they are served and refused like anyone. An
// operator in no role group is refused every operation and audited; a
// user in neither a role group nor the admin group is hung up on. A role
// held through the group database counts.
func TestAdminRolesOutsiders(t *testing.T) {
	r := newRolesEnv(t)

	t.Run("root", func(t *testing.T) {
		_, _, err := r.run("", "user", "list")
		if err == nil || !strings.Contains(err.Error(), "ListUsers requires the role administrator or auditor; uid:0 (root) holds no role") {
			t.Errorf("user list as root: %v", err)
		}
		out := r.must("", "whoami")
		if !strings.Contains(out, "actor:    uid:0 (root)\nroles:    none\n") || !strings.Contains(out, "duties:   separated (admin.roles)") ||
			!strings.Contains(out, "answered: by the daemon") {
			t.Errorf("whoami as root:\n%s", out)
		}
	})
	t.Run("operator without a role", func(t *testing.T) {
		got := callAs(t, r.socket, 54404, r.operators, nil, []rpcCall{{Method: "WhoAmI", Body: "{}"}, {Method: "ListUsers", Body: "{}"}})
		if !strings.Contains(got[0].Answer, `"actor":"uid:54404","roles":[]`) {
			t.Errorf("WhoAmI: %d %s", got[0].Status, got[0].Answer)
		}
		if got[1].Status != http.StatusForbidden || !strings.Contains(got[1].Answer, "uid:54404 holds no role") {
			t.Errorf("ListUsers: %d %s", got[1].Status, got[1].Answer)
		}
	})
	t.Run("neither role nor admin group", func(t *testing.T) {
		chmod(t, r.dir, 0o711)
		chmod(t, r.socket, 0o666)
		defer chmod(t, r.dir, 0o750)
		got := connectAs(t, r.socket, stranger, stranger)
		if strings.HasPrefix(got, "status") {
			t.Fatalf("uid %d in no role group reached the admin API: %s", stranger, got)
		}
		mustBeDaemonRefusal(t, got)
	})
	t.Run("auditor by the group database", func(t *testing.T) {
		if !r.dbAuditor {
			t.Skip("the group database does not put uid 65534 in group 65534")
		}
		// SO_PEERCRED says gid 54321; the database gives the role.
		got := callAs(t, r.socket, nobody, stranger, []uint32{r.operators}, []rpcCall{{Method: "WhoAmI", Body: "{}"}, {Method: "AuditVerify", Body: "{}"}})
		if !strings.Contains(got[0].Answer, `"roles":["auditor"]`) || got[1].Status != http.StatusOK {
			t.Errorf("nobody, an auditor by the database: %s / %d %s", got[0].Answer, got[1].Status, got[1].Answer)
		}
	})

	audit := r.exportAsAuditor(t)
	for _, want := range []string{`"actor":"uid:0 (root)"`, `"actor":"uid:54404"`} {
		if !strings.Contains(audit, want) || !strings.Contains(audit, `"kind":"admin_refused"`) {
			t.Errorf("audit lacks the refusal of %s:\n%s", want, audit)
		}
	}
}

func (r *rolesEnv) exportAsAuditor(t *testing.T) string {
	t.Helper()
	got := callAs(t, r.socket, 54403, r.roleGID[admin.RoleAuditor], []uint32{r.operators}, []rpcCall{{Method: "AuditExport", Body: "{}"}})
	if got[0].Status != http.StatusOK {
		t.Fatalf("audit export: %d %s", got[0].Status, got[0].Answer)
	}
	return got[0].Answer
}

// Without admin.roles, root (and whoever the socket serves) holds every
// role, as before trusted roles, and the daemon says at start that duties
// are not separated.
func TestAdminRolesUnset(t *testing.T) {
	e := newEnv(t, "")
	_, logs := e.daemon()
	if !strings.Contains(logs.String(), "admin.roles is not set: every user the admin socket serves (root, signd's own user, server.admin_group) holds every role") ||
		!strings.Contains(logs.String(), `"level":"WARN"`) {
		t.Errorf("no warning about the missing separation of duties:\n%s", logs)
	}
	e.must("correct horse\n", "user", "add", "alice", "--password-file", "-")
	if out := e.must("", "user", "list"); !strings.Contains(out, "alice") {
		t.Errorf("user list as root: %s", out)
	}
	out := e.must("", "whoami", "--json")
	var id admin.Identity
	if err := json.Unmarshal([]byte(out), &id); err != nil || id.Actor != "uid:0 (root)" || id.SeparationOfDuties ||
		!slices.Equal(id.Roles, admin.Roles()) || id.Via != "daemon" {
		t.Errorf("whoami: %s", out)
	}
}

// The CLI on the store file (no daemon) judges its own process as the
// daemon would: with admin.roles, root holds only what its groups give
// it, here auditor through group 0, and its refusals are audited.
func TestAdminRolesLocalCLI(t *testing.T) {
	if os.Geteuid() != 0 || os.Getegid() != 0 {
		t.Skip("needs to run as root:root, so that group root gives the auditor role")
	}
	gs := spareGroups(t, 2)
	e := newEnv(t, fmt.Sprintf("admin:\n  roles:\n    security_officer: [%s]\n    administrator: [%s]\n    auditor: [root]\n", gs[0].Name, gs[1].Name))
	_, _, err := e.run("correct horse\n", "user", "add", "alice", "--password-file", "-")
	if err == nil || !strings.Contains(err.Error(), "AddUser requires the role administrator; uid:0 (root) holds the role auditor") {
		t.Errorf("user add as root, an auditor: %v", err)
	}
	if out := e.must("", "audit", "verify"); !strings.Contains(out, "audit log intact") {
		t.Errorf("audit verify as root, an auditor: %s", out)
	}
	out := e.must("", "whoami")
	if !strings.Contains(out, "roles:    auditor\n") || !strings.Contains(out, "answered: by this command (no daemon runs)") {
		t.Errorf("whoami:\n%s", out)
	}
	db, err := bolt.Open(e.store, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var refusals []string
	err = db.View(context.Background(), func(tx store.Tx) error {
		return store.AuditEntries(tx, 1, func(a *store.AuditEntry) error {
			if a.Kind == store.AuditAdminRefused {
				refusals = append(refusals, a.Actor+" "+a.Fields["op"])
			}
			return nil
		})
	})
	if err != nil || !slices.Equal(refusals, []string{"uid:0 (root) AddUser"}) {
		t.Errorf("refusals audited: %q, %v", refusals, err)
	}
}
