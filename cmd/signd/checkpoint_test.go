package main

import (
	"bytes"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/signd/signd/checkpoint/checkpointtest"
	"github.com/signd/signd/store"
)

// checkpointEnv is an env whose audit key has a label of the test's own
// (the token is shared) and whose checkpoints go to <dir>/cp.
func checkpointEnv(t *testing.T) (*env, string) {
	t.Helper()
	e := newEnv(t, "")
	dir := filepath.Join(e.dir, "cp")
	label := "audit-" + strings.ReplaceAll(t.Name(), "/", "-")
	// The audit section goes last, where the tests append to it.
	e.setConfig("audit:\n  checkpoint_dir: "+e.dir+"/checkpoints\n", "")
	e.appendConfig("audit:\n  key_label: " + label + "\n  checkpoint_dir: " + dir + "\n")
	return e, dir
}

var vkeyLine = regexp.MustCompile(`(?m)^verifier key: (\S+)$`)

// createAuditKey runs `signd audit key create` with args and returns the
// verifier key it prints.
func createAuditKey(t *testing.T, e *env, args ...string) string {
	t.Helper()
	out := e.must("", append([]string{"audit", "key", "create"}, args...)...)
	m := vkeyLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("audit key create printed no verifier key:\n%s", out)
	}
	return m[1]
}

// saveCheckpoint copies the latest checkpoint of dir to a file of the
// test, as an auditor keeps one.
func saveCheckpoint(t *testing.T, e *env, dir, name string) (string, []byte) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "checkpoint"))
	if err != nil {
		t.Fatal(err)
	}
	saved := filepath.Join(e.dir, name)
	if err := os.WriteFile(saved, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return saved, data
}

