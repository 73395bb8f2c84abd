package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/signd/signd/store"
)

// withStorePath points the env's config (and its helpers) at another
// store file.
func (e *env) withStorePath(path string) {
	e.t.Helper()
	data, err := os.ReadFile(e.cfgPath)
	if err != nil {
		e.t.Fatal(err)
	}
	data = bytes.Replace(data, []byte("path: "+e.store+"\n"), []byte("path: "+path+"\n"), 1)
	if err := os.WriteFile(e.cfgPath, data, 0o600); err != nil {
		e.t.Fatal(err)
	}
	e.store = path
}

// TestStoreBackupAndCheckCLI: `store backup` and `store check` through the
// running daemon and on the file; a backup restores by pointing
// store.path at it; an existing file is never overwritten.
func TestStoreBackupAndCheckCLI(t *testing.T) {
	e := newEnv(t, "")
	e.must("a long password\n", "user", "add", "alice", "--password-file", "-")
	e.must("", "client", "add", "rp", "--redirect-uri", "https://rp.example/cb")
	enrollKey(t, e, "alice", "CN=Alice,O=Example")
	_, stop := e.startDaemon()

	// The audit log: user_added, client_added and the two
	// credential_enrolled entries (pending, enabled), then the daemon's
	// config_loaded and oidc_key_created; the backup's own entry follows
	// its snapshot.
	online := filepath.Join(e.dir, "online.db")
	out := e.must("", "store", "backup", online)
	if !strings.HasPrefix(out, "backup written: "+online) || !strings.Contains(out, "audit log 6 entries") {
		t.Errorf("store backup (daemon) = %q", out)
	}
	if fi, err := os.Stat(online); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("backup file: %v %v", fi, err)
	}
	before, _ := os.ReadFile(online)
	if _, _, err := e.run("", "store", "backup", online); err == nil || !strings.Contains(err.Error(), "refusing to overwrite") {
		t.Errorf("backup over an existing file: %v", err)
	}
	if after, _ := os.ReadFile(online); !bytes.Equal(before, after) {
		t.Error("the existing backup changed")
	}
	out = e.must("", "store", "check")
	if !strings.HasPrefix(out, "store intact: "+e.store) || !strings.Contains(out, "audit log 7 entries") {
		t.Errorf("store check (daemon) = %q", out)
	}
	var rep struct {
		OK           bool   `json:"ok"`
		AuditEntries uint64 `json:"audit_entries"`
		Records      int    `json:"records"`
	}
	if err := json.Unmarshal([]byte(e.must("", "store", "check", "--json")), &rep); err != nil || !rep.OK || rep.AuditEntries != 7 || rep.Records < 3 {
		t.Errorf("store check --json (daemon): %+v %v", rep, err)
	}
	stop()

	// On the file.
	offline := filepath.Join(e.dir, "offline.db")
	var res struct {
		File  string `json:"file"`
		Bytes int64  `json:"bytes"`
		Check struct {
			OK bool `json:"ok"`
		} `json:"check"`
	}
	if err := json.Unmarshal([]byte(e.must("", "store", "backup", offline, "--json")), &res); err != nil || res.File != offline || !res.Check.OK || res.Bytes == 0 {
		t.Errorf("store backup --json (file): %+v %v", res, err)
	}
	if out := e.must("", "store", "check"); !strings.HasPrefix(out, "store intact: ") {
		t.Errorf("store check (file) = %q", out)
	}

	// Restore: store.path at the online backup.
	e.withStorePath(online)
	if out := e.must("", "user", "list"); !strings.Contains(out, "alice") {
		t.Errorf("user list on the restored store: %q", out)
	}
	// Six, then the read of user list.
	if out := e.must("", "audit", "verify"); !strings.HasPrefix(out, "audit log intact: 7 entries") {
		t.Errorf("audit verify on the restored store: %q", out)
	}
	if _, stop := e.startDaemon(); stop == nil {
		t.Fatal("the daemon does not start on the restored store")
	}

	// Restore as docs/OPERATIONS.md gives it: the backup copied into place
	// with install(1) as the store's owner, mode 0600 (the test runs as that
	// owner, so without -o and -g).
	restored := filepath.Join(e.dir, "restored", "signd.db")
	if err := os.Mkdir(filepath.Dir(restored), 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("install", "-m", "600", online, restored).CombinedOutput(); err != nil {
		t.Fatalf("install the backup: %v %s", err, out)
	}
	e.withStorePath(restored)
	if out := e.must("", "store", "check"); !strings.HasPrefix(out, "store intact: ") {
		t.Errorf("store check on the installed backup = %q", out)
	}
	if out := e.must("", "user", "list"); !strings.Contains(out, "alice") {
		t.Errorf("user list on the installed backup: %q", out)
	}
}

