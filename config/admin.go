package config

import (
	"errors"
	"fmt"
	"strings"
)

// AdminConfig is the admin.* section: who may administer signd, and how
// administrative acts are controlled.
type AdminConfig struct {
	Roles RolesConfig `mapstructure:"roles"`
	// DualControlConfig is admin.dual_control and admin.pending_ttl
	// (dualcontrol.go).
	DualControlConfig `mapstructure:",squash"`
	// AdminAPIConfig is admin.api_* (adminapi.go): the provisioning API.
	AdminAPIConfig `mapstructure:",squash"`
	// EnrollmentConfig is admin.enrollment_ttl (enrollment.go).
	EnrollmentConfig `mapstructure:",squash"`
}

// RolesConfig is admin.roles.*: for each trusted role, the Unix groups
// (names or numeric gids) whose members hold it on the admin socket. The
// keys are the role names of package admin (admin.Roles). Nothing set
// means no separation of duties: every peer the socket serves holds every
// role. Once one role has a group, every role needs one.
type RolesConfig struct {
	SecurityOfficer []string `mapstructure:"security_officer"`
	Administrator   []string `mapstructure:"administrator"`
	Auditor         []string `mapstructure:"auditor"`
}

// MaxRoleGroups caps the groups of one role.
const MaxRoleGroups = 64

func adminKeys() []Key {
	return append([]Key{
		{Name: "admin.roles.security_officer", Default: []string(nil),
			Usage: "Unix groups (names or gids) whose members hold the security officer role on the admin socket: credentials, keys, TSA, OIDC keys, PINs; empty with the other roles empty = every role to every admin socket user",
			Doc:   "Unix groups (names or numeric gids, a YAML list; comma-separated in `SIGND_ADMIN_ROLES_SECURITY_OFFICER`) whose members hold the security officer role on the admin socket: credentials, keys, TSA, OIDC keys, signing PINs. See [Trusted roles](#trusted-roles-adminroles)"},
		{Name: "admin.roles.administrator", Default: []string(nil),
			Usage: "Unix groups whose members hold the administrator role: users, clients, passwords",
			Doc:   "the same for the administrator: users, clients, passwords, TOTP"},
		{Name: "admin.roles.auditor", Default: []string(nil),
			Usage: "Unix groups whose members hold the auditor role: audit export and verify, read-only listings",
			Doc:   "the same for the auditor: `audit verify`/`export` and the read-only listings. All three empty (the default): every admin socket user holds every role and `signd serve` warns at start. Once one is set, all three must be; every group must exist, at most 64 a role, none twice in a role (`root` and `0` are one group); a group may be in several roles. Read at start"},
	}, append(append(dualControlKeys(), adminAPIKeys()...), enrollmentKeys()...)...)
}

// ByRole returns the groups of each role, keyed by the role's name (the
// last part of its key), in the order of the key table.
func (r RolesConfig) ByRole() []RoleGroups {
	return []RoleGroups{
		{"security_officer", r.SecurityOfficer},
		{"administrator", r.Administrator},
		{"auditor", r.Auditor},
	}
}

// RoleGroups is one row of admin.roles.
type RoleGroups struct {
	Role   string
	Groups []string
}

// Configured reports whether admin.roles grants any role: then roles come
// only from it.
func (r RolesConfig) Configured() bool {
	for _, rg := range r.ByRole() {
		if len(rg.Groups) > 0 {
			return true
		}
	}
	return false
}

// GIDs resolves the groups of every role through the system's group
// database: role name → gids, in the order written. An unknown group is
// an error naming the key.
func (r RolesConfig) GIDs() (map[string][]uint32, error) {
	out := map[string][]uint32{}
	for _, rg := range r.ByRole() {
		for _, g := range rg.Groups {
			gid, err := lookupGID(g)
			if err != nil {
				return nil, fmt.Errorf("admin.roles.%s: %w", rg.Role, err)
			}
			out[rg.Role] = append(out[rg.Role], uint32(gid))
		}
	}
	return out, nil
}

func (a *AdminConfig) checks() []check {
	var checks []check
	configured := a.Roles.Configured()
	for _, rg := range a.Roles.ByRole() {
		checks = append(checks, check{"admin.roles." + rg.Role, roleGroups(rg.Role, rg.Groups, configured)})
	}
	return append(append(checks, a.DualControlConfig.checks()...), a.EnrollmentConfig.checks()...)
}

// roleGroups checks the groups of one role: each must exist, none twice
// (by gid: "root" and "0" are one group); a role without groups (absent
// or `auditor: []`, as the example file writes the default) is a mistake
// when another role has some. A group may hold several roles.
func roleGroups(role string, groups []string, configured bool) string {
	switch {
	case len(groups) == 0 && configured:
		return fmt.Sprintf("no group holds the %s role: once admin.roles grants a role, only admin.roles grants roles, so every role needs a group", role)
	case len(groups) > MaxRoleGroups:
		return fmt.Sprintf("at most %d groups, got %d", MaxRoleGroups, len(groups))
	}
	seen := map[int]string{}
	for i, g := range groups {
		if g == "" {
			return fmt.Sprintf("entry %d is empty: name a group", i+1)
		}
		gid, err := lookupGID(g)
		if err != nil {
			return err.Error()
		}
		if first, ok := seen[gid]; ok {
			if first == g {
				return fmt.Sprintf("group %q is listed twice", g)
			}
			return fmt.Sprintf("groups %q and %q are the same group (gid %d)", first, g, gid)
		}
		seen[gid] = g
	}
	return ""
}

// lookupGID resolves a group name or numeric gid like server.admin_group.
func lookupGID(name string) (int, error) {
	if name == "" {
		return 0, errors.New("an empty group name")
	}
	gid, err := (ServerConfig{AdminGroup: name}).AdminGID()
	if err != nil {
		return 0, errors.New(strings.TrimPrefix(err.Error(), "server.admin_group: "))
	}
	return gid, nil
}
