// Package logtest is what tests share to read what the daemon writes one
// JSON value a line — its slog JSON log, the audit export: Buffer, a
// goroutine-safe sink to point a slog handler or a child process at, and
// Lines and Records, which decode such text strictly (a line that is not
// JSON fails the test, so a test cannot pass by reading nothing).
//
// It imports no signd package, so every package's tests can use it, down
// to store/etcd and hsm.
package logtest
