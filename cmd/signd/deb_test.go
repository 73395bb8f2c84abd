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
)

// TestDebianPackage builds the package with `make deb` (which runs `make
// build`), installs it on this box with dpkg, checks what it put where with
// which owners and modes, runs the installed signd (version, config check
// as the signd user on the shipped config, systemd-analyze verify on the
// installed unit), then purges it. It needs root and dpkg, and refuses to
// touch a box where signd is already installed; whatever happens, it
// purges the package and removes the user and directories it created.
func TestDebianPackage(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("installing a Debian package needs root")
	}
	for _, tool := range []string{"dpkg", "dpkg-query", "make", "runuser", "systemd-sysusers"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: cannot install the Debian package here", tool)
		}
	}
	if out, err := exec.Command("dpkg-query", "-W", "-f=${Status}", "signd").Output(); err == nil && len(out) > 0 &&
		!strings.HasPrefix(string(out), "unknown ok not-installed") {
		t.Skipf("a signd package is already on this box (%s): not touching it", out)
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

	version, err := os.ReadFile("../../VERSION")
	if err != nil {
		t.Fatal(err)
	}
	ver := strings.TrimSpace(string(version))
	dist := t.TempDir()
	bin := filepath.Join(dist, "signd") // not the checkout's bin/signd
	if out, err := exec.Command("make", "-s", "-C", "../..", "deb", "BIN="+bin, "DIST="+dist).CombinedOutput(); err != nil {
		t.Fatalf("make deb: %v\n%s", err, out)
	}
	deb := filepath.Join(dist, "signd_"+ver+"_amd64.deb")
	install := exec.Command("dpkg", "-i", deb)
	install.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	if out, err := install.CombinedOutput(); err != nil {
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
		fi, err := os.Lstat(f.path)
		if err != nil {
			t.Errorf("after install: %v", err)
			continue
		}
		st := fi.Sys().(*syscall.Stat_t)
		owner, _ := user.LookupId(fmt.Sprint(st.Uid))
		group, _ := user.LookupGroupId(fmt.Sprint(st.Gid))
		got := fmt.Sprintf("dir=%v %#o %v:%v", fi.IsDir(), fi.Mode().Perm(), name(owner), groupName(group))
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

	if out, err := exec.Command("/usr/bin/signd", "version").CombinedOutput(); err != nil ||
		!strings.HasPrefix(string(out), "signd "+ver+" (commit ") {
		t.Errorf("signd version: %v\n%s", err, out)
	}

	// The shipped config as the daemon's user sees it: readable through
	// its group, and wrong only in what the operator must supply. The
	// commands are docs/OPERATIONS.md's (signd finds /etc/signd/signd.yaml
	// by itself).
	asSignd := func(env ...string) (string, error) {
		cmd := exec.Command("runuser", "-u", "signd", "--", "signd", "config", "check")
		cmd.Env = append([]string{"PATH=/usr/bin:/bin"}, env...)
		cmd.Dir = "/"
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := asSignd()
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
	pin := exec.Command("install", "-m", "600", "-o", "signd", "-g", "signd", "/dev/stdin", "/etc/signd/pin")
	pin.Stdin = strings.NewReader("1234\n")
	if out, err := pin.CombinedOutput(); err != nil {
		t.Fatalf("install the PIN file: %v\n%s", err, out)
	}
	if out, err := asSignd("SIGND_SERVER_BASE_URL=https://signd.example.org"); err != nil || out != "ok: /etc/signd/signd.yaml\n" {
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

	if out, err := exec.Command("dpkg", "--purge", "signd").CombinedOutput(); err != nil {
		t.Fatalf("dpkg --purge signd: %v\n%s", err, out)
	}
	for _, gone := range []string{"/usr/bin/signd", "/etc/signd/signd.yaml", "/usr/lib/systemd/system/signd.service", "/run/signd", "/usr/share/signd"} {
		if _, err := os.Lstat(gone); err == nil {
			t.Errorf("%s left after dpkg --purge", gone)
		}
	}
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
