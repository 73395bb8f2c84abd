// Command init-token creates a SoftHSM2 token in a directory of its own,
// for the demo, the benchmarks and CI: softhsm-test/init-token.sh runs it
// (see there for usage). The PINs come from the environment variables
// SOFTHSM_USER_PIN and SOFTHSM_SO_PIN and reach the token through
// PKCS#11 calls in this process only, never through a command line
// (softhsmtest.Create). It prints one line, SOFTHSM2_CONF=<config>.
package main

import (
	"fmt"
	"io"
	"os"

	softhsmtest "github.com/signd/signd/softhsm-test"
)

func main() {
	os.Exit(run(os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

func run(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) != 2 {
		fmt.Fprintln(stderr, "usage: init-token DIR LABEL (PINs in SOFTHSM_USER_PIN and SOFTHSM_SO_PIN)")
		return 2
	}
	for _, name := range []string{"SOFTHSM_USER_PIN", "SOFTHSM_SO_PIN"} {
		if getenv(name) == "" {
			fmt.Fprintf(stderr, "init-token: set %s\n", name)
			return 2
		}
	}
	userPIN, soPIN := getenv("SOFTHSM_USER_PIN"), getenv("SOFTHSM_SO_PIN")
	tok, err := softhsmtest.Create(args[0], args[1], userPIN, soPIN)
	if err != nil {
		fmt.Fprintln(stderr, "init-token:", err)
		return 1
	}
	fmt.Fprintf(stdout, "SOFTHSM2_CONF=%s\n", tok.Conf)
	return 0
}
