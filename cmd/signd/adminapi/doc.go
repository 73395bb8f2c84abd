// Package adminapi is the provisioning API: the operations of package
// admin over HTTPS with client certificates, for an onboarding system
// that creates users, keys and certificates without a shell on the box
// (docs/API.md, "Provisioning API"; docs/admin-openapi.yaml). It is one
// more thin adapter over admin.Service, beside the admin socket
// (cmd/signd/adminrpc).
//
// Who may call it is settled before any handler runs (gate.go): TLS 1.2
// or later, a client certificate required and verified against
// admin.api_client_ca (tls.RequireAndVerifyClientCert), not on
// admin.api_client_crl, and granted a role by admin.api_roles (its
// subject or its key's SHA-256 fingerprint, admin.CertRoleMap). A
// certificate that verifies through more than one chain (a cross-signed
// CA) is checked on every one (Gate.check): listed by the CRL on any, it
// is refused; otherwise one chain passing every check admits it. The
// handshake runs in the listener (Gate.Listen), so that a refused
// handshake is audited (admin_refused, op tls_handshake) naming the
// certificate when the client sent one, and no HTTP is spoken with it.
// Every request asks the CRL in force again (Gate.Admit): a certificate
// revoked by a reloaded CRL or expired, or a CRL gone out of date, while
// a kept-alive connection is open is refused at its next request (403,
// admin_refused with the request's operation) and the connection closed.
//
// Each request then acts as admin.CertPrincipal of the certificate: every
// route calls one admin.Operations entry, so the roles, dual control (a
// certificate of another subject approves: POST /pending/{id}/approve,
// and the approval asks the gate again what the requester's kept
// certificate chain holds, Gate.RolesOf) and the one
// audit entry per act hold as on the socket. Bodies are bounded, decoded
// strictly (unknown fields refused), and every error is an admin.Error,
// {"kind","message"}, with the status of adminrpc.KindStatus.
package adminapi
