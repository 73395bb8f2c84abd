package main

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/signd/signd/store/bolt/bolttest"
)

// TestDebianPackage builds the package with `make deb` (which runs `make
// build`), installs it on this box with dpkg, checks what it put where with
// which owners and modes, runs the installed signd (version, config check
// as the signd user on the shipped config, systemd-analyze verify on the
// installed unit), then purges it. It needs root and dpkg, and refuses to
// touch a box where signd is already installed; whatever happens, it
// purges the package and removes the user and directories it created.
func TestDebianPackage(t *testing.T) {
	debBox(t)
	ver := fileVersion(t)
	deb := makeDeb(t)
	if filepath.Base(deb) != "signd_"+ver+"_amd64.deb" {
		t.Errorf("make deb built %s, want signd_%s_amd64.deb", filepath.Base(deb), ver)
	}
	if out, err := dpkg("", "-i", deb); err != nil {
		t.Fatalf("dpkg -i %s: %v\n%s", deb, err, out)
	}

	signd, err := user.Lookup("signd")
	if err != nil {
		t.Fatalf("no signd user after install: %v", err)
	}
	if signd.HomeDir != "/var/lib/signd" {
		t.Errorf("signd's home is %s, want /var/lib/signd", signd.HomeDir)
	}
	for _, f := range []struct {
		path         string
		dir          bool
		mode         os.FileMode
		owner, group string
	}{
		{"/usr/bin/signd", false, 0o755, "root", "root"},
		{"/etc/signd", true, 0o755, "root", "root"},
		{"/etc/signd/signd.yaml", false, 0o640, "root", "signd"},
		{"/usr/lib/systemd/system/signd.service", false, 0o644, "root", "root"},
		{"/usr/lib/sysusers.d/signd.conf", false, 0o644, "root", "root"},
		{"/usr/lib/tmpfiles.d/signd.conf", false, 0o644, "root", "root"},
		{"/usr/share/doc/signd/copyright", false, 0o644, "root", "root"},
		{"/usr/share/doc/signd/docs/OPERATIONS.md", false, 0o644, "root", "root"},
		{"/usr/share/doc/signd/docs/CONFIG.md", false, 0o644, "root", "root"},
		{"/usr/share/signd/prometheus/signd-alerts.yaml", false, 0o644, "root", "root"},
		{"/usr/share/signd/prometheus/signd-alerts.test.yaml", false, 0o644, "root", "root"},
		{"/usr/share/signd/grafana/signd-dashboard.json", false, 0o644, "root", "root"},
		{"/usr/share/man/man1/signd.1.gz", false, 0o644, "root", "root"},
		{"/usr/share/man/man1/signd-config-check.1.gz", false, 0o644, "root", "root"},
		{"/var/lib/signd", true, 0o700, "signd", "signd"},
		{"/run/signd", true, 0o750, "signd", "signd"},
	} {
		got, err := fileState(f.path)
		if err != nil {
			t.Errorf("after install: %v", err)
			continue
		}
		want := fmt.Sprintf("dir=%v %#o %s:%s", f.dir, f.mode, f.owner, f.group)
		if got != want {
			t.Errorf("%s: %s, want %s", f.path, got, want)
		}
	}
	for _, same := range [][2]string{
		{"/usr/lib/systemd/system/signd.service", "../../packaging/signd.service"},
		{"/usr/lib/sysusers.d/signd.conf", "../../packaging/signd.sysusers"},
		{"/usr/share/signd/prometheus/signd-alerts.yaml", "../../packaging/prometheus/signd-alerts.yaml"},
		{"/usr/share/signd/grafana/signd-dashboard.json", "../../packaging/grafana/signd-dashboard.json"},
	} {
		installed, _ := os.ReadFile(same[0])
		repo, _ := os.ReadFile(same[1])
		if len(installed) == 0 || string(installed) != string(repo) {
			t.Errorf("%s differs from %s", same[0], same[1])
		}
	}
	// One binary: the daemon and the operator's commands; signd-pdf,
	// signd-load and signd-cluster are not for the appliance
	// (docs/DESIGN-NOTES.md, "The package ships one binary").
	if out, err := exec.Command("dpkg", "-L", "signd").Output(); err != nil {
		t.Errorf("dpkg -L signd: %v", err)
	} else {
		var bins []string
		for _, p := range strings.Fields(string(out)) {
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
				bins = append(bins, p)
			}
		}
		if strings.Join(bins, " ") != "/usr/bin/signd" {
			t.Errorf("the package's executables: %v, want only /usr/bin/signd", bins)
		}
	}
	if out, err := exec.Command("dpkg-query", "-W", "-f=${Conffiles}", "signd").Output(); err != nil ||
		!strings.Contains(string(out), "/etc/signd/signd.yaml ") {
		t.Errorf("/etc/signd/signd.yaml is not a conffile: %q %v", out, err)
	}

	checkVersion(t, ver)

	// The shipped config as the daemon's user sees it: readable through
	// its group, and wrong only in what the operator must supply. The
	// commands are docs/OPERATIONS.md's (signd finds /etc/signd/signd.yaml
	// by itself).
	out, err := asSignd(nil, "", "config", "check")
	wantLines := []string{
		"signd: /etc/signd/signd.yaml: 2 problem(s):",
		"server.base_url: required ",
		"pkcs11.pin_file: /etc/signd/pin: no such file or directory",
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if err == nil || len(lines) != len(wantLines) {
		t.Errorf("config check of the fresh config: %v\n%s", err, out)
	} else {
		for i, w := range wantLines {
			if !strings.HasPrefix(lines[i], w) {
				t.Errorf("config check line %d: %q, want %q…", i+1, lines[i], w)
			}
		}
	}
	installPIN(t)
	if out, err := asSignd([]string{"SIGND_SERVER_BASE_URL=https://signd.example.org"}, "", "config", "check"); err != nil || out != "ok: /etc/signd/signd.yaml\n" {
		t.Errorf("config check with base_url and the PIN file: %v\n%s", err, out)
	}

	// The shipped alert rules pass their unit tests where they are installed.
	if promtool, err := exec.LookPath("promtool"); err == nil {
		if out, err := exec.Command(promtool, "test", "rules", "/usr/share/signd/prometheus/signd-alerts.test.yaml").CombinedOutput(); err != nil {
			t.Errorf("promtool test rules of the installed rules: %v\n%s", err, out)
		}
	}

	if analyze, err := exec.LookPath("systemd-analyze"); err == nil {
		if out, err := exec.Command(analyze, "verify", "/usr/lib/systemd/system/signd.service").CombinedOutput(); err != nil || len(out) > 0 {
			t.Errorf("systemd-analyze verify of the installed unit: %v\n%s", err, out)
		}
	}

	if out, err := dpkg("", "--purge", "signd"); err != nil {
		t.Fatalf("dpkg --purge signd: %v\n%s", err, out)
	}
	for _, gone := range []string{"/usr/bin/signd", "/etc/signd/signd.yaml", "/usr/lib/systemd/system/signd.service", "/run/signd", "/usr/share/signd"} {
		if _, err := os.Lstat(gone); err == nil {
			t.Errorf("%s left after dpkg --purge", gone)
		}
	}
}

