// Package admin holds the administrative operations of signd: managing
// users, OAuth clients and signing credentials (key generation in the HSM,
// CSR, certificate import; the key material and chain checks are package
// csc/enroll's, the records and audit entries are made here).
//
// The operations are defined once, by the Service interface, and exist in
// two forms with the same behaviour and the same errors:
//
//   - Local performs them directly on the store and the token. The CLI uses
//     it when no daemon runs, and the daemon uses it behind its admin socket.
//   - Remote sends them to a running daemon over its admin socket (a Unix
//     socket, mode 0600), see Handler for the server side. Both ends check
//     who is at the other end with SO_PEERCRED before anything is read or
//     sent (socket.go: Listener, Trust), and the daemon only listens in a
//     directory nobody else can write (CheckSocketDir).
//
// Errors that reach an operator are *Error values: a Kind that survives the
// socket and a message written for a human. Secrets (passwords, PINs,
// generated client secrets) travel only in request bodies over the socket
// and never appear in errors or logs.
//
// The package knows nothing of OAuth, CSC or OIDC protocol handling; it only
// prepares the records those services read.
package admin
