package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestServeRefusesWrongPIN(t *testing.T) {
	e := newEnv(t, "")
	const wrong = "wrong-pin-7391"
	if err := os.WriteFile(e.pinFile, []byte(wrong+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, logs bytes.Buffer
	a := newApp(strings.NewReader(""), &out, &logs)
	cmd := a.root()
	cmd.SetArgs([]string{"--config", e.cfgPath, "serve"})
	err := cmd.ExecuteContext(context.Background())
	if err == nil {
		t.Fatal("serve started with a wrong PIN")
	}
	if !strings.Contains(err.Error(), token.Label) {
		t.Errorf("error does not name the token %q: %v", token.Label, err)
	}
	for name, s := range map[string]string{"error": err.Error(), "stdout": out.String(), "log": logs.String()} {
		if strings.Contains(s, wrong) {
			t.Errorf("the PIN appears in the %s: %s", name, s)
		}
	}
	// The admin socket was never left behind.
	if _, err := os.Stat(filepath.Join(e.dir, "s.sock")); !os.IsNotExist(err) {
		t.Errorf("admin socket exists after failed start: %v", err)
	}
}

func TestServeHTTP(t *testing.T) {
	e := newEnv(t, "")
	addr, logs := e.daemon()
	base := "http://" + addr

	get := func(t *testing.T, method, path string, body io.Reader) (*http.Response, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, body)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var m map[string]any // /readyz also describes the token (an object)
		data, _ := io.ReadAll(res.Body)
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatalf("%s %s: body is not a JSON object: %q", method, path, data)
		}
		return res, m
	}

	cases := []struct {
		name, method, path string
		body               io.Reader
		status             int
		key, value         string
	}{
		{"healthz", "GET", "/healthz", nil, 200, "status", "ok"},
		{"readyz", "GET", "/readyz", nil, 200, "status", "ready"},
		{"unknown_path_is_json_404", "GET", "/nope", nil, 404, "error", "not_found"},
		{"wrong_method_is_json_405", "POST", "/healthz", nil, 405, "error", "method_not_allowed"},
		{"oversized_body_is_413", "POST", "/healthz", strings.NewReader(strings.Repeat("x", 2<<20)), 413, "error", "invalid_request"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, m := get(t, tc.method, tc.path, tc.body)
			if res.StatusCode != tc.status || m[tc.key] != tc.value {
				t.Fatalf("got %d %v, want %d with %s=%s", res.StatusCode, m, tc.status, tc.key, tc.value)
			}
			if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Errorf("Content-Type = %q", ct)
			}
			for h, want := range map[string]string{
				"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY",
				"Referrer-Policy": "no-referrer", "Cache-Control": "no-store",
			} {
				if got := res.Header.Get(h); got != want {
					t.Errorf("%s = %q, want %q", h, got, want)
				}
			}
			if res.Header.Get("X-Request-Id") == "" {
				t.Error("no X-Request-Id")
			}
		})
	}

	// The request log has the path but never the query string.
	get(t, "GET", "/healthz?code=supersecretcode", nil)
	time.Sleep(50 * time.Millisecond)
	if l := logs.String(); strings.Contains(l, "supersecretcode") || !strings.Contains(l, `"path":"/healthz"`) {
		t.Errorf("request log wrong (query string logged, or path missing):\n%s", l)
	}

	// The admin socket is private.
	fi, err := os.Stat(filepath.Join(e.dir, "s.sock"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 || fi.Mode()&os.ModeSocket == 0 {
		t.Errorf("admin socket mode = %v, want socket 0600", fi.Mode())
	}
}

func TestSecondDaemonAndLockedStore(t *testing.T) {
	e := newEnv(t, "")
	e.daemon()

	// A second serve with the same socket refuses to start.
	var logs bytes.Buffer
	a := newApp(strings.NewReader(""), &bytes.Buffer{}, &logs)
	cmd := a.root()
	cmd.SetArgs([]string{"--config", e.cfgPath, "serve"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cmd.ExecuteContext(ctx); err == nil || !strings.Contains(err.Error(), "signd.db") {
		t.Fatalf("second serve: err = %v, want the locked store named", err)
	}

	// A CLI with another socket path goes to the store directly: clear error
	// naming the file, within the open timeout (1s here).
	cfg2 := filepath.Join(e.dir, "other.yaml")
	data, _ := os.ReadFile(e.cfgPath)
	os.WriteFile(cfg2, bytes.Replace(data, []byte("/s.sock"), []byte("/other.sock"), 1), 0o600)
	_, _, err := e.run("", "--config", cfg2, "user", "list")
	if err == nil || !strings.Contains(err.Error(), filepath.Join(e.dir, "signd.db")) || !strings.Contains(err.Error(), "locked") {
		t.Fatalf("err = %v, want a locked-store error naming the file", err)
	}
}

func TestGracefulShutdown(t *testing.T) {
	e := newEnv(t, "")
	logs := &syncBuffer{}
	addr, stop := e.startDaemonWith(func(a *app) { a.stderr = logs })
	if res, err := http.Get("http://" + addr + "/healthz"); err != nil || res.StatusCode != 200 {
		t.Fatalf("healthz: %v", err)
	}
	if stop(); t.Failed() { // serve returned an error or did not stop
		t.FailNow()
	}
	if _, err := http.Get("http://" + addr + "/healthz"); err == nil {
		t.Error("still accepting after shutdown")
	}
	if _, err := os.Stat(filepath.Join(e.dir, "s.sock")); !os.IsNotExist(err) {
		t.Errorf("admin socket left behind: %v", err)
	}
	// The store is closed: the CLI opens it directly now.
	e.must("", "user", "list")
	if !strings.Contains(logs.String(), "stopped") {
		t.Errorf("no shutdown log line:\n%s", logs.String())
	}
}

// buildSignd compiles the binary once for the script tests.
func buildSignd(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "signd")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func TestEnrollKeyScript(t *testing.T) {
	bin := buildSignd(t)
	e := newEnv(t, "")
	e.must("a password!\n", "user", "add", "dave", "--password-file", "-")
	script, _ := filepath.Abs("../../scripts/enroll-key.sh")
	run := func(args ...string) (string, string, error) {
		var out, errb bytes.Buffer
		cmd := exec.Command("bash", append([]string{script, "--config", e.cfgPath, "--signd", bin}, args...)...)
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		return out.String(), errb.String(), err
	}
	devCA := filepath.Join(e.dir, "dev-ca")

	t.Run("dev_ca_enrolls_and_enables", func(t *testing.T) {
		out, errOut, err := run("--user", "dave", "--dev-ca", devCA, "--subject", "CN=Dave,O=Test,C=NL")
		if err != nil {
			t.Fatalf("enroll: %v\n%s", err, errOut)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		id := lines[len(lines)-1]
		var v struct{ Status, Subject, Owner string }
		json.Unmarshal([]byte(e.must("", "credential", "show", id, "--json")), &v)
		if v.Status != "enabled" || v.Owner != "dave" || v.Subject != "CN=Dave,O=Test,C=NL" {
			t.Fatalf("credential after enrollment: %+v", v)
		}
		// The CA was created once and is reused.
		ca1, _ := os.ReadFile(filepath.Join(devCA, "ca.pem"))
		if _, errOut, err := run("--user", "dave", "--dev-ca", devCA); err != nil {
			t.Fatalf("second enroll: %v\n%s", err, errOut)
		}
		ca2, _ := os.ReadFile(filepath.Join(devCA, "ca.pem"))
		if !bytes.Equal(ca1, ca2) {
			t.Error("development CA was recreated")
		}
		if fi, _ := os.Stat(filepath.Join(devCA, "ca.key")); fi.Mode().Perm() != 0o600 {
			t.Errorf("CA key mode %v", fi.Mode().Perm())
		}
	})

	t.Run("ec_key_type", func(t *testing.T) {
		for _, flag := range []string{"--key-type", "--algo"} {
			out, errOut, err := run("--user", "dave", "--dev-ca", devCA, flag, "ec-p384")
			if err != nil {
				t.Fatalf("enroll %s ec-p384: %v\n%s", flag, err, errOut)
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			var v struct{ Status, Algorithm string }
			json.Unmarshal([]byte(e.must("", "credential", "show", lines[len(lines)-1], "--json")), &v)
			if v.Status != "enabled" || v.Algorithm != "ec-p384" {
				t.Fatalf("credential after %s ec-p384: %+v", flag, v)
			}
		}
	})

	t.Run("ca_key_mismatch_leaves_credential_disabled", func(t *testing.T) {
		otherKey := filepath.Join(e.dir, "other.key")
		if out, err := exec.Command("openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", otherKey).CombinedOutput(); err != nil {
			t.Fatalf("openssl: %v %s", err, out)
		}
		before := e.must("", "credential", "list", "--user", "dave", "--json")
		_, errOut, err := run("--user", "dave", "--ca-cert", filepath.Join(devCA, "ca.pem"), "--ca-key", otherKey)
		if err == nil {
			t.Fatal("enrollment with a mismatched CA key succeeded")
		}
		if !strings.Contains(errOut, "left DISABLED") {
			t.Fatalf("stderr does not say what is left:\n%s", errOut)
		}
		var creds []struct{ ID, Status string }
		json.Unmarshal([]byte(e.must("", "credential", "list", "--user", "dave", "--json")), &creds)
		var prev []struct{ ID string }
		json.Unmarshal([]byte(before), &prev)
		if len(creds) != len(prev)+1 {
			t.Fatalf("credentials %d, want %d", len(creds), len(prev)+1)
		}
		for _, c := range creds {
			known := false
			for _, p := range prev {
				known = known || p.ID == c.ID
			}
			if !known && c.Status != "disabled" {
				t.Fatalf("half-enrolled credential %s is %s", c.ID, c.Status)
			}
		}
	})

	t.Run("usage_errors", func(t *testing.T) {
		for _, args := range [][]string{
			{},
			{"--user", "dave"},
			{"--user", "dave", "--dev-ca", devCA, "--ca-cert", "x"},
			{"--user", "dave", "--dev-ca", devCA, "--days", "0"},
			{"--user", "dave", "--dev-ca"},
			{"--bogus"},
		} {
			_, errOut, err := run(args...)
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
				t.Errorf("%v: err = %v, want exit 2", args, err)
			}
			if !strings.Contains(errOut, "enroll-key.sh:") {
				t.Errorf("%v: no clear message: %q", args, errOut)
			}
		}
		out, _, err := run("--help")
		if err != nil || !strings.Contains(out, "Usage:") {
			t.Errorf("--help: %v %q", err, out)
		}
	})
}

// serve --trace writes a new file only: an existing one is refused before
// anything starts, and left as it was.
func TestServeTraceRefusesExistingFile(t *testing.T) {
	e := newEnv(t, "")
	path := filepath.Join(t.TempDir(), "trace.out")
	if err := os.WriteFile(path, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	a := newApp(strings.NewReader(""), io.Discard, io.Discard)
	cmd := a.root()
	cmd.SetArgs([]string{"--config", e.cfgPath, "serve", "--trace", path})
	err := cmd.ExecuteContext(context.Background())
	if err == nil || !strings.Contains(err.Error(), "--trace") || !strings.Contains(err.Error(), "file exists") {
		t.Fatalf("serve --trace on an existing file: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "keep" {
		t.Errorf("the existing file was changed: %q", b)
	}
}

func TestStartTrace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.out")
	stop, err := startTrace(path)
	if err != nil {
		t.Fatal(err)
	}
	stop()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("go 1.")) || len(b) < 100 {
		t.Errorf("not an execution trace: %q", b[:min(len(b), 40)])
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("trace file mode %v, want 0600", fi.Mode().Perm())
	}
}