// TestDebianPackageUpgrade installs the package, uses it as an operator
// does (edits /etc/signd/signd.yaml, adds the PIN file, a user, a backup),
// and upgrades it with docs/OPERATIONS.md's commands ("Upgrades") to newer
// packages built from the same tree, each shipping a different
// signd.yaml, as a release that adds keys does: `dpkg -i` answered N keeps
// the operator's file, an unattended `dpkg -i` stops at the question, and
// `dpkg --force-confold -i` keeps it without one; the package's lands next
// to it as signd.yaml.dpkg-dist. The state directory, the store, the
// backup and the signd user come through unchanged, the new signd reports
// its version and passes `config check` on the kept file, and the store,
// made a version 2 file before the upgrade, is upgraded by the first new
// signd that opens it for writing (not by dpkg, not by `store check`).
// Then `dpkg -r` keeps the configuration and the state, which the package
// installed again finds, and `dpkg --purge` removes the configuration and
// keeps the state and the user (docs/OPERATIONS.md, "Removing the
// package").
func TestDebianPackageUpgrade(t *testing.T) {
	debBox(t)
	ver := fileVersion(t)
	next, last := ver+"+upgrade1", ver+"+upgrade2" // dpkg orders them after ver
	// The default DEB_CONFIG and one more --set: the next release's
	// signd.yaml differs from this one's, as one adding keys does.
	defaults, err := exec.Command("make", "-s", "--no-print-directory", "-C", "../..",
		"--eval", "print-DEB_CONFIG: ; @echo $(DEB_CONFIG)", "print-DEB_CONFIG").Output()
	if err != nil || !strings.Contains(string(defaults), "--set store.path=/var/lib/signd/signd.db") {
		t.Fatalf("make's DEB_CONFIG: %v %q", err, defaults)
	}
	oldDeb := makeDeb(t)
	nextDeb := makeDeb(t, "VERSION="+next, "DEB_CONFIG="+strings.TrimSpace(string(defaults))+" --set log.level=info")
	lastDeb := makeDeb(t, "VERSION="+last, "DEB_CONFIG="+strings.TrimSpace(string(defaults))+" --set log.level=warn")

	if out, err := dpkg("", "-i", oldDeb); err != nil {
		t.Fatalf("dpkg -i %s: %v\n%s", oldDeb, err, out)
	}
	// The operator's edits (OPERATIONS.md, "Production: the Debian
	// package"): server.base_url in the conffile, the PIN file.
	const conf = "/etc/signd/signd.yaml"
	shipped, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(shipped), "  #base_url: \"\"\n", "  base_url: https://signd.example.org\n", 1)
	if edited == string(shipped) {
		t.Fatalf("%s has no commented base_url line to edit:\n%s", conf, shipped)
	}
	if err := os.WriteFile(conf, []byte(edited), 0o640); err != nil {
		t.Fatal(err)
	}
	installPIN(t)
	configOK := func(when string) {
		t.Helper()
		if out, err := asSignd(nil, "", "config", "check"); err != nil || out != "ok: "+conf+"\n" {
			t.Errorf("config check %s: %v\n%s", when, err, out)
		}
	}
	configOK("of the edited configuration")

	// A store with a user and a client in it, and the backup
	// OPERATIONS.md takes before an upgrade.
	const (
		state = "/var/lib/signd"
		db    = state + "/signd.db"
	)
	backup := state + "/before-" + next + ".db"
	if out, err := asSignd(nil, "correct horse battery staple\n", "user", "add", "alice", "--password-file", "-"); err != nil {
		t.Fatalf("user add: %v\n%s", err, out)
	}
	if out, err := asSignd(nil, "", "client", "add", "signer", "--redirect-uri", "https://app.example.org/cb"); err != nil {
		t.Fatalf("client add: %v\n%s", err, out)
	}
	if out, err := asSignd(nil, "", "store", "backup", backup); err != nil {
		t.Fatalf("store backup: %v\n%s", err, out)
	}
	// audit verify reads the whole log, and a read is an entry of its own
	// (admin_read) after the ones it verified.
	var entries int
	if out, err := asSignd(nil, "", "audit", "verify"); err != nil {
		t.Fatalf("audit verify before the upgrade: %v\n%s", err, out)
	} else if _, err := fmt.Sscanf(out, "audit log intact: %d entries,", &entries); err != nil || entries < 3 {
		t.Fatalf("audit verify before the upgrade: %q (%v), want at least the user's, the client's and the backup's", out, err)
	}
	// Make the store a version 2 file, as a signd of that schema would
	// have left it: version 3 rewrote nothing (store/bolt's doc.go), and
	// the file holds no token, so the version is all that differs.
	bolttest.SetSchemaVersion(t, db, "2")
	kept := map[string]string{}
	for _, p := range []string{state, db, backup} {
		if kept[p], err = fileState(p); err != nil {
			t.Fatal(err)
		}
	}
	dbBytes, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	backupBytes, err := os.ReadFile(backup)
	if err != nil {
		t.Fatal(err)
	}
	signd, err := user.Lookup("signd")
	if err != nil {
		t.Fatal(err)
	}
	unchanged := func(when string) {
		t.Helper()
		for p, want := range kept {
			if got, err := fileState(p); err != nil || got != want {
				t.Errorf("%s %s: %s %v, want %s", p, when, got, err, want)
			}
		}
		if b, err := os.ReadFile(backup); err != nil || string(b) != string(backupBytes) {
			t.Errorf("%s changed %s (%v)", backup, when, err)
		}
		if u, err := user.Lookup("signd"); err != nil || *u != *signd {
			t.Errorf("the signd user %s: %+v %v, want %+v", when, u, err, signd)
		}
	}
	confKept := func(when string) {
		t.Helper()
		if b, err := os.ReadFile(conf); err != nil || string(b) != edited {
			t.Errorf("%s %s: not the operator's (%v):\n%s", conf, when, err, b)
		}
	}

	// A mode loosened by hand is tightened again by the upgrade
	// (tmpfiles.d, docs/OPERATIONS.md "Upgrades"): the store's directory
	// is signd's alone; unchanged checks it is 0700 again.
	if err := os.Chmod(state, 0o750); err != nil {
		t.Fatal(err)
	}

	// The next version ships a different signd.yaml: dpkg asks, the
	// operator answers N, the default, and keeps theirs; the package's
	// is left next to it. The store is left as it is.
	out, err := dpkg("N\n", "-i", nextDeb)
	if err != nil || !strings.Contains(out, "Configuration file '"+conf+"'") {
		t.Fatalf("dpkg -i %s over %s, answering N: %v, want dpkg to ask about %s\n%s", filepath.Base(nextDeb), ver, err, conf, out)
	}
	checkVersion(t, next)
	confKept("after the upgrade")
	if b, err := os.ReadFile(conf + ".dpkg-dist"); err != nil || !strings.Contains(string(b), "\n  level: info\n") {
		t.Errorf("%s.dpkg-dist is not the new package's signd.yaml (%v):\n%s", conf, err, b)
	}
	for _, p := range []string{conf + ".dpkg-old", conf + ".dpkg-new"} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s after the upgrade", p)
		}
	}
	unchanged("after the upgrade")
	if b, err := os.ReadFile(db); err != nil || string(b) != string(dbBytes) {
		t.Errorf("dpkg -i changed %s (%v)", db, err)
	}
	configOK("with the new signd on the kept configuration")
	// store check only reads: the file stays a version 2 file, which the
	// old signd could still open.
	if out, err := asSignd(nil, "", "store", "check"); err != nil || !strings.HasPrefix(out, "store intact: "+db) {
		t.Errorf("store check after the upgrade: %v\n%s", err, out)
	}
	if v := bolttest.SchemaVersion(t, db); v != "2" {
		t.Errorf("schema_version %q after store check, want 2 (store check only reads)", v)
	}
	// The first new signd to open the store for writing (here audit
	// verify; in production the restarted daemon) upgrades it, and every
	// record and audit entry is still there.
	if out, err := asSignd(nil, "", "audit", "verify"); err != nil || !strings.HasPrefix(out, fmt.Sprintf("audit log intact: %d entries,", entries+1)) {
		t.Errorf("audit verify after the upgrade: %v\n%s, want %d entries", err, out, entries+1)
	}
	if v := bolttest.SchemaVersion(t, db); v != "3" {
		t.Errorf("schema_version %q after the new signd opened the store, want 3", v)
	}
	if out, err := asSignd(nil, "", "user", "show", "alice"); err != nil || !strings.Contains(out, "status:          active") {
		t.Errorf("user show alice after the upgrade: %v\n%s", err, out)
	}
	if out, err := asSignd(nil, "", "client", "show", "signer"); err != nil || !strings.Contains(out, "https://app.example.org/cb") {
		t.Errorf("client show signer after the upgrade: %v\n%s", err, out)
	}
	unchanged("after the schema upgrade") // the store's owner and mode too

	// The last version ships yet another signd.yaml: unattended, with no
	// one to answer, `dpkg -i` stops at the question; --force-confold
	// keeps the operator's and puts the package's next to it.
	if out, err := dpkg("", "-i", lastDeb); err == nil || !strings.Contains(out, "end of file on stdin at conffile prompt") {
		t.Errorf("unattended dpkg -i of a package whose signd.yaml changed too: %v, want the conffile prompt to fail\n%s", err, out)
	}
	if st := status(); st != "install ok unpacked" {
		t.Errorf("after an unattended upgrade stopped at the conffile prompt: %s, want install ok unpacked", st)
	}
	confKept("after an unattended upgrade stopped at the conffile prompt")
	if out, err := dpkg("", "--force-confold", "-i", lastDeb); err != nil {
		t.Fatalf("dpkg --force-confold -i %s: %v\n%s", filepath.Base(lastDeb), err, out)
	}
	checkVersion(t, last)
	confKept("after an upgrade with --force-confold")
	if b, err := os.ReadFile(conf + ".dpkg-dist"); err != nil || !strings.Contains(string(b), "\n  level: warn\n") {
		t.Errorf("%s.dpkg-dist is not the last package's signd.yaml (%v):\n%s", conf, err, b)
	}
	unchanged("after the second upgrade")
	configOK("after the second upgrade")

	// Remove keeps the configuration and the state; the unit and the
	// binary go. Installed again, the package finds both as they were,
	// and as it ships the signd.yaml it shipped before, dpkg keeps the
	// operator's without a question (nothing on stdin to answer one).
	remove := func(when string) {
		t.Helper()
		if out, err := dpkg("", "-r", "signd"); err != nil {
			t.Fatalf("dpkg -r signd%s: %v\n%s", when, err, out)
		}
		if st := status(); st != "deinstall ok config-files" {
			t.Errorf("after dpkg -r%s: %s, want deinstall ok config-files", when, st)
		}
		for _, gone := range []string{"/usr/bin/signd", "/usr/lib/systemd/system/signd.service"} {
			if _, err := os.Lstat(gone); err == nil {
				t.Errorf("%s left after dpkg -r%s", gone, when)
			}
		}
		confKept("after dpkg -r" + when)
		unchanged("after dpkg -r" + when)
		if _, err := os.Lstat("/run/signd"); err != nil {
			t.Errorf("/run/signd after dpkg -r%s: %v (only a purge removes it)", when, err)
		}
	}
	remove("")
	if out, err := dpkg("", "-i", lastDeb); err != nil {
		t.Fatalf("dpkg -i %s after dpkg -r: %v\n%s", filepath.Base(lastDeb), err, out)
	}
	checkVersion(t, last)
	confKept("installed again after dpkg -r")
	unchanged("installed again after dpkg -r")
	configOK("installed again after dpkg -r")
	if out, err := asSignd(nil, "", "user", "show", "alice"); err != nil || !strings.Contains(out, "status:          active") {
		t.Errorf("user show alice installed again after dpkg -r: %v\n%s", err, out)
	}
	remove(" (again)")

	// Purge removes the configuration the package installed, and keeps
	// the state (the store and its audit log are records), the user and
	// the operator's own files in /etc/signd.
	if out, err := dpkg("", "--purge", "signd"); err != nil {
		t.Fatalf("dpkg --purge signd: %v\n%s", err, out)
	}
	for _, gone := range []string{conf, conf + ".dpkg-dist", "/run/signd"} {
		if _, err := os.Lstat(gone); err == nil {
			t.Errorf("%s left after dpkg --purge", gone)
		}
	}
	if _, err := os.Lstat("/etc/signd/pin"); err != nil {
		t.Errorf("the operator's PIN file after dpkg --purge: %v", err)
	}
	unchanged("after dpkg --purge")
}

