package adminrpc

import (
	"errors"
	"fmt"
	"log/slog"
	"os/user"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/signd/signd/admin"
)

// Roles gives the admin socket's peers their trusted roles (admin.roles).
//
// A peer's groups are the gid SO_PEERCRED reports for its process and the
// groups of its uid in the system's group database (UserGroupIDs); Map
// gives the roles of those groups. Root and the daemon's own user are no
// exception: they hold what their groups give them. Without admin.roles
// (Map not Configured) there is no separation of duties: every peer Access
// lets in holds every role, as before trusted roles. The groups are looked
// up at every request, so taking an operator out of a group takes effect
// at their next command.
type Roles struct {
	Map admin.RoleMap
	// GroupIDs returns the groups of uid in the group database; nil means
	// UserGroupIDs (os/user).
	GroupIDs func(uid uint32) ([]uint32, error)
	Logger   *slog.Logger // nil = discard
}

// Principal is the Handler's Principal: the peer with credentials cred.
func (r Roles) Principal(cred *unix.Ucred) admin.Principal {
	p, _ := r.resolve(cred.Uid, cred.Gid)
	return p
}

// Identify is the Handler's Identify: what `signd whoami` shows of the
// peer with credentials cred.
func (r Roles) Identify(cred *unix.Ucred) admin.Identity {
	return r.IdentifyIDs(cred.Uid, cred.Gid, "daemon")
}

// IdentifyIDs describes the process with effective uid and gid; via says
// who answers (admin.Identity.Via). The CLI uses it for itself when no
// daemon runs.
func (r Roles) IdentifyIDs(uid, gid uint32, via string) admin.Identity {
	p, gids := r.resolve(uid, gid)
	id := admin.Identity{Actor: p.Actor, Roles: p.Roles, SeparationOfDuties: r.Map.Configured(), Via: via}
	if id.Roles == nil {
		id.Roles = []admin.Role{}
	}
	for _, g := range gids {
		name := strconv.FormatUint(uint64(g), 10)
		if grp, err := user.LookupGroupId(name); err == nil {
			name = fmt.Sprintf("%s (%s)", name, grp.Name)
		}
		id.Groups = append(id.Groups, name)
	}
	return id
}

// PrincipalIDs is the principal of the process with effective uid and
// gid: the CLI's own when no daemon runs.
func (r Roles) PrincipalIDs(uid, gid uint32) admin.Principal {
	p, _ := r.resolve(uid, gid)
	return p
}

// resolve returns the principal of uid and gid and the groups its roles
// were looked up by (primary first).
func (r Roles) resolve(uid, gid uint32) (admin.Principal, []uint32) {
	name := ""
	if u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10)); err == nil {
		name = u.Username
	}
	gids := []uint32{gid}
	lookup := r.GroupIDs
	if lookup == nil {
		lookup = UserGroupIDs
	}
	more, err := lookup(uid)
	var unknown user.UnknownUserIdError
	if err != nil && !errors.As(err, &unknown) && r.Logger != nil {
		// Only the process's own gid counts then: fewer roles, never more.
		r.Logger.Warn("admin socket: the groups of a peer could not be looked up", "peer_uid", uid, "err", err)
	}
	for _, g := range more {
		if !slices.Contains(gids, g) {
			gids = append(gids, g)
		}
	}
	roles := admin.Roles()
	if r.Map.Configured() {
		roles = r.Map.GroupRoles(gids)
	}
	return admin.SocketPrincipal(uid, name, roles), gids
}

// RolesOf returns the roles the user uid holds now by the group database
// alone: what a pending request's approval asks of its requester
// (admin.Config.RolesNow). The gid of the process that asked is not
// counted: it lived as long as that process. An error of the database is
// returned: the requester's roles cannot be established.
func (r Roles) RolesOf(uid uint32) ([]admin.Role, error) {
	if !r.Map.Configured() {
		return admin.Roles(), nil
	}
	lookup := r.GroupIDs
	if lookup == nil {
		lookup = UserGroupIDs
	}
	gids, err := lookup(uid)
	var unknown user.UnknownUserIdError
	if err != nil && !errors.As(err, &unknown) {
		return nil, fmt.Errorf("the groups of uid %d cannot be looked up: %w", uid, err)
	}
	return r.Map.GroupRoles(gids), nil
}
