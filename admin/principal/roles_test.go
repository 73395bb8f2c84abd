package principal

import (
	"slices"
	"testing"
)

func TestRoleMap(t *testing.T) {
	var zero RoleMap
	if zero.Configured() || len(zero.GroupRoles([]uint32{0, 1})) != 0 || len(zero.Groups()) != 0 {
		t.Errorf("the zero RoleMap grants something: %v %v", zero.GroupRoles([]uint32{0, 1}), zero.Groups())
	}
	m, err := GroupRoleMap(map[string][]uint32{
		"auditor":          {30, 10},
		"administrator":    {20},
		"security_officer": {10},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !m.Configured() {
		t.Error("a RoleMap with groups is not Configured")
	}
	if got, want := m.Groups(), []uint32{10, 20, 30}; !slices.Equal(got, want) {
		t.Errorf("Groups() = %v, want %v", got, want)
	}
	tests := []struct {
		gids []uint32
		want []Role
	}{
		{nil, nil},
		{[]uint32{99}, nil},
		{[]uint32{20}, []Role{RoleAdministrator}},
		{[]uint32{30}, []Role{RoleAuditor}},
		// A group in two roles gives both, in the order of Roles.
		{[]uint32{10}, []Role{RoleSecurityOfficer, RoleAuditor}},
		// Several groups add up; each role once.
		{[]uint32{30, 20, 10, 99}, []Role{RoleSecurityOfficer, RoleAdministrator, RoleAuditor}},
	}
	for _, tt := range tests {
		if got := m.GroupRoles(tt.gids); !slices.Equal(got, tt.want) {
			t.Errorf("GroupRoles(%v) = %v, want %v", tt.gids, got, tt.want)
		}
	}
	if _, err := GroupRoleMap(map[string][]uint32{"root": {0}}); err == nil ||
		err.Error() != `admin.roles: unknown role "root" (roles: security_officer, administrator, auditor)` {
		t.Errorf("unknown role: %v", err)
	}
}
