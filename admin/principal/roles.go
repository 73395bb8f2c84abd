package principal

import (
	"fmt"
	"slices"
)

// RoleMap grants the trusted roles by what identifies a principal: a Unix
// group of an admin socket peer (admin.roles, resolved to gids by the
// transport: this package reads no user database), or a client
// certificate of the provisioning API by its subject or its key's SHA-256
// fingerprint (admin.api_roles, certroles.go). The zero RoleMap grants
// nothing and is not Configured.
type RoleMap struct {
	groups map[uint32][]Role
	// certs: a certificate entry (CertEntry) → its roles.
	certs map[string][]Role
}

// GroupRoleMap builds the RoleMap of admin.roles: role name → the gids
// whose members hold it. An unknown role name is an error. A gid may
// hold several roles.
func GroupRoleMap(byRole map[string][]uint32) (RoleMap, error) {
	var m RoleMap
	for name, gids := range byRole {
		r, err := ParseRole(name)
		if err != nil {
			return RoleMap{}, fmt.Errorf("admin.roles: %w", err)
		}
		for _, gid := range gids {
			m.GrantGroup(r, gid)
		}
	}
	return m, nil
}

// GrantGroup gives role r to the members of the group gid.
func (m *RoleMap) GrantGroup(r Role, gid uint32) {
	if m.groups == nil {
		m.groups = map[uint32][]Role{}
	}
	if !slices.Contains(m.groups[gid], r) {
		m.groups[gid] = append(m.groups[gid], r)
	}
}

// Configured reports whether the map grants any role. When it does not,
// there is no separation of duties, and the transport decides who holds
// every role (the admin socket: every peer it serves).
func (m RoleMap) Configured() bool { return len(m.groups) > 0 || len(m.certs) > 0 }

// GroupRoles returns the roles held by a member of the groups gids, in
// the order of Roles, each once.
func (m RoleMap) GroupRoles(gids []uint32) []Role {
	var out []Role
	for _, r := range Roles() {
		for _, gid := range gids {
			if slices.Contains(m.groups[gid], r) {
				out = append(out, r)
				break
			}
		}
	}
	return out
}

// Groups returns every gid that holds a role, in increasing order.
func (m RoleMap) Groups() []uint32 {
	out := make([]uint32, 0, len(m.groups))
	for gid := range m.groups {
		out = append(out, gid)
	}
	slices.Sort(out)
	return out
}

// Identity is what the admin service knows of its caller: `signd whoami`.
// It needs no role.
type Identity struct {
	// Actor is how the audit log names the caller (Principal.Actor).
	Actor string `json:"actor"`
	// Roles are the trusted roles the caller holds; empty for none.
	Roles []Role `json:"roles"`
	// Groups are the groups the roles were looked up by, as "gid (name)".
	Groups []string `json:"groups,omitempty"`
	// SeparationOfDuties is false when no admin.roles are configured:
	// then every caller the transport serves holds every role.
	SeparationOfDuties bool `json:"separation_of_duties"`
	// Via says who answered: "daemon" (the admin socket) or "store" (the
	// CLI on the store file, no daemon running).
	Via string `json:"via"`
}
