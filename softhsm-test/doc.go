// Package softhsmtest creates throwaway SoftHSM2 tokens for tests.
//
// Every token lives in a directory of its own with its own softhsm2.conf
// (file backend); nothing touches /etc/softhsm or /var/lib/softhsm. Create
// does the work over PKCS#11 (C_InitToken, C_InitPIN), so PINs are never on
// a command line; the shell script init-token.sh beside this file runs the
// same code (cmd/init-token) for the demo and the benchmarks, so tests, CI
// and `make demo` set tokens up the same way.
//
// The package is imported by tests and by cmd/init-token. A package whose
// tests use a real token runs them through Main from its TestMain: one
// token in a temporary directory, the package's own set-up, and a clear
// failure naming SoftHSM2 when it is missing. Setup sets SOFTHSM2_CONF for the current process, because
// SoftHSM2 reads it during C_Initialize.
//
// Other tokens: with SIGND_TEST_PKCS11_LABEL (and _MODULE, _PIN) set, Main
// hands setup that existing token of any module instead (FromEnv,
// Token.External): nothing is created, AddToken hands out the spare tokens
// of SIGND_TEST_PKCS11_SPARE_LABELS, Remove is refused. The scripts
// opencryptoki.sh and tpm2.sh beside this file bring those tokens up in a
// private directory and write the variables to DIR/token.env;
// with-token.sh runs a command with one (make test-tokens). KeyFreeze
// probes what a token really does with a key it was asked to freeze.
//
// The folder is named softhsm-test (the repository's top level is fixed and
// a hyphen cannot be in a Go package name), so the package is softhsmtest:
// import it as
//
//	import softhsmtest "github.com/signd/signd/softhsm-test"
package softhsmtest