// debBox skips the test unless this box can take the Debian package:
// root, dpkg and the tools the package's scripts run, and no signd package,
// user or directory yet (it refuses to touch an installation it did not
// make). Whatever happens then, the cleanup purges the package and removes
// the user, the group and the directories the package made.
func debBox(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("installing a Debian package needs root")
	}
	for _, tool := range []string{"dpkg", "dpkg-query", "make", "runuser", "systemd-sysusers"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: cannot install the Debian package here", tool)
		}
	}
	if st := status(); st != "" && !strings.HasPrefix(st, "unknown ok not-installed") {
		t.Skipf("a signd package is already on this box (%s): not touching it", st)
	}
	if _, err := user.Lookup("signd"); err == nil {
		t.Skip("a signd user already exists on this box: not touching it")
	}
	created := []string{"/etc/signd", "/var/lib/signd", "/run/signd"}
	for _, p := range created {
		if _, err := os.Lstat(p); err == nil {
			t.Skipf("%s already exists on this box: not touching it", p)
		}
	}
	t.Cleanup(func() {
		if out, err := exec.Command("dpkg", "--purge", "signd").CombinedOutput(); err != nil {
			t.Errorf("cleanup: dpkg --purge signd: %v\n%s", err, out)
		}
		if _, err := user.Lookup("signd"); err == nil {
			if out, err := exec.Command("userdel", "signd").CombinedOutput(); err != nil {
				t.Errorf("cleanup: userdel signd: %v\n%s", err, out)
			}
		}
		if _, err := user.LookupGroup("signd"); err == nil {
			if out, err := exec.Command("groupdel", "signd").CombinedOutput(); err != nil {
				t.Errorf("cleanup: groupdel signd: %v\n%s", err, out)
			}
		}
		for _, p := range created {
			if err := os.RemoveAll(p); err != nil {
				t.Errorf("cleanup: %v", err)
			}
		}
	})
}

