package adminrpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os/user"
	"slices"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"golang.org/x/sys/unix"

	"github.com/signd/signd/admin"
)

// Uids and gids no user database knows.
const (
	officers, administrators, auditors, keepers = 54300, 54301, 54302, 54303
	alice, bob, carol, dave, erin               = 54311, 54312, 54313, 54314, 54315
)

// testRoles is admin.roles of the tests: one group per role, and keepers
// (security officer and auditor at once).
func testRoles(t *testing.T) admin.RoleMap {
	t.Helper()
	m, err := admin.GroupRoleMap(map[string][]uint32{
		"security_officer": {officers, keepers}, "administrator": {administrators}, "auditor": {auditors, keepers},
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// testGroups is the group database of the tests.
func testGroups(uid uint32) ([]uint32, error) {
	switch uid {
	case alice: // an administrator by the database
		return []uint32{alice, administrators}, nil
	case bob: // an auditor and a keeper
		return []uint32{bob, auditors, keepers}, nil
	case dave: // the database is down
		return nil, errors.New("nss: connection refused")
	}
	return nil, user.UnknownUserIdError(int(uid))
}

// A peer's roles are those admin.roles gives its process's gid and its
// user's groups in the database; root holds what its groups give it;
// without admin.roles every peer holds every role.
func TestRolesPrincipal(t *testing.T) {
	every := admin.Roles()
	so, ad, au := admin.RoleSecurityOfficer, admin.RoleAdministrator, admin.RoleAuditor
	tests := []struct {
		name       string
		configured bool
		uid, gid   uint32
		want       []admin.Role
		warn       bool
	}{
		{"no roles: anyone the socket serves", false, carol, carol, every, false},
		{"no roles: root", false, 0, 0, every, false},
		{"process gid", true, carol, officers, []admin.Role{so}, false},
		{"database group", true, alice, alice, []admin.Role{ad}, false},
		{"process gid and database groups add up", true, alice, auditors, []admin.Role{ad, au}, false},
		{"a group with two roles", true, bob, bob, []admin.Role{so, au}, false},
		{"no role group", true, carol, carol, nil, false},
		{"root holds nothing by being root", true, 0, 0, nil, false},
		{"database down: the process gid alone", true, dave, administrators, []admin.Role{ad}, true},
		{"database down, no role gid", true, dave, dave, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logs := &bytes.Buffer{}
			r := Roles{GroupIDs: testGroups, Logger: slog.New(slog.NewTextHandler(logs, nil))}
			if tt.configured {
				r.Map = testRoles(t)
			}
			p := r.Principal(&unix.Ucred{Uid: tt.uid, Gid: tt.gid})
			if !slices.Equal(p.Roles, tt.want) {
				t.Errorf("roles %v, want %v", p.Roles, tt.want)
			}
			if got := strings.Contains(logs.String(), "the groups of a peer could not be looked up"); got != tt.warn {
				t.Errorf("warning logged %v, want %v:\n%s", got, tt.warn, logs)
			}
			if tt.uid == 0 && p.Actor != "uid:0 (root)" || tt.uid == carol && p.Actor != "uid:54313" {
				t.Errorf("actor %q", p.Actor)
			}
		})
	}
}

// RolesOf, a requester's roles at the approval of their pending request,
// are those the database's groups of their uid give now: not the gid of
// the process that asked; no role where the user has none (or is gone);
// an error when the database does not answer; every role without
// admin.roles.
func TestRolesOf(t *testing.T) {
	so, ad, au := admin.RoleSecurityOfficer, admin.RoleAdministrator, admin.RoleAuditor
	tests := []struct {
		name       string
		configured bool
		uid        uint32
		want       []admin.Role
		err        string
	}{
		{"database group", true, alice, []admin.Role{ad}, ""},
		{"a group with two roles", true, bob, []admin.Role{so, au}, ""},
		{"unknown to the database", true, carol, nil, ""},
		{"database down", true, dave, nil, "the groups of uid 54314 cannot be looked up: nss: connection refused"},
		{"no roles: every role", false, carol, admin.Roles(), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Roles{GroupIDs: testGroups}
			if tt.configured {
				r.Map = testRoles(t)
			}
			got, err := r.RolesOf(tt.uid)
			if tt.err == "" && err != nil || tt.err != "" && (err == nil || err.Error() != tt.err) {
				t.Fatalf("RolesOf(%d) = %v, want error %q", tt.uid, err, tt.err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("RolesOf(%d) = %v, want %v", tt.uid, got, tt.want)
			}
		})
	}
	// carol asking from a process whose gid is officers is a security
	// officer then; the approval counts her groups, not that process's.
	r := Roles{Map: testRoles(t), GroupIDs: testGroups}
	if p := r.Principal(&unix.Ucred{Uid: carol, Gid: officers}); !p.Has(so) {
		t.Fatalf("carol with the gid officers: %v", p.Roles)
	}
	// bob leaves the keepers: a security officer no longer.
	r.GroupIDs = func(uid uint32) ([]uint32, error) { return []uint32{bob, auditors}, nil }
	if got, err := r.RolesOf(bob); err != nil || !slices.Equal(got, []admin.Role{au}) {
		t.Errorf("RolesOf(bob) after leaving keepers = %v, %v", got, err)
	}
}

// WhoAmI answers every peer, whatever its roles, with the actor, roles
// and groups; it takes no parameters.
func TestWhoAmI(t *testing.T) {
	r := Roles{Map: testRoles(t), GroupIDs: testGroups}
	e := echo.New()
	h := &Handler{Service: &recordingService{}, Principal: r.Principal, Identify: r.Identify}
	if err := h.Mount(e.Group("")); err != nil {
		t.Fatal(err)
	}
	call := func(cred *unix.Ucred, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, rpcPrefix+whoAmIMethod, strings.NewReader(body))
		if cred != nil {
			req = req.WithContext(contextWithPeer(req, cred))
		}
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		return rec
	}
	for _, tt := range []struct {
		name string
		cred *unix.Ucred
		want admin.Identity
	}{
		{"no role", &unix.Ucred{Uid: carol, Gid: carol},
			admin.Identity{Actor: "uid:54313", Roles: []admin.Role{}, Groups: []string{"54313"}, SeparationOfDuties: true, Via: "daemon"}},
		{"two roles", &unix.Ucred{Uid: bob, Gid: bob},
			admin.Identity{Actor: "uid:54312", Roles: []admin.Role{admin.RoleSecurityOfficer, admin.RoleAuditor},
				Groups: []string{"54312", "54302", "54303"}, SeparationOfDuties: true, Via: "daemon"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := call(tt.cred, "{}")
			var got admin.Identity
			if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &got) != nil {
				t.Fatalf("%d %s", rec.Code, rec.Body)
			}
			if !identical(got, tt.want) {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
			if !strings.Contains(rec.Body.String(), `"roles":[`) {
				t.Errorf("roles not a list: %s", rec.Body)
			}
		})
	}
	t.Run("no roles configured", func(t *testing.T) {
		h.Identify = Roles{GroupIDs: testGroups}.Identify
		defer func() { h.Identify = r.Identify }()
		var got admin.Identity
		if rec := call(&unix.Ucred{Uid: carol, Gid: carol}, " { } "); rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &got) != nil ||
			got.SeparationOfDuties || !slices.Equal(got.Roles, admin.Roles()) {
			t.Errorf("%d %s", rec.Code, rec.Body)
		}
	})
	for _, body := range []string{"", `{"actor":"uid:0 (root)"}`, `{} {}`, `[]`, `"x"`, `{`, `{}` + strings.Repeat(" ", maxWhoAmIBody)} {
		rec := call(&unix.Ucred{Uid: bob, Gid: bob}, body)
		var ae admin.Error
		if rec.Code != http.StatusBadRequest || json.Unmarshal(rec.Body.Bytes(), &ae) != nil || ae.Kind != admin.KindInvalid ||
			ae.Message != "malformed admin request: WhoAmI takes no parameters, send {}" {
			t.Errorf("body %.40q: %d %s", body, rec.Code, rec.Body)
		}
	}
	if rec := call(nil, "{}"); rec.Code != http.StatusForbidden {
		t.Errorf("without peer credentials: %d %s", rec.Code, rec.Body)
	}
}

// contextWithPeer is the context ConnContext records for a peer with cred.
func contextWithPeer(r *http.Request, cred *unix.Ucred) context.Context {
	return context.WithValue(r.Context(), peerKey{}, cred)
}

func identical(a, b admin.Identity) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}
