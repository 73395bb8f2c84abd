package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/signd/signd/cmd/signd/cli"
	"github.com/signd/signd/config"
)

// signdCLI runs the CLI in-process with exactly args (no --config added)
// and returns stdout and the error, failing after 10 s.
func signdCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	a := newApp(strings.NewReader(""), &out, &bytes.Buffer{})
	cmd := a.root()
	cmd.SetArgs(args)
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(context.Background()) }()
	select {
	case err := <-done:
		return out.String(), err
	case <-time.After(10 * time.Second):
		t.Fatalf("signd %s: still running after 10 s", strings.Join(args, " "))
		return "", nil
	}
}

func TestConfigCheck(t *testing.T) {
	e := newEnv(t, "")
	out, err := signdCLI(t, "--config", e.cfgPath, "config", "check")
	if err != nil || out != "ok: "+e.cfgPath+"\n" {
		t.Fatalf("config check of a good file: %q, %v", out, err)
	}
	out, err = signdCLI(t, "--json", "--config", e.cfgPath, "config", "check")
	var res cli.ConfigCheckResult
	if err != nil || json.Unmarshal([]byte(out), &res) != nil || !res.OK || res.Source != e.cfgPath || res.Problems != nil {
		t.Fatalf("config check --json of a good file: %q, %v", out, err)
	}

	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	bad := write("bad.yaml", "server:\n  listen: nowhere\n  shutdown_timeout: 5\nstore:\n  paht: /x\n")
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want []string // lines of the error, in order
	}{
		{"every problem at once", []string{"--config", bad, "config", "check"}, []string{
			bad + ": 5 problem(s):",
			`unknown key "store.paht" (did you mean "store.path"?)`,
			`server.listen: "nowhere" is not host:port`,
			"server.base_url: required",
			"server.shutdown_timeout: must be a duration with a unit",
			"pkcs11.pin: no PIN",
		}},
		{"flag and environment count", []string{"--config", bad, "--log-level", "loud", "config", "check"}, []string{
			bad + ": 6 problem(s):",
		}},
		{"missing file", []string{"--config", filepath.Join(dir, "none.yaml"), "config", "check"}, []string{
			"config: open " + filepath.Join(dir, "none.yaml") + ": no such file or directory",
		}},
		{"malformed YAML", []string{"--config", write("broken.yaml", "server: [\n"), "config", "check"}, []string{
			"config: parsing " + filepath.Join(dir, "broken.yaml") + ": yaml:",
		}},
		{"a FIFO", []string{"--config", fifo, "config", "check"}, []string{"config: " + fifo + " is not a regular file"}},
		{"a directory", []string{"--config", dir, "config", "check"}, []string{"config: " + dir + " is not a regular file"}},
		{"an argument", []string{"--config", e.cfgPath, "config", "check", "extra"}, []string{`unknown command "extra" for "signd config check"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := signdCLI(t, tc.args...)
			if err == nil {
				t.Fatal("config check succeeded")
			}
			lines := strings.Split(err.Error(), "\n")
			if len(tc.want) > 1 && len(lines) != len(tc.want) {
				t.Errorf("%d lines, want %d:\n%v", len(lines), len(tc.want), err)
			}
			for i, w := range tc.want {
				if i >= len(lines) || !strings.HasPrefix(lines[i], w) {
					t.Errorf("line %d does not start with %q:\n%v", i+1, w, err)
				}
			}
		})
	}

	out, err = signdCLI(t, "--json", "--config", bad, "config", "check")
	res = cli.ConfigCheckResult{}
	if err == nil || json.Unmarshal([]byte(out), &res) != nil || res.OK || res.Source != bad || len(res.Problems) != 5 ||
		res.Problems[0].Key != "store.paht" {
		t.Errorf("config check --json of a bad file: %q, %+v, %v", out, res, err)
	}
}

func TestConfigExample(t *testing.T) {
	out, err := signdCLI(t, "config", "example", "--set", "store.path=/var/lib/signd/signd.db")
	want, _ := config.Example(map[string]string{"store.path": "/var/lib/signd/signd.db"})
	if err != nil || out != string(want) {
		t.Fatalf("config example: %v\n%s", err, out)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--set", "store.path"}, `--set "store.path": want key=value`},
		{[]string{"--set", "=/x"}, `--set "=/x": want key=value`},
		{[]string{"--set", "store.path=/a", "--set", "store.path=/b"}, "--set store.path given twice"},
		{[]string{"--set", "store.paht=/a"}, "config example: unknown key store.paht"},
		{[]string{"--set", "pkcs11.max_sessions=4"}, "config example: pkcs11.max_sessions is not a string key; only string keys can be set"},
	} {
		if _, err := signdCLI(t, append([]string{"config", "example"}, tc.args...)...); err == nil || err.Error() != tc.want {
			t.Errorf("config example %v: %v, want %q", tc.args, err, tc.want)
		}
	}
}

// A signd.yaml in the working directory is not read: where root runs the
// CLI (/tmp, the store's directory), whoever can write the directory could
// plant one naming the module root loads and the socket it sends passwords
// to. The error says so; --config names the file.
func TestCLIIgnoresWorkingDirConfig(t *testing.T) {
	for _, p := range config.DefaultSearchPaths() {
		if _, err := os.Stat(p); err == nil {
			t.Skipf("%s exists: commands without --config read it", p)
		}
	}
	e := newEnv(t, "")
	for _, k := range config.Keys() {
		t.Setenv(k.Env(), "")
	}
	t.Chdir(e.dir)
	tests := []struct {
		name string
		args []string
		out  string
		err  []string
	}{
		{"no --config", []string{"config", "check"}, "", []string{
			"server.base_url: required",
			"(./signd.yaml is not read: signd does not look for its configuration in the working directory; name it with --config ./signd.yaml)",
		}},
		{"--config signd.yaml", []string{"--config", "signd.yaml", "config", "check"}, "ok: " + e.cfgPath + "\n", nil},
		{"--config ./signd.yaml", []string{"--config", "./signd.yaml", "config", "check"}, "ok: " + e.cfgPath + "\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := signdCLI(t, tt.args...)
			if tt.err == nil {
				if err != nil || out != tt.out {
					t.Fatalf("signd %s: %q, %v", strings.Join(tt.args, " "), out, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("signd %s read the working directory's signd.yaml: %q", strings.Join(tt.args, " "), out)
			}
			for _, w := range tt.err {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("signd %s: %v\nwant %q", strings.Join(tt.args, " "), err, w)
				}
			}
		})
	}
}