// status is dpkg's status of the signd package ("install ok installed"),
// "" when dpkg knows none.
func status() string {
	out, err := exec.Command("dpkg-query", "-W", "-f=${Status}", "signd").Output()
	if err != nil {
		return ""
	}
	return string(out)
}

// fileVersion is the version in the checkout's VERSION file, the one
// `make deb` stamps unless told another (VERSION=).
func fileVersion(t *testing.T) string {
	t.Helper()
	version, err := os.ReadFile("../../VERSION")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(version))
}

// makeDeb runs `make deb` with vars (VERSION=…, DEB_CONFIG=…) into a
// directory of its own, the binary too (not the checkout's bin/signd), and
// returns the path of the one package it built.
func makeDeb(t *testing.T, vars ...string) string {
	t.Helper()
	dist := t.TempDir()
	args := append([]string{"-s", "-C", "../..", "deb", "BIN=" + filepath.Join(dist, "signd"), "DIST=" + dist}, vars...)
	if out, err := exec.Command("make", args...).CombinedOutput(); err != nil {
		t.Fatalf("make deb %s: %v\n%s", strings.Join(vars, " "), err, out)
	}
	debs, err := filepath.Glob(filepath.Join(dist, "*.deb"))
	if err != nil || len(debs) != 1 {
		t.Fatalf("make deb %s built %v (%v), want one package", strings.Join(vars, " "), debs, err)
	}
	return debs[0]
}

