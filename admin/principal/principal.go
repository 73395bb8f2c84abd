package principal

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/signd/signd/admin/internal/approval"
)

// Role is a trusted role (ETSI EN 319 401 §7.4, CEN EN 419 241-1): what a
// principal may do through the admin service. Every operation requires
// exactly one role (see Operations).
type Role string

// The trusted roles.
const (
	// RoleSecurityOfficer manages keys: credentials, the time-stamping
	// key, the OIDC signing keys, the audit key, and unlocks signing PINs.
	RoleSecurityOfficer Role = "security_officer"
	// RoleAdministrator manages accounts: users, clients, passwords.
	RoleAdministrator Role = "administrator"
	// RoleAuditor reads: the audit log, and the read-only listings.
	RoleAuditor Role = "auditor"
)

// Roles lists every role, in the order the documentation names them.
func Roles() []Role { return []Role{RoleSecurityOfficer, RoleAdministrator, RoleAuditor} }

// ParseRole returns the role named s.
func ParseRole(s string) (Role, error) {
	if r := Role(s); slices.Contains(Roles(), r) {
		return r, nil
	}
	names := make([]string, 0, 3)
	for _, r := range Roles() {
		names = append(names, string(r))
	}
	return "", fmt.Errorf("unknown role %q (roles: %s)", s, strings.Join(names, ", "))
}

// Principal is who performs an operation: an operator on the admin socket
// (identified by the peer's uid, SO_PEERCRED), a client certificate of the
// provisioning API, or the daemon itself. The admin transport establishes
// it; nothing a caller sends can set it.
type Principal struct {
	// Actor is how the audit log names the principal: "uid:1001 (alice)",
	// "cert:CN=onboarding,O=Example sha256:3f1c…", "signd".
	Actor string
	// Party is the person behind the principal for dual control: two
	// principals with the same Party are the same operator ("uid:1001",
	// "cert-subject:CN=officer,O=Example": CertParty). "" never counts as
	// a second operator.
	Party string
	// Roles are the trusted roles the principal holds.
	Roles []Role
	// Certs is the chain of DER certificates a client of the provisioning
	// API presented, its certificate first; nil for the other principals.
	// A pending request keeps it, so that its approval can ask whether
	// the certificate is still admitted and what it holds then (RolesNow).
	Certs [][]byte
	// approvedBy is the Actor of the second operator who approved the
	// act this principal requested under dual control (admin/pending); set
	// only while ApprovePending performs it (Approved takes an approval
	// only package admin can make), so no transport can set it.
	approvedBy approval.By
}

// ApprovedBy is the Actor of the second operator who approved the act
// being performed (admin.dual_control), "" when it needed no approval.
// The act's audit entry names the requester as Actor and this one in
// Fields["approved_by"] (ApprovalFields).
func (p Principal) ApprovedBy() string { return p.approvedBy.Actor() }

// Approved is p acting on the approval by: how admin's ApprovePending
// performs a held request as its requester.
func (p Principal) Approved(by approval.By) Principal {
	p.approvedBy = by
	return p
}

// ApprovalFields returns fields with "approved_by" added when p acts on a
// second operator's approval: the Fields of an act's audit entry. fields
// may be nil; it is not modified.
func (p Principal) ApprovalFields(fields map[string]string) map[string]string {
	if p.ApprovedBy() == "" {
		return fields
	}
	out := make(map[string]string, len(fields)+1)
	for k, v := range fields {
		out[k] = v
	}
	out["approved_by"] = p.ApprovedBy()
	return out
}

// RolesNow looks up the roles that the requester of a pending request
// holds now, when a second operator approves it: by party ("uid:1001"),
// the groups of that uid as the admin socket resolves them; by the
// certificates certs (Principal.Certs), admin.api_roles for the
// certificate if the provisioning API still admits it. The error says
// why the requester's roles cannot be established (a certificate
// expired or revoked since, a group database that does not answer): the
// approval is then refused as for a requester who lost their role.
type RolesNow func(ctx context.Context, party string, certs [][]byte) ([]Role, error)

// Has reports whether p holds role r.
func (p Principal) Has(r Role) bool { return slices.Contains(p.Roles, r) }

// SocketPrincipal names the peer of the admin socket with user id uid and
// user name name ("" when the user database does not know it).
func SocketPrincipal(uid uint32, name string, roles []Role) Principal {
	actor := fmt.Sprintf("uid:%d", uid)
	if name != "" {
		actor = fmt.Sprintf("uid:%d (%s)", uid, name)
	}
	return Principal{Actor: actor, Party: fmt.Sprintf("uid:%d", uid), Roles: roles}
}

// Daemon is the principal of what signd does by itself (checkpoints,
// expiry of pending requests): every role, no Party.
func Daemon() Principal { return Principal{Actor: "signd", Roles: Roles()} }
