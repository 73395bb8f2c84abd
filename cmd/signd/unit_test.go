package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// unitPath is the systemd unit the Debian package installs.
const unitPath = "../../packaging/signd.service"

// systemdAnalyze returns systemd-analyze's path, skipping the test when
// the box has none.
func systemdAnalyze(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed (Debian package systemd): cannot check packaging/signd.service")
	}
	return p
}

// TestSystemdUnitVerify: systemd-analyze verify accepts the unit. verify
// insists that ExecStart's binary exists, so it checks a copy whose
// ExecStart names an executable built here (this test binary) instead of
// /usr/bin/signd.
func TestSystemdUnitVerify(t *testing.T) {
	analyze := systemdAnalyze(t)
	unit, err := os.ReadFile(unitPath)
	if err != nil {
		t.Fatal(err)
	}
	const execStart = "ExecStart=/usr/bin/signd "
	if !strings.Contains(string(unit), execStart) {
		t.Fatalf("unit has no %q line", execStart)
	}
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	copyPath := filepath.Join(t.TempDir(), "signd.service")
	copied := strings.Replace(string(unit), execStart, "ExecStart="+bin+" ", 1)
	if err := os.WriteFile(copyPath, []byte(copied), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", copyPath).CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// maxExposure is the worst `systemd-analyze security` score the unit may
// have (0 is a full sandbox, 10 none): the hardening it has today.
const maxExposure = 1.4

// unitExposures are the checks of `systemd-analyze security` the unit
// does not pass, and why it cannot.
var unitExposures = map[string]string{
	"SystemCallFilter=~@privileged":            "chown(2) gives the admin socket to server.admin_group",
	"RootDirectory=/RootImage=":                "the PKCS#11 module and its configuration live on the host",
	"RestrictAddressFamilies=~AF_UNIX":         "the admin socket; local HSM daemons (pkcsslotd, hardserver, tpm2-abrmd)",
	"RestrictAddressFamilies=~AF_(INET|INET6)": "the API, metrics, etcd, OCSP/CRL and network HSMs",
	"PrivateNetwork=":                          "the same",
	"PrivateUsers=":                            "token files and HSM daemons check the real uid and groups",
	"DeviceAllow=":                             "PrivateDevices= leaves the pseudo-devices; a device HSM adds its own (docs/HSM.md)",
	"IPAddressDeny=":                           "clients, etcd, OCSP responders and network HSMs are the site's to list",
}

// exposureLine finds the score; README's and docs/OPERATIONS.md's
// production sections say what `systemd-analyze security` scores the unit;
// TestSystemdUnitSecurity keeps them equal.
var exposureLine = regexp.MustCompile(`Overall exposure level for signd\.service: ([0-9.]+) `)

// TestSystemdUnitSecurity: `systemd-analyze security --offline=true`
// scores the unit's sandbox at the exposure README and docs/OPERATIONS.md
// state (lower is
// better; dropping any hardening directive raises it).
func TestSystemdUnitSecurity(t *testing.T) {
	analyze := systemdAnalyze(t)
	out, err := exec.Command(analyze, "security", "--offline=true", "--no-pager", unitPath).CombinedOutput()
	if err != nil {
		t.Fatalf("systemd-analyze security: %v\n%s", err, out)
	}
	m := exposureLine.FindSubmatch(out)
	if m == nil {
		t.Fatalf("no overall exposure in:\n%s", out)
	}
	score := string(m[1])
	if v, err := strconv.ParseFloat(score, 64); err != nil || v > maxExposure {
		t.Errorf("exposure %s, want at most %.1f: a hardening directive went missing?\n%s", score, maxExposure, out)
	}
	// Every check the unit does not pass is one it cannot pass, for the
	// reason given; any other (a directive gone, weakened or misspelt)
	// fails here.
	out, err = exec.Command(analyze, "security", "--offline=true", "--json=short", "--no-pager", unitPath).Output()
	if err != nil {
		t.Fatalf("systemd-analyze security --json=short: %v", err)
	}
	var checks []struct {
		Set  bool   `json:"set"`
		Name string `json:"name"`
	}
	if err := json.Unmarshal(out, &checks); err != nil || len(checks) == 0 {
		t.Fatalf("systemd-analyze security --json=short: %v\n%s", err, out)
	}
	for _, c := range checks {
		if _, ok := unitExposures[c.Name]; !c.Set && !ok {
			t.Errorf("unit fails systemd-analyze security's check %s", c.Name)
		}
	}
	want := regexp.MustCompile("`systemd-analyze security` exposure " + regexp.QuoteMeta(score) + "[^0-9]")
	for _, doc := range []string{"README.md", "docs/OPERATIONS.md"} {
		text, err := os.ReadFile("../../" + doc)
		if err != nil {
			t.Fatal(err)
		}
		if !want.MatchString(strings.Join(strings.Fields(string(text)), " ")) {
			t.Errorf("%s does not say `systemd-analyze security` exposure %s (the unit's score)", doc, score)
		}
	}
}

// TestPreinstUser: the preinst creates the user from the same sysusers.d
// line the package installs (it runs before that file is unpacked).
func TestPreinstUser(t *testing.T) {
	users, err := os.ReadFile("../../packaging/signd.sysusers")
	if err != nil {
		t.Fatal(err)
	}
	preinst, err := os.ReadFile("../../packaging/deb/preinst")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(users), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		n++
		if !strings.Contains(string(preinst), "\n"+line+"\n") {
			t.Errorf("preinst does not create %q", line)
		}
	}
	if n == 0 {
		t.Error("packaging/signd.sysusers creates nobody")
	}
}
