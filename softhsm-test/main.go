package softhsmtest

import (
	"fmt"
	"os"
)

// Runner runs a package's tests; *testing.M is one.
type Runner interface {
	Run() int
}

// Main is the body of a TestMain whose tests use a real SoftHSM2 token:
//
//	func TestMain(m *testing.M) {
//		os.Exit(softhsmtest.Main(m, "signd-hsm-test", func(tok *softhsmtest.Token) (func(), error) { ... }))
//	}
//
// It creates a token labelled label in a fresh temporary directory (Setup),
// calls setup with it (nil: nothing to set up), runs m, calls the teardown
// setup returned (if any) and removes the directory. It returns m's exit
// code, or 1 after printing why to stderr when the token or setup fails: a
// missing SoftHSM2 is a failure that names the tool, never a skip.
//
// When SIGND_TEST_PKCS11_LABEL names an existing token (FromEnv), Main
// makes nothing: setup gets that token, label is not used, and the token
// is left as it is.
//
// When the binary only fuzzes or lists tests (FuzzOnly), Main runs m without
// a token and without setup: the fuzz targets of signd need none.
func Main(m Runner, label string, setup func(tok *Token) (teardown func(), err error)) int {
	if FuzzOnly() {
		return m.Run()
	}
	tok, err := FromEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if tok == nil {
		dir, err := os.MkdirTemp("", label+"-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		if tok, err = Setup(dir, label); err != nil {
			fmt.Fprintf(os.Stderr, "the tests need SoftHSM2: %v\n", err)
			return 1
		}
	} else {
		fmt.Fprintf(os.Stderr, "testing on token %q of %s (%s)\n", tok.Label, tok.Module, EnvLabel)
	}
	if setup != nil {
		teardown, err := setup(tok)
		if teardown != nil {
			defer teardown()
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "set up token %q: %v\n", tok.Label, err)
			return 1
		}
	}
	return m.Run()
}
