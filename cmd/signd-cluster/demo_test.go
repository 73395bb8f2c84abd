package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestDemoPorts runs demo_ports from scripts/lib-demo.sh (as `make demo`
// and `make demo-ha` do) with this test binary as bin/signd-cluster: a
// default another program listens on is replaced by a free port and the
// replacement is said on stderr; a free default is kept; no two ports are
// the same.
func TestDemoPorts(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var taken []int
	for range 2 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		taken = append(taken, l.Addr().(*net.TCPAddr).Port)
	}
	free, err := freePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	// The order of demo.sh's defaults: listen, metrics; twice.
	defaults := []int{taken[0], free[0], taken[1], free[1]}
	var args []string
	for _, p := range defaults {
		args = append(args, strconv.Itoa(p))
	}
	cmd := exec.Command("bash", "-c", `set -euo pipefail; . scripts/lib-demo.sh; demo_ports "$@"; echo "${ports[*]}"`, "bash")
	cmd.Args = append(cmd.Args, args...)
	cmd.Dir = "../.."
	root, _ := os.Getwd()
	cmd.Env = append(os.Environ(), runMainEnv+"=1", "cluster="+exe, "root="+root+"/../..")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("demo_ports %v: %v\n%s", args, err, errOut.String())
	}
	got := strings.Fields(out.String())
	if len(got) != len(defaults) {
		t.Fatalf("demo_ports %v set ports to %q, want %d ports", args, got, len(defaults))
	}
	seen := map[string]bool{}
	for i, p := range got {
		if seen[p] {
			t.Errorf("demo_ports %v chose %s twice: %q", args, p, got)
		}
		seen[p] = true
		d := strconv.Itoa(defaults[i])
		if i%2 == 1 {
			if p != d {
				t.Errorf("free default %s replaced by %s", d, p)
			}
			if strings.Contains(errOut.String(), "127.0.0.1:"+d+" is taken") {
				t.Errorf("free default %s said to be taken:\n%s", d, errOut.String())
			}
			continue
		}
		if p == d {
			t.Errorf("taken default %s kept", d)
			continue
		}
		if want := fmt.Sprintf("127.0.0.1:%s is taken; using 127.0.0.1:%s", d, p); !strings.Contains(errOut.String(), want) {
			t.Errorf("stderr does not say %q:\n%s", want, errOut.String())
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+p)
		if err != nil {
			t.Errorf("chosen port %s: %v", p, err)
			continue
		}
		l.Close()
	}
}
