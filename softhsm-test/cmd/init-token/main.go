// Command init-token creates a PKCS#11 token for the demo, the benchmarks
// and CI, in one of two forms:
//
//	init-token DIR LABEL                      a SoftHSM2 token in DIR (softhsm-test/init-token.sh)
//	init-token -module PATH [-slot N] LABEL   a token of any module (softhsm-test/opencryptoki.sh)
//
// The PINs come from the environment variables SOFTHSM_USER_PIN and
// SOFTHSM_SO_PIN and reach the token through PKCS#11 calls in this process
// only, never through a command line (softhsmtest.Create,
// softhsmtest.InitToken). The first form prints one line,
// SOFTHSM2_CONF=<config>; the second prints nothing.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	softhsmtest "github.com/signd/signd/softhsm-test"
)

func main() {
	os.Exit(run(os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

const usage = "usage: init-token DIR LABEL, or init-token -module PATH [-slot N] LABEL (PINs in SOFTHSM_USER_PIN and SOFTHSM_SO_PIN)"

func run(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("init-token", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	module := fs.String("module", "", "PKCS#11 module of the token")
	slot := fs.Int("slot", -1, "slot to initialize (default: the first uninitialized one)")
	if err := fs.Parse(args); err != nil {
		fmt.Fprintf(stderr, "init-token: %v\n%s\n", err, usage)
		return 2
	}
	args = fs.Args()
	if (*module == "" && len(args) != 2) || (*module != "" && len(args) != 1) || (*module == "" && *slot >= 0) {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	for _, name := range []string{"SOFTHSM_USER_PIN", "SOFTHSM_SO_PIN"} {
		if getenv(name) == "" {
			fmt.Fprintf(stderr, "init-token: set %s\n", name)
			return 2
		}
	}
	userPIN, soPIN := getenv("SOFTHSM_USER_PIN"), getenv("SOFTHSM_SO_PIN")
	if *module != "" {
		var s *uint
		if *slot >= 0 {
			n := uint(*slot)
			s = &n
		}
		if err := softhsmtest.InitToken(*module, s, args[0], userPIN, soPIN); err != nil {
			fmt.Fprintln(stderr, "init-token:", err)
			return 1
		}
		return 0
	}
	tok, err := softhsmtest.Create(args[0], args[1], userPIN, soPIN)
	if err != nil {
		fmt.Fprintln(stderr, "init-token:", err)
		return 1
	}
	fmt.Fprintf(stdout, "SOFTHSM2_CONF=%s\n", tok.Conf)
	return 0
}
