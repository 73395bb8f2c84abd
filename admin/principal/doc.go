// Package principal is who acts on signd's administration (package
// admin): the trusted roles (ETSI EN 319 401 §7.4, CEN EN 419 241-1), the
// Principal an admin transport establishes — a peer of the admin socket
// (SO_PEERCRED), a client certificate of the provisioning API, or the
// daemon itself — and the RoleMap that grants roles by Unix group
// (admin.roles) or by certificate subject or key fingerprint
// (admin.api_roles).
//
// It imports nothing of admin, which re-exports its names. Only admin
// can mark a Principal as acting on a second operator's approval (dual
// control): Approved takes an approval of package admin/internal/approval.
package principal
