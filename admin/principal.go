package admin

import (
	"crypto/x509"

	"github.com/signd/signd/admin/principal"
)

// The principals and their trusted roles are package admin/principal's;
// these names keep admin's callers as they were.
type (
	// Role is principal.Role: a trusted role (ETSI EN 319 401 §7.4).
	Role = principal.Role
	// Principal is principal.Principal: who performs an operation.
	Principal = principal.Principal
	// RoleMap is principal.RoleMap: the roles by group and certificate.
	RoleMap = principal.RoleMap
	// Identity is principal.Identity: `signd whoami`.
	Identity = principal.Identity
	// RolesNow is principal.RolesNow: a requester's roles at the approval.
	RolesNow = principal.RolesNow
)

// The trusted roles (principal.RoleSecurityOfficer and its siblings).
const (
	RoleSecurityOfficer = principal.RoleSecurityOfficer
	RoleAdministrator   = principal.RoleAdministrator
	RoleAuditor         = principal.RoleAuditor
)

// Roles is principal.Roles.
func Roles() []Role { return principal.Roles() }

// ParseRole is principal.ParseRole.
func ParseRole(s string) (Role, error) { return principal.ParseRole(s) }

// SocketPrincipal is principal.SocketPrincipal.
func SocketPrincipal(uid uint32, name string, roles []Role) Principal {
	return principal.SocketPrincipal(uid, name, roles)
}

// Daemon is principal.Daemon.
func Daemon() Principal { return principal.Daemon() }

// GroupRoleMap is principal.GroupRoleMap.
func GroupRoleMap(byRole map[string][]uint32) (RoleMap, error) {
	return principal.GroupRoleMap(byRole)
}

// CertRoleMap is principal.CertRoleMap.
func CertRoleMap(byRole map[string][]string) (RoleMap, error) {
	return principal.CertRoleMap(byRole)
}

// CertEntry is principal.CertEntry.
func CertEntry(entry string) (string, error) { return principal.CertEntry(entry) }

// SPKIFingerprint is principal.SPKIFingerprint.
func SPKIFingerprint(cert *x509.Certificate) string { return principal.SPKIFingerprint(cert) }

// CertPrincipal is principal.CertPrincipal.
func CertPrincipal(cert *x509.Certificate, roles []Role) Principal {
	return principal.CertPrincipal(cert, roles)
}

// CertActor is principal.CertActor.
func CertActor(cert *x509.Certificate) string { return principal.CertActor(cert) }

// CertParty is principal.CertParty.
func CertParty(cert *x509.Certificate) string { return principal.CertParty(cert) }
