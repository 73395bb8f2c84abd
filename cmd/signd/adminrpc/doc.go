// Package adminrpc carries the operations of package admin over signd's
// admin socket: a Unix socket, mode 0600, in a directory nobody else can
// write (CheckSocketDir).
//
// The daemon side (Handler, Listener; PrepareDir and Listen make the
// socket, NewRouter the router it and the provisioning API share) serves
// only peers whose SO_PEERCRED credentials it trusts, and names each caller as an admin.Principal from
// those credentials: the uid and its groups, mapped to trusted roles by
// admin.roles (Roles). WhoAmI, outside admin.Operations, tells a caller
// who the daemon takes it for; it needs no role. The
// client side (Remote) checks who owns the socket and who listens on it
// before it sends anything (Trust, Dial); it implements admin.Service so
// the CLI behaves the same with or without a running daemon, and it cannot
// claim a principal: the daemon takes it from the kernel.
//
// The wire format is JSON over HTTP: POST /admin/v1/<Method> with the
// request as the body (admin.Operations names the methods and their
// request types); a success is 200 with the result, a failure is the
// *admin.Error as JSON with a status derived from its Kind. A method whose
// answer is a stream (AuditExport) answers 200 with JSON lines
// (application/x-ndjson); when it fails after the answer started, its last
// line is {"error": message}; when it fails before its first byte (a
// refusal by role), it answers like any other method.
package adminrpc