// TestAuditCheckpointJourney: the audit key is made in the real token; a
// checkpoint signed by it verifies with golang.org/x/mod/sumdb/note; the
// daemon signs one through the admin socket and serves it; a log cut off
// after a saved checkpoint, and one rewritten and chained again (which
// the plain `audit verify` accepts), fail `audit verify --checkpoint`.
func TestAuditCheckpointJourney(t *testing.T) {
	e, dir := checkpointEnv(t)
	vkey := createAuditKey(t, e)
	if !strings.HasPrefix(vkey, "127.0.0.1:8443/audit+") {
		t.Fatalf("verifier key %q: its name is not the origin derived from server.base_url", vkey)
	}
	if out := e.must("", "audit", "key", "show"); !strings.Contains(out, vkey) || !strings.Contains(out, "algorithm:    Ed25519") {
		t.Fatalf("audit key show:\n%s", out)
	}
	if _, _, err := e.run("", "audit", "key", "create"); err == nil || !strings.Contains(err.Error(), "already holds an audit key") {
		t.Fatalf("second audit key create: %v", err)
	}
	e.must("a long password\n", "user", "add", "bob", "--password-file", "-")
	// Each checkpoint adds its own entry: the third covers at least three.
	e.must("", "audit", "checkpoint")
	e.must("", "audit", "checkpoint")
	out := e.must("", "audit", "checkpoint")
	if !strings.Contains(out, "checkpoint of ") || !strings.Contains(out, "127.0.0.1:8443/audit\n") {
		t.Fatalf("audit checkpoint printed:\n%s", out)
	}
	saved, data := saveCheckpoint(t, e, dir, "saved.checkpoint")

	// A verifier that is not signd's: sumdb/note, with the key alone.
	v, err := note.NewVerifier(vkey)
	if err != nil {
		t.Fatalf("sumdb/note: verifier key %q: %v", vkey, err)
	}
	n, err := note.Open(data, note.VerifierList(v))
	if err != nil {
		t.Fatalf("sumdb/note does not verify the checkpoint: %v\n%s", err, data)
	}
	lines := strings.Split(n.Text, "\n")
	size := lines[1]
	if lines[0] != "127.0.0.1:8443/audit" || size == "0" || !strings.HasPrefix(lines[3], "time ") {
		t.Fatalf("checkpoint text %q", n.Text)
	}

	// The daemon: a checkpoint through the admin socket, served to
	// witnesses.
	addr, stop := e.startDaemonWith(nil)
	e.must("", "audit", "checkpoint")
	// The auditor's check, through the admin socket.
	if out := e.must("", "audit", "verify", "--checkpoint", saved); !strings.HasPrefix(out, "audit log extends the checkpoint of "+size+" entries") {
		t.Fatalf("verify --checkpoint through the daemon: %q", out)
	}
	if out := e.must("", "hsm", "info"); !regexp.MustCompile(`Ed25519\s`).MatchString(out) {
		t.Errorf("hsm info does not name the audit key Ed25519:\n%s", out)
	}
	res, err := http.Get("http://" + addr + "/audit/checkpoint")
	if err != nil {
		t.Fatal(err)
	}
	served, _ := io.ReadAll(res.Body)
	res.Body.Close()
	latest, _ := os.ReadFile(filepath.Join(dir, "checkpoint"))
	if res.StatusCode != 200 || !bytes.Equal(served, latest) || res.Header.Get("Content-Type") != "text/plain; charset=utf-8" ||
		res.Header.Get("ETag") == "" || res.Header.Get("Cache-Control") != "no-cache" {
		t.Fatalf("GET /audit/checkpoint: %d %v\n%s", res.StatusCode, res.Header, served)
	}
	if _, err := note.Open(served, note.VerifierList(v)); err != nil {
		t.Fatalf("served checkpoint: %v", err)
	}
	router := openAPIRouter(t)
	checkOpenAPI(t, router, "GET", "/audit/checkpoint", http.Header{}, "", res.StatusCode, res.Header, served)
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/audit/checkpoint", nil)
	req.Header.Set("If-None-Match", res.Header.Get("ETag"))
	if r2, err := http.DefaultClient.Do(req); err != nil || r2.StatusCode != http.StatusNotModified {
		t.Fatalf("conditional GET: %v %v", r2, err)
	}
	res, err = http.Get("http://" + addr + "/audit/checkpoint.key")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || string(body) != vkey+"\n" {
		t.Fatalf("GET /audit/checkpoint.key: %d %q", res.StatusCode, body)
	}
	checkOpenAPI(t, router, "GET", "/audit/checkpoint.key", http.Header{}, "", res.StatusCode, res.Header, body)
	stop()

	var export bytes.Buffer
	export.WriteString(e.must("", "audit", "export"))
	if !strings.Contains(export.String(), `"kind":"audit_key_created"`) || !strings.Contains(export.String(), `"kind":"audit_checkpoint","user":""`) {
		t.Fatalf("export lacks the key and checkpoint entries:\n%s", export.String())
	}

	if out := e.must("", "audit", "verify", "--checkpoint", saved); !strings.HasPrefix(out, "audit log extends the checkpoint of "+size+" entries") {
		t.Fatalf("verify --checkpoint on the intact log: %q", out)
	}
	if out := e.must("", "audit", "verify", "--checkpoint", saved, "--key", vkey); !strings.Contains(out, "signed by "+vkey) {
		t.Fatalf("verify --checkpoint --key: %q", out)
	}

	covered, err := strconv.ParseUint(size, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(e.store)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		damage func()
		want   string
	}{
		{"end cut off", func() {
			checkpointtest.Truncate(t, e.store, covered-1)
		}, fmt.Sprintf("audit log does not extend checkpoint %s: the audit log is shorter than the checkpoint: the log has %d entries, the checkpoint covers %d", saved, covered-1, covered)},
		{"rewritten and chained again", func() {
			// The key's creation, entry 1, stays; the first checkpoint's
			// entry says another actor made it.
			checkpointtest.Rewrite(t, e.store, 2, func(a *store.AuditEntry) { a.Actor = "uid:1001 (mallory)" })
		}, "audit log does not extend checkpoint " + saved + ": the audit log differs from the checkpoint: entry " + size + "'s digest is"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := os.WriteFile(e.store, good, 0o600); err != nil {
				t.Fatal(err)
			}
			tt.damage()
			// The checkpoint shows the damage (first: the plain verify
			// appends its own entry to the log it finds intact).
			_, _, err := e.run("", "audit", "verify", "--checkpoint", saved)
			t.Logf("verify --checkpoint: %v", err)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("verify --checkpoint: %v\nwant %q", err, tt.want)
			}
			// The plain check accepts the damaged log.
			out := e.must("", "audit", "verify")
			if !strings.HasPrefix(out, "audit log intact: ") {
				t.Fatalf("plain verify: %q", out)
			}
			t.Logf("plain verify of the damaged log: %s", strings.TrimSpace(out))
			_, _, err = e.run("", "audit", "checkpoint")
			if err == nil || !strings.Contains(err.Error(), "audit checkpoint refused") {
				t.Fatalf("a checkpoint of the damaged log: %v, want a refusal", err)
			}
		})
	}
}

