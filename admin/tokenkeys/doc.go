// Package tokenkeys is what signd's administration (package admin) needs
// of the PKCS#11 token, as interfaces that *hsm.Token satisfies and so
// does the CLI's lazily opened token: KeyStore for the credentials and
// the time-stamping key, AuditKeys for the audit key and checkpoints,
// TokenReporter for HSMInfo. Enroll gives csc/enroll the token's keys and
// keeps what the token does not freeze of a generated key for the audit
// entry; AuditKeyFor finds the audit key for checkpoint.Maker.
//
// It imports nothing of admin, which re-exports its interfaces.
package tokenkeys