// dpkg runs dpkg with args, stdin as its standard input: with none, a
// question dpkg asks (a conffile changed on both sides) fails it with
// "end of file on stdin at conffile prompt".
func dpkg(stdin string, args ...string) (string, error) {
	cmd := exec.Command("dpkg", args...)
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// asSignd runs the installed signd with args as the signd user, the way
// docs/OPERATIONS.md has the operator do it (runuser -u signd -- signd
// …): from /, with stdin, and with only PATH and env in its environment,
// so that signd finds /etc/signd/signd.yaml by itself.
func asSignd(env []string, stdin string, args ...string) (string, error) {
	cmd := exec.Command("runuser", append([]string{"-u", "signd", "--", "signd"}, args...)...)
	cmd.Env = append([]string{"PATH=/usr/bin:/bin"}, env...)
	cmd.Dir = "/"
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// installPIN writes the token's PIN file as docs/OPERATIONS.md does.
func installPIN(t *testing.T) {
	t.Helper()
	pin := exec.Command("install", "-m", "600", "-o", "signd", "-g", "signd", "/dev/stdin", "/etc/signd/pin")
	pin.Stdin = strings.NewReader("1234\n")
	if out, err := pin.CombinedOutput(); err != nil {
		t.Fatalf("install the PIN file: %v\n%s", err, out)
	}
}

// checkVersion checks that the installed signd reports version.
func checkVersion(t *testing.T, version string) {
	t.Helper()
	if out, err := exec.Command("/usr/bin/signd", "version").CombinedOutput(); err != nil ||
		!strings.HasPrefix(string(out), "signd "+version+" (commit ") {
		t.Errorf("signd version: %v\n%s, want signd %s", err, out, version)
	}
}

// fileState is what the package tests compare of a path: whether it is a
// directory, its permission bits, owner and group.
func fileState(path string) (string, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return "", err
	}
	st := fi.Sys().(*syscall.Stat_t)
	owner, _ := user.LookupId(fmt.Sprint(st.Uid))
	group, _ := user.LookupGroupId(fmt.Sprint(st.Gid))
	return fmt.Sprintf("dir=%v %#o %v:%v", fi.IsDir(), fi.Mode().Perm(), name(owner), groupName(group)), nil
}

func name(u *user.User) string {
	if u == nil {
		return "?"
	}
	return u.Username
}

func groupName(g *user.Group) string {
	if g == nil {
		return "?"
	}
	return g.Name
}