// TestAuditVerifyCheckpointRefuses: checkpoints and keys that do not fit
// are refused with a message that says why, before the log is judged.
func TestAuditVerifyCheckpointRefuses(t *testing.T) {
	e, dir := checkpointEnv(t)
	vkey := createAuditKey(t, e)
	e.must("", "audit", "checkpoint")
	saved, data := saveCheckpoint(t, e, dir, "saved.checkpoint")
	_, otherVkey, err := note.GenerateKey(nil, "127.0.0.1:8443/audit")
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) string {
		p := filepath.Join(e.dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	text := data[:bytes.LastIndex(data, []byte("\n\n"))+1]
	sig := data[len(text)+1:]
	otherText := bytes.Replace(text, []byte("\n"+strings.Split(string(text), "\n")[1]+"\n"), []byte("\n999\n"), 1)
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"no file", []string{"--checkpoint", filepath.Join(e.dir, "missing")}, "no such file"},
		{"malformed", []string{"--checkpoint", write("m", []byte("hello\n"))}, "malformed checkpoint: not a signed note"},
		{"oversized", []string{"--checkpoint", write("big", bytes.Repeat(data, 1+16384/len(data)))}, "is larger than 16384 bytes"},
		{"empty", []string{"--checkpoint", write("empty", nil)}, "no checkpoint given"},
		{"wrong key", []string{"--checkpoint", saved, "--key", otherVkey}, "checkpoint signature does not verify: no signature by 127.0.0.1:8443/audit"},
		{"bad key", []string{"--checkpoint", saved, "--key", "nope"}, "--key: unusable audit key"},
		{"key without checkpoint", []string{"--key", vkey}, "--key needs --checkpoint"},
		{"signature over other text", []string{"--checkpoint", write("o", append(append(otherText, '\n'), sig...))}, "is not over this text"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := e.run("", append([]string{"audit", "verify"}, tt.args...)...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("verify %v: %v, want %q", tt.args, err, tt.want)
			}
		})
	}
	if out := e.must(string(data), "audit", "verify", "--checkpoint", "-"); !strings.HasPrefix(out, "audit log extends") {
		t.Fatalf("checkpoint on stdin: %q", out)
	}
	// Checkpoints of this origin signed by a key of the test's own: size 0,
	// a size beyond the log, another origin.
	skey, svkey, err := note.GenerateKey(nil, "127.0.0.1:8443/audit")
	if err != nil {
		t.Fatal(err)
	}
	signer, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	hash := base64.StdEncoding.EncodeToString(make([]byte, 32))
	for _, tt := range []struct{ name, text, want string }{
		{"size 0", "127.0.0.1:8443/audit\n0\n" + hash + "\n", "size 0: a checkpoint of the empty log proves nothing"},
		{"beyond the log", "127.0.0.1:8443/audit\n1000\n" + hash + "\n", "the audit log is shorter than the checkpoint: the log has"},
		{"origin mismatch", "other.example/audit\n1\n" + hash + "\n", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			msg, err := note.Sign(&note.Note{Text: tt.text}, signer)
			if err != nil {
				t.Fatal(err)
			}
			key := svkey
			if tt.want == "" {
				// Signed as other.example/audit: a key of that name.
				oskey, ovkey, _ := note.GenerateKey(nil, "other.example/audit")
				os, _ := note.NewSigner(oskey)
				msg, _ = note.Sign(&note.Note{Text: tt.text}, os)
				key, tt.want = ovkey, `checkpoint of another log: its origin is "other.example/audit", this log's is "127.0.0.1:8443/audit"`
			}
			_, _, err = e.run("", "audit", "verify", "--checkpoint", write(tt.name, msg), "--key", key)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("verify: %v, want %q", err, tt.want)
			}
		})
	}
}

// TestAuditCheckpointECDSA: forced to ECDSA P-256 (as on a token without
// EdDSA), the checkpoint is signature type 0x02 and openssl verifies it:
// the note text, the signature after the 4-byte key ID (DER), and the
// public key from the verifier key (SPKI after the type byte).
func TestAuditCheckpointECDSA(t *testing.T) {
	openssl, err := exec.LookPath("openssl")
	if err != nil {
		t.Fatalf("openssl: %v", err)
	}
	e, dir := checkpointEnv(t)
	vkey := createAuditKey(t, e, "--algorithm", "ecdsa-p256")
	if out := e.must("", "audit", "key", "show"); !strings.Contains(out, "algorithm:    ECDSA P-256") {
		t.Fatalf("audit key show:\n%s", out)
	}
	e.must("", "audit", "checkpoint")
	saved, data := saveCheckpoint(t, e, dir, "saved.checkpoint")
	if out := e.must("", "audit", "verify", "--checkpoint", saved, "--key", vkey); !strings.HasPrefix(out, "audit log extends") {
		t.Fatalf("verify: %q", out)
	}

	// The openssl recipe of docs/DESIGN-NOTES.md.
	split := bytes.LastIndex(data, []byte("\n\n"))
	text := data[:split+1]
	line := strings.TrimSpace(string(data[split+2:]))
	sig, err := base64.StdEncoding.DecodeString(line[strings.LastIndex(line, " ")+1:])
	if err != nil {
		t.Fatal(err)
	}
	spki, err := base64.StdEncoding.DecodeString(strings.SplitN(vkey, "+", 3)[2])
	if err != nil || spki[0] != 0x02 {
		t.Fatalf("verifier key %q: %v", vkey, err)
	}
	files := map[string][]byte{
		"text":    text,
		"sig.der": sig[4:],
		"pub.pem": pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: spki[1:]}),
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(e.dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(openssl, "dgst", "-sha256", "-verify", "pub.pem", "-signature", "sig.der", "text")
	cmd.Dir = e.dir
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "Verified OK") {
		t.Fatalf("openssl: %v\n%s", err, out)
	}
	// A changed text fails openssl as well.
	if err := os.WriteFile(filepath.Join(e.dir, "text"), append(bytes.Clone(text), 'x'), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd = exec.Command(openssl, "dgst", "-sha256", "-verify", "pub.pem", "-signature", "sig.der", "text")
	cmd.Dir = e.dir
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Fatalf("openssl verified a changed text: %s", out)
	}
}

