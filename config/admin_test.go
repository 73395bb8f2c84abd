package config

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

// admin.roles: every group must exist, once per role; a role without a
// group once another has one is refused; a group may
// hold several roles.
func TestAdminRoles(t *testing.T) {
	all := func(groups ...string) RolesConfig {
		return RolesConfig{SecurityOfficer: groups, Administrator: groups, Auditor: groups}
	}
	tests := []struct {
		name  string
		roles RolesConfig
		want  map[string]string // key → substring of its problem; nil = valid
	}{
		{"none", RolesConfig{}, nil},
		{"every role", RolesConfig{SecurityOfficer: []string{"root"}, Administrator: []string{"0"}, Auditor: []string{"root"}}, nil},
		{"one group in every role", all("root"), nil},
		{"only one role", RolesConfig{Auditor: []string{"root"}}, map[string]string{
			"admin.roles.security_officer": "no group holds the security_officer role: once admin.roles grants a role, only admin.roles grants roles, so every role needs a group",
			"admin.roles.administrator":    "no group holds the administrator role",
		}},
		{"empty lists", RolesConfig{SecurityOfficer: []string{}, Administrator: []string{}, Auditor: []string{}}, nil},
		{"empty list beside the others", RolesConfig{SecurityOfficer: []string{"root"}, Administrator: []string{"root"}, Auditor: []string{}}, map[string]string{
			"admin.roles.auditor": "no group holds the auditor role",
		}},
		{"unknown group", RolesConfig{SecurityOfficer: []string{"root"}, Administrator: []string{"root", "no-such-group-signd"}, Auditor: []string{"root"}}, map[string]string{
			"admin.roles.administrator": `no group "no-such-group-signd" on this system`,
		}},
		{"unknown gid", all("4000000000"), map[string]string{
			"admin.roles.security_officer": `no group "4000000000" on this system`,
			"admin.roles.administrator":    `no group "4000000000" on this system`,
			"admin.roles.auditor":          `no group "4000000000" on this system`,
		}},
		{"empty name", RolesConfig{SecurityOfficer: []string{"root", ""}, Administrator: []string{"root"}, Auditor: []string{"root"}}, map[string]string{
			"admin.roles.security_officer": "entry 2 is empty: name a group",
		}},
		{"listed twice", RolesConfig{SecurityOfficer: []string{"root"}, Administrator: []string{"root"}, Auditor: []string{"root", "root"}}, map[string]string{
			"admin.roles.auditor": `group "root" is listed twice`,
		}},
		{"name and gid of one group", RolesConfig{SecurityOfficer: []string{"root", "0"}, Administrator: []string{"root"}, Auditor: []string{"root"}}, map[string]string{
			"admin.roles.security_officer": `groups "root" and "0" are the same group (gid 0)`,
		}},
		{"too many", RolesConfig{SecurityOfficer: slices.Repeat([]string{"root"}, MaxRoleGroups+1), Administrator: []string{"root"}, Auditor: []string{"root"}}, map[string]string{
			"admin.roles.security_officer": "at most 64 groups, got 65",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validConfig(t)
			c.Admin.Roles = tt.roles
			err := c.Validate()
			if tt.want == nil {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			e := problemsOf(t, err)
			got := map[string]string{}
			for _, p := range e.Problems {
				got[p.Key] = p.Msg
			}
			if len(got) != len(tt.want) {
				t.Errorf("problems %q, want keys %v", err, tt.want)
			}
			for k, frag := range tt.want {
				if !strings.Contains(got[k], frag) {
					t.Errorf("%s: %q, want ...%s...", k, got[k], frag)
				}
			}
		})
	}
}

// admin.roles from the file: a role name that is not one is an unknown
// key, with a suggestion or the list of roles; an empty list beside
// configured roles is refused; the problems come with the others.
func TestAdminRolesFromFile(t *testing.T) {
	isolate(t)
	base := "server:\n  base_url: https://x.org\npkcs11:\n  pin: \"1\"\n"
	t.Run("valid", func(t *testing.T) {
		_, c, err := loadYAML(t, base+"admin:\n  roles:\n    security_officer: [root]\n    administrator: [\"0\"]\n    auditor: [root]\n")
		if err != nil {
			t.Fatal(err)
		}
		want := RolesConfig{SecurityOfficer: []string{"root"}, Administrator: []string{"0"}, Auditor: []string{"root"}}
		if !reflect.DeepEqual(c.Admin.Roles, want) || !c.Admin.Roles.Configured() {
			t.Errorf("roles %#v, want %#v", c.Admin.Roles, want)
		}
		gids, err := c.Admin.Roles.GIDs()
		if err != nil || !reflect.DeepEqual(gids, map[string][]uint32{"security_officer": {0}, "administrator": {0}, "auditor": {0}}) {
			t.Errorf("GIDs() = %v, %v", gids, err)
		}
	})
	t.Run("absent", func(t *testing.T) {
		_, c, err := loadYAML(t, base)
		if err != nil {
			t.Fatal(err)
		}
		if c.Admin.Roles.Configured() {
			t.Errorf("no admin.roles, yet Configured: %#v", c.Admin.Roles)
		}
		if gids, err := c.Admin.Roles.GIDs(); err != nil || len(gids) != 0 {
			t.Errorf("GIDs() = %v, %v", gids, err)
		}
	})
	for _, tt := range []struct{ name, yaml, want string }{
		{"misspelt role", "admin:\n  roles:\n    auditors: [root]\n",
			`unknown key "admin.roles.auditors" (did you mean "admin.roles.auditor"?)`},
		{"not a role", "admin:\n  roles:\n    admin: [root]\n",
			`unknown key "admin.roles.admin" (admin.roles holds security_officer, administrator, auditor)`},
		{"role upper case", "admin:\n  roles:\n    Auditor: [root]\n",
			`unknown key "admin.roles.Auditor" (did you mean "admin.roles.auditor"? keys are lower case)`},
		{"empty list", "admin:\n  roles:\n    security_officer: [root]\n    administrator: [root]\n    auditor: []\n",
			"admin.roles.auditor: no group holds the auditor role"},
		{"a mapping", "admin:\n  roles: [root]\n", "admin.roles: must be a mapping of keys"},
		{"a number", "admin:\n  roles:\n    security_officer: [root]\n    administrator: [root]\n    auditor: [0]\n",
			"admin.roles.auditor: entry 1: must be a string, not a number (quote the value in YAML)"},
		{"with other problems", "admin:\n  roles:\n    auditor: [no-such-group-signd]\nlog:\n  level: loud\n",
			"admin.roles.security_officer: no group holds"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := loadYAML(t, base+tt.yaml)
			problemsOf(t, err)
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error lacks %q:\n%v", tt.want, err)
			}
		})
	}
	t.Run("every problem at once", func(t *testing.T) {
		_, _, err := loadYAML(t, base+"admin:\n  roles:\n    auditor: [no-such-group-signd]\nlog:\n  level: loud\n")
		e := problemsOf(t, err)
		want := []string{"log.level", "admin.roles.security_officer", "admin.roles.administrator", "admin.roles.auditor"}
		if !slices.Equal(e.Keys(), want) {
			t.Errorf("keys %v, want %v:\n%v", e.Keys(), want, err)
		}
	})
	t.Run("environment", func(t *testing.T) {
		t.Setenv("SIGND_ADMIN_ROLES_SECURITY_OFFICER", "root")
		t.Setenv("SIGND_ADMIN_ROLES_ADMINISTRATOR", "root, 0")
		t.Setenv("SIGND_ADMIN_ROLES_AUDITOR", "root")
		_, _, err := loadYAML(t, base)
		if err == nil || !strings.Contains(err.Error(), `admin.roles.administrator: groups "root" and "0" are the same group (gid 0)`) {
			t.Errorf("err = %v", err)
		}
	})
}