// TestDamagedStoreCLI: for every kind of damaged store file, serve refuses
// to start naming the file and the recovery, `store check` names the
// problem and exits non-zero (also with --json), and `audit verify`
// returns an error: nothing panics, nothing re-creates the file.
func TestDamagedStoreCLI(t *testing.T) {
	// A real store to damage.
	src := newEnv(t, "")
	src.must("a long password\n", "user", "add", "alice", "--password-file", "-")
	for i := range 30 {
		if err := func() error {
			db := src.openStore()
			defer db.Close()
			return db.Update(context.Background(), func(tx store.Tx) error {
				return tx.AppendAudit(&store.AuditEntry{Kind: store.AuditSignHash, User: "alice", Client: "rp",
					Hashes: []string{strings.Repeat("cd", 32)}, Outcome: store.AuditRefused, Reason: strings.Repeat("x", 200+i)})
			})
		}(); err != nil {
			t.Fatal(err)
		}
	}
	good, err := os.ReadFile(src.store)
	if err != nil {
		t.Fatal(err)
	}
	ps := os.Getpagesize()
	auditLeaf := func() int {
		raw, err := bbolt.Open(src.store, 0o600, &bbolt.Options{ReadOnly: true, Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		var id int
		_ = raw.View(func(tx *bbolt.Tx) error { id = int(tx.Bucket([]byte("audit")).RootPage()); return nil })
		for binary.NativeEndian.Uint16(good[id*ps+8:]) == 0x01 { // branch: first child
			id = int(binary.NativeEndian.Uint64(good[id*ps+16+8:]))
		}
		return id
	}()
	flip := func(off int, mask byte) []byte {
		d := bytes.Clone(good)
		d[off] ^= mask
		return d
	}
	tests := []struct {
		name    string
		data    []byte
		problem string
		opens   bool // Open's own checks pass: only the full check finds it
	}{
		{"empty file", []byte{}, "empty (0 bytes)", false},
		{"a PNG image", append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{7}, 9000)...), "not a bbolt database file", false},
		{"truncated copy", good[:len(good)/2], "truncated", false},
		{"flipped byte in a meta page", flip(16+48, 0x01), "meta page 0: checksum mismatch", false},
		{"leaf page of the audit log mangled", flip(auditLeaf*ps+8, 0x40), "not a branch or leaf page", true},
		{"audit entry changed", bytes.ReplaceAll(good, []byte(`"user":"alice"`), []byte(`"user":"alicf"`)), "audit log broken at entry 1", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, "")
			if err := os.WriteFile(e.store, tt.data, 0o600); err != nil {
				t.Fatal(err)
			}
			serve := func() error {
				cmd := newApp(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{}).root()
				cmd.SetArgs([]string{"--config", e.cfgPath, "serve"})
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				return cmd.ExecuteContext(ctx)
			}
			if tt.opens {
				// Open's cheap checks pass; store.verify_on_open catches it.
				t.Setenv("SIGND_STORE_VERIFY_ON_OPEN", "true")
			}
			if err := serve(); err == nil || !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), tt.problem) ||
				!strings.Contains(err.Error(), e.store) || !strings.Contains(err.Error(), "signd store backup") {
				t.Errorf("serve on a damaged store: %v, want a refusal naming the file, %q and the backup", err, tt.problem)
			}
			os.Unsetenv("SIGND_STORE_VERIFY_ON_OPEN") // the commands below read the damage themselves

			out, _, err := e.run("", "store", "check")
			if err == nil || !strings.Contains(err.Error(), tt.problem) || !strings.Contains(err.Error(), e.store) {
				t.Errorf("store check: %v, want an error naming the file and %q", err, tt.problem)
			}
			if !strings.Contains(out, "problem: ") {
				t.Errorf("store check printed %q", out)
			}
			out, _, err = e.run("", "store", "check", "--json")
			var rep struct {
				OK      bool   `json:"ok"`
				Problem string `json:"problem"`
			}
			if err == nil || json.Unmarshal([]byte(out), &rep) != nil || rep.OK || !strings.Contains(rep.Problem, tt.problem) {
				t.Errorf("store check --json: %v %q", err, out)
			}
			if _, _, err := e.run("", "audit", "verify"); err == nil || !strings.Contains(err.Error(), tt.problem) {
				t.Errorf("audit verify of a damaged store: %v, want an error naming %q", err, tt.problem)
			}
			if after, _ := os.ReadFile(e.store); !bytes.Equal(after, tt.data) {
				t.Error("the damaged file was changed")
			}
		})
	}
}

// TestStoreLinkCLI: the store's directory belongs to signd's user (here
// uid 65534), who can put a link at store.path. A command run as root
// with no daemon answering opens the file itself; it must neither create
// nor open the link's target, and a store missing from another user's
// directory is not created by root but named, with how to run the
// command as that user.
func TestStoreLinkCLI(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the defence is of a command run as root in a directory of another uid (CI runs as root)")
	}
	e := newEnv(t, "")
	owned := func(name string) string { // a directory of uid 65534's
		d := filepath.Join(e.dir, name)
		mkdir(t, d, 0o700)
		chown(t, d, nobody, nobody)
		return d
	}

	// No store yet: root does not create one in uid 65534's directory.
	e.withStorePath(filepath.Join(owned("empty"), "signd.db"))
	_, _, err := e.run("", "user", "list")
	if err == nil || !strings.Contains(err.Error(), "no store at "+e.store) || !strings.Contains(err.Error(), "start `signd serve` once") {
		t.Errorf("user list with no store: %v", err)
	}
	if _, err := os.Lstat(e.store); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("store file: %v, want none created", err)
	}

	e.withStorePath(filepath.Join(owned("state"), "signd.db"))
	victim := filepath.Join(e.dir, "etc", "nologin")
	mkdir(t, filepath.Dir(victim), 0o755)
	if err := os.Symlink(victim, e.store); err != nil {
		t.Fatal(err)
	}
	chown(t, e.store, nobody, nobody)
	backup := filepath.Join(e.dir, "backup.db")
	for _, args := range [][]string{
		{"user", "list"},
		{"audit", "export"},
		{"store", "backup", backup},
		{"user", "add", "mallory", "--password-file", "-"},
	} {
		out, _, err := e.run("a long password\n", args...)
		if err == nil || !strings.Contains(err.Error(), e.store+" is a symbolic link") {
			t.Errorf("signd %s through a dangling link: %v (out %q)", strings.Join(args, " "), err, out)
		}
		if _, err := os.Lstat(victim); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("signd %s created the link's target %s: %v", strings.Join(args, " "), victim, err)
		}
	}
	if _, err := os.Lstat(backup); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("backup file: %v, want none", err)
	}
}