// TestAuditCheckpointNone: without a key, a checkpoint is refused naming
// the command that makes one; the daemon answers 404 while there is no
// checkpoint and no key.
func TestAuditCheckpointNone(t *testing.T) {
	e, dir := checkpointEnv(t)
	if _, _, err := e.run("", "audit", "checkpoint"); err == nil || !strings.Contains(err.Error(), "signd audit key create") {
		t.Fatalf("audit checkpoint without a key: %v", err)
	}
	if _, _, err := e.run("", "audit", "key", "create", "--algorithm", "rsa"); err == nil || !strings.Contains(err.Error(), `audit key algorithm "rsa"`) {
		t.Fatalf("audit key create --algorithm rsa: %v", err)
	}
	addr, stop := e.startDaemonWith(nil)
	defer stop()
	for _, path := range []string{"/audit/checkpoint", "/audit/checkpoint.key"} {
		res, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s without a checkpoint: %d, want 404", path, res.StatusCode)
		}
	}
	// A latest checkpoint that cannot be read (here a directory, then a
	// file larger than any checkpoint) is 503, never a 500 or its bytes.
	for name, create := range map[string]func(string) error{
		"a directory": func(p string) error { return os.Mkdir(p, 0o700) },
		"oversized":   func(p string) error { return os.WriteFile(p, bytes.Repeat([]byte("x"), 16<<10+1), 0o600) },
	} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, "checkpoint")
		os.RemoveAll(p)
		if err := create(p); err != nil {
			t.Fatal(err)
		}
		res, err := http.Get("http://" + addr + "/audit/checkpoint")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusServiceUnavailable || string(body) != "the audit checkpoint cannot be read now\n" {
			t.Errorf("GET /audit/checkpoint, latest is %s: %d %.80q, want 503", name, res.StatusCode, body)
		}
	}
}

// TestAuditCheckpointTimer: with audit.checkpoint_interval set, the
// daemon signs a checkpoint at each tick as "signd", and a tick with
// nothing new but that checkpoint's own entry signs none.
func TestAuditCheckpointTimer(t *testing.T) {
	e, dir := checkpointEnv(t)
	e.appendConfig("  checkpoint_interval: 1h\n")
	vkey := createAuditKey(t, e)
	ticks := make(chan time.Time)
	logs := &syncBuffer{}
	_, stop := e.startDaemonWith(func(a *app) { a.checkpointTicks = ticks; a.stderr = logs })
	ticks <- time.Now()
	// The checkpoint covers the audit key's entry and what the daemon's
	// start recorded (config_loaded, its OIDC key): checkpoint.N, N as
	// many.
	waitFor(t, func() bool { m, _ := filepath.Glob(filepath.Join(dir, "checkpoint.*")); return len(m) > 0 })
	ticks <- time.Now() // only the first checkpoint's entry is new: skipped
	ticks <- time.Now() // Run has finished the tick before: it took this one
	stop()
	entries, err := filepath.Glob(filepath.Join(dir, "checkpoint.*"))
	if err != nil || len(entries) != 1 {
		t.Fatalf("checkpoint files %v, want only the first tick's", entries)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "checkpoint"))
	v, _ := note.NewVerifier(vkey)
	if _, err := note.Open(data, note.VerifierList(v)); err != nil {
		t.Fatalf("timed checkpoint: %v\n%s", err, data)
	}
	out := e.must("", "audit", "export")
	if !strings.Contains(out, `"kind":"audit_checkpoint"`) || !strings.Contains(out, `"actor":"signd"`) {
		t.Fatalf("no audit_checkpoint entry by signd:\n%s", out)
	}
	if !strings.Contains(logs.String(), "audit checkpoint signed") {
		t.Errorf("the daemon did not log the checkpoint:\n%s", logs.String())
	}
}
