// Package admin is signd's administration domain: managing users, OAuth
// clients, signing credentials (key generation in the HSM, CSR,
// certificate import; the key material and chain checks are package
// csc/enroll's), the time-stamping key, the OIDC signing keys, and reading
// the audit log. It has no HTTP, socket or command line in it: the admin
// socket (cmd/signd/adminrpc) and the CLI are thin adapters over Service.
//
// Every operation takes the acting Principal. Operations declares, in one
// table, the trusted roles (ETSI EN 319 401 §7.4) that may perform each
// operation; Local refuses any other principal with KindForbidden and
// records the refusal in the audit log, naming the actor.
//
// Every call leaves exactly one audit entry naming the actor, the target
// and the fields changed, and one log line (admin/act): a change appends its
// entry in its own write transaction, a read appends admin_read before it
// reads, a refusal by validation is recorded as refused, a failure of the
// token or the store as failed.
//
// Dual control (act.Core.Hold, admin/pending): an operation named in
// Config.DualControl is not performed when asked but held as a pending
// request until a second operator — another Party, holding a role of the
// operation — approves it (ApprovePending); it then runs as its
// requester, and its audit entry names the approver (approved_by).
//
// Errors that reach an operator are *Error values: a Kind that survives a
// transport and a message written for a human. Secrets (passwords, PINs,
// generated client secrets) arrive in requests and never appear in errors,
// logs or audit entries.
//
// The package knows nothing of OAuth, CSC or OIDC protocol handling; it
// only prepares the records those services read.
//
// # Parts
//
// Local is the one façade the CLI, the admin socket and the provisioning
// API call, built by New from a Config: it embeds the subjects, so each
// of its methods is a subject's, promoted (local.go). The subjects import nothing of admin:
// package act is the core every operation opens with (Begin → Hold →
// defer End: the role check, dual control's hold, the audit entry and log
// line); users (users, secrets and locks, TOTP, enrollment links, proof
// documents), clients (OAuth clients), hsmkeys (signing credentials, the
// time-stamping key, the OIDC signing keys, HSMInfo), pending (list,
// approve, reject) and audit (the audit log's verification and export,
// the audit key and checkpoints) each have a struct embedding act.Core.
//
// What does not need a Local is in its parts, which import nothing of
// it either: package ops (the Service interface, the request, view and
// result types and their checks, Error and Kind, the Operations table and
// Holdable), principal (Principal, the trusted roles and the RoleMap),
// input (the limits of what operators type, the printable test),
// enrollment (the enrollment link's token) and tokenkeys (what admin
// needs of the token). admin re-exports their names through type aliases
// and thin wrappers, so its callers name them as before. Only admin and
// its subjects can mark a Principal as acting on an approval: the
// approval's type is in admin/internal/approval, and only
// pending.ApprovePending makes one.
package admin
