package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/signd/signd/cmd/signd/version"
)

// TestVersion: `signd version`, `--version` and `version --json` report the
// build; with a configuration they name its PKCS#11 module; an argument or
// a broken configuration is refused.
func TestVersion(t *testing.T) {
	e := newEnv(t, "")
	out := e.must("", "version")
	if !strings.HasPrefix(out, "signd ") || !strings.Contains(out, runtime.Version()) || !strings.Contains(out, "pkcs11 module: "+token.Module) {
		t.Errorf("version:\n%s", out)
	}
	var b version.Build
	if err := json.Unmarshal([]byte(e.must("", "version", "--json")), &b); err != nil {
		t.Fatal(err)
	}
	if b.Version == "" || b.GoVersion != runtime.Version() || b.Platform != runtime.GOOS+"/"+runtime.GOARCH || b.Module != token.Module {
		t.Errorf("version --json: %+v", b)
	}
	if out := e.must("", "--version"); out != version.Info().String()+"\n" {
		t.Errorf("--version = %q, want %q", out, version.Info().String())
	}

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"an argument", []string{"version", "extra"}, `unknown command "extra" for "signd version"`},
		{"two arguments", []string{"version", "a", "b"}, `unknown command "a"`},
	} {
		if _, _, err := e.run("", tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
	bad := filepath.Join(e.dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("pkcs11:\n  module: relative.so\n  max_sessions: -1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out2, errb strings.Builder
	a := newApp(strings.NewReader(""), &out2, &errb)
	cmd := a.root()
	cmd.SetArgs([]string{"--config", bad, "version"})
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "pkcs11.max_sessions") {
		t.Errorf("version with a broken config: %v, want the config's problems", err)
	}
}

// TestBuildInfoStamped: `make build` stamps VERSION, the commit and its
// date into the binary; the commit is marked modified when the tree has
// uncommitted changes.
func TestBuildInfoStamped(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	bin := filepath.Join(t.TempDir(), "signd")
	if out, err := exec.Command("make", "-s", "-C", "../..", "build", "BIN="+bin).CombinedOutput(); err != nil {
		t.Fatalf("make build: %v\n%s", err, out)
	}
	want, err := os.ReadFile("../../VERSION")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "version", "--json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var b version.Build
	if err := json.Unmarshal(out, &b); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if b.Version != strings.TrimSpace(string(want)) || b.GoVersion == "" {
		t.Errorf("version --json = %+v, want version %q", b, want)
	}
	head, err := exec.Command("git", "-C", "../..", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Logf("no git checkout (%v): commit not checked", err)
		return
	}
	if b.Commit != strings.TrimSpace(string(head)) || b.Date == "" {
		t.Errorf("commit %q date %q, want %s and a date", b.Commit, b.Date, head)
	}
	clean := exec.Command("git", "-C", "../..", "diff", "--quiet", "HEAD").Run() == nil
	if b.Modified == clean {
		t.Errorf("modified = %v, but the tree is clean: %v", b.Modified, clean)
	}
	line, err := exec.Command(bin, "--version").Output()
	if err != nil || !strings.HasPrefix(string(line), "signd "+b.Version+" (commit "+b.Commit[:12]) {
		t.Errorf("--version = %q, %v", line, err)
	}
}

// TestNoticeCoversDependencies: every module linked into signd that ships a
// NOTICE file (Apache License 2.0 §4(d)) is reproduced in NOTICE.
func TestNoticeCoversDependencies(t *testing.T) {
	notice, err := os.ReadFile("../../NOTICE")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if .Module}}{{if not .Module.Main}}{{.Module.Path}} {{.Module.Dir}}{{end}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, dir, ok := strings.Cut(line, " ")
		if !ok || seen[path] {
			continue
		}
		seen[path] = true
		text, err := os.ReadFile(filepath.Join(dir, "NOTICE"))
		if err != nil {
			continue // no NOTICE file in this module
		}
		if !strings.Contains(string(notice), "\n"+path+"\n") || !strings.Contains(string(notice), strings.TrimSpace(string(text))) {
			t.Errorf("NOTICE lacks the NOTICE of %s", path)
		}
	}
	if len(seen) == 0 {
		t.Fatal("go list found no modules")
	}
}
