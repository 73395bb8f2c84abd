package ops

import "github.com/signd/signd/admin/principal"

// The names of package admin/principal the operations are declared with.
type (
	// Principal is principal.Principal.
	Principal = principal.Principal
	// Role is principal.Role.
	Role = principal.Role
)

const (
	roleSecurityOfficer = principal.RoleSecurityOfficer
	roleAdministrator   = principal.RoleAdministrator
	roleAuditor         = principal.RoleAuditor
)
