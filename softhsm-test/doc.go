// Package softhsmtest creates throwaway SoftHSM2 tokens for tests.
//
// Every token lives in a directory of its own with its own softhsm2.conf
// (file backend); nothing touches /etc/softhsm or /var/lib/softhsm. The
// shell script init-token.sh beside this file does the work, so tests, CI and
// `make demo` set tokens up the same way.
//
// The package is imported only by tests (typically from TestMain). It sets
// SOFTHSM2_CONF for the current process, because SoftHSM2 reads it during
// C_Initialize.
package softhsmtest
