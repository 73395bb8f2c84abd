package main

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/signd/signd/cmd/signd/adminrpc"
	"github.com/signd/signd/oauth/passwords"
	"github.com/signd/signd/store"
)

// auditExport returns the entries `signd audit export` prints (through the
// daemon while it runs, else from the file), but the admin_read entries of
// the test's own reads, and the export's text; the chain must verify.
func auditExport(t *testing.T, e *env) ([]*store.AuditEntry, string) {
	t.Helper()
	if v := e.must("", "audit", "verify"); !strings.HasPrefix(v, "audit log intact: ") {
		t.Errorf("audit verify = %q", v)
	}
	out := e.must("", "audit", "export")
	var entries []*store.AuditEntry
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		a, err := store.DecodeAuditEntry([]byte(line))
		if err != nil {
			t.Fatalf("export line %q: %v", line, err)
		}
		if a.Kind != store.AuditAdminRead {
			entries = append(entries, a)
		}
	}
	return entries, out
}

// ofKind returns the entries of kind k.
func ofKind(entries []*store.AuditEntry, k store.AuditKind) []*store.AuditEntry {
	var out []*store.AuditEntry
	for _, a := range entries {
		if a.Kind == k {
			out = append(out, a)
		}
	}
	return out
}

// fileSHA256 is the lowercase hex SHA-256 of the file at path.
func fileSHA256(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// TestSecurityEventsDaemon: against the real daemon, its bbolt file and
// SoftHSM: the start records the configuration file's digest and the OIDC
// key it generated (Actor signd); each auth/login (CSC v1 §11.1) attempt
// is one login entry with the auth/login client and the remote address;
// wrong PINs on credentials/authorize (§11.6) that lock the PIN give one
// pin_locked entry with the client. No password, PIN or token is in the
// export.
func TestSecurityEventsDaemon(t *testing.T) {
	e := newEnv(t, authLoginConfig+"oauth:\n  max_failures: 3\n")
	_, base, _ := startJourney(t, e)
	cred := enrollKey(t, e, "alice", "CN=Alice Jansen,O=Example BV,C=NL", "--auth-mode", "explicit")

	entries, _ := auditExport(t, e)
	cfgSum := fileSHA256(t, e.cfgPath)
	if got := ofKind(entries, store.AuditConfigLoaded); len(got) != 1 || got[0].Actor != "signd" || got[0].Outcome != store.AuditOK ||
		!maps.Equal(got[0].Fields, map[string]string{"event": "start", "path": e.cfgPath, "sha256": cfgSum, "admin.roles": "unset"}) {
		t.Errorf("config_loaded entries %+v, want one of the start with sha256 %s", got, cfgSum)
	}
	if got := ofKind(entries, store.AuditOIDCKeyCreated); len(got) != 1 || got[0].Actor != "signd" ||
		!strings.HasPrefix(got[0].Target, "oidc-key:") || got[0].Fields["alg"] != "RS256" || got[0].Fields["state"] != "active" {
		t.Errorf("oidc_key_created entries %+v, want the daemon's first RS256 key", got)
	}

	// auth/login: a wrong password, an unknown user, the right password.
	before := len(entries)
	for _, try := range []struct{ user, password string }{{"alice", "not alice's password"}, {"nobody", "nobody's guess"}, {"alice", journeyPassword}} {
		authLoginRaw(t, base, try.user, try.password)
	}
	entries, _ = auditExport(t, e)
	logins := entries[before:]
	want := []struct{ user, outcome, reason string }{{"alice", "failed", "wrong password"}, {"", "failed", "unknown user"}, {"alice", "ok", ""}}
	if len(logins) != len(want) {
		t.Fatalf("auth/login entries: %d, want %d", len(logins), len(want))
	}
	for i, w := range want {
		a := logins[i]
		if a.Kind != store.AuditLogin || a.User != w.user || a.Outcome != w.outcome || a.Reason != w.reason || a.Client != "rp" ||
			a.IP != "127.0.0.1" || !maps.Equal(a.Fields, map[string]string{"method": "auth_login", "door": passwords.DoorAuthLogin}) {
			t.Errorf("auth/login entry %d: %+v, want user %q %s %q from 127.0.0.1 for rp", i, a, w.user, w.outcome, w.reason)
		}
	}

	// credentials/authorize with three wrong PINs: the third locks.
	bearer := serviceToken(t, base)
	d := sha256.Sum256([]byte("%PDF-1.7 a document"))
	var wrongPINs []string
	for i := range 3 {
		pin := fmt.Sprintf("77%04d", i)
		wrongPINs = append(wrongPINs, pin)
		b, _ := json.Marshal(map[string]any{"credentialID": cred, "numSignatures": 1, "hash": []string{base64.StdEncoding.EncodeToString(d[:])}, "PIN": pin})
		postJSON(t, base+"/csc/v1/credentials/authorize", bearer, string(b))
	}
	entries, export := auditExport(t, e)
	locks := ofKind(entries, store.AuditPINLock)
	if len(locks) != 1 || locks[0].User != "alice" || locks[0].Client != "rp" || locks[0].IP != "127.0.0.1" || locks[0].Outcome != store.AuditOK ||
		!maps.Equal(locks[0].Fields, map[string]string{"failures": "3", "until": "permanent", "door": passwords.DoorCredentialsPIN}) {
		t.Errorf("pin_locked entries %+v, want one for alice through credentials/authorize", locks)
	}
	for _, s := range append(wrongPINs, journeyPassword, journeyPIN, "not alice's password", "nobody's guess", "nobody", bearer) {
		if strings.Contains(export, s) {
			t.Errorf("the audit export contains %q", s)
		}
	}
}

// TestStoreBackupAudited: `signd store backup` through the daemon and on
// the file is a store_backup entry naming the operator (the socket peer's
// uid, or the user running the command) with the size and the SHA-256 of
// the file written — an auditor can tell which file a backup was — and,
// on the file, its path. The snapshot is taken before its entry: the
// backup holds every entry but its own.
func TestStoreBackupAudited(t *testing.T) {
	e := newEnv(t, "")
	e.must("a long password\n", "user", "add", "alice", "--password-file", "-")
	_, stop := e.startDaemon()
	// The test runs the CLI and the daemon as one uid.
	actor := adminrpc.Roles{}.PrincipalIDs(uint32(os.Geteuid()), uint32(os.Getegid())).Actor

	check := func(what, file, path string, wantEntries int) {
		t.Helper()
		entries, _ := auditExport(t, e)
		if len(entries) != wantEntries {
			t.Fatalf("%s: %d entries, want %d", what, len(entries), wantEntries)
		}
		fi, err := os.Stat(file)
		if err != nil {
			t.Fatal(err)
		}
		wantFields := map[string]string{"bytes": strconv.FormatInt(fi.Size(), 10), "sha256": fileSHA256(t, file)}
		if path != "" {
			wantFields["path"] = path
		}
		last := entries[len(entries)-1]
		if last.Kind != store.AuditStoreBackup || last.Actor != actor || last.Outcome != store.AuditOK || !maps.Equal(last.Fields, wantFields) {
			t.Errorf("%s: last entry %+v, want store_backup by %s with %v", what, last, actor, wantFields)
		}
	}
	online := filepath.Join(e.dir, "online.db")
	before, _ := auditExport(t, e)
	e.must("", "store", "backup", online)
	check("through the daemon", online, "", len(before)+1)
	stop()

	offline := filepath.Join(e.dir, "offline.db")
	e.must("", "store", "backup", offline)
	check("on the file", offline, offline, len(before)+2)

	// The online backup holds what was there before its entry.
	e.withStorePath(online)
	if got, _ := auditExport(t, e); len(got) != len(before) {
		t.Errorf("the backup holds %d entries, want %d", len(got), len(before))
	}
}

// TestConfigReloadAudited: each SIGHUP reload is a config_loaded entry:
// applied, with the new file's digest and who may administer (the groups
// of admin.roles, admin.dual_control); refused (a bad value), with the
// reason and no digest; a change of dual control (read at start only),
// refused naming the key; so is a change of any other key read at start
// only, from the file or the environment (every such key named, in the
// key table's order, and the log level changed with them not applied);
// the daemon's start is the first.
func TestConfigReloadAudited(t *testing.T) {
	gid := strconv.Itoa(os.Getegid()) // the test's own group holds every role
	e := newEnv(t, "log:\n  level: info\nadmin:\n  roles:\n    security_officer: [\""+gid+"\"]\n    administrator: [\""+gid+"\"]\n"+
		"    auditor: [\""+gid+"\"]\n  dual_control: [credential_remove, tsa_enroll]\n")
	hup := make(chan struct{})
	logs := &syncBuffer{}
	addr, _ := e.startDaemonWith(func(a *app) { a.hup = hup; a.stderr = logs })
	start := fileSHA256(t, e.cfgPath)
	reload := func(wantLog string) {
		t.Helper()
		n := strings.Count(logs.String(), wantLog)
		hup <- struct{}{}
		for deadline := time.Now().Add(10 * time.Second); strings.Count(logs.String(), wantLog) == n; {
			if time.Now().After(deadline) {
				t.Fatalf("no %q within 10 s:\n%s", wantLog, logs.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	e.setConfig("level: info", "level: debug")
	reload(`"msg":"reloaded"`)
	applied := fileSHA256(t, e.cfgPath)
	e.setConfig("level: debug", "level: loud")
	reload("reload: configuration refused, nothing changed")
	e.setConfig("level: loud", "level: debug") // for the CLI that exports
	// Dual control and the socket's roles are read at start: a reload
	// that changes them is refused, so config_loaded never records a
	// policy not in force.
	e.setConfig("dual_control: [credential_remove, tsa_enroll]", "dual_control: [tsa_enroll]")
	reload("reload: admin.dual_control needs a restart; nothing changed")
	e.setConfig("dual_control: [tsa_enroll]", "dual_control: [credential_remove, tsa_enroll]")
	// Any key without Reload, from the file or the environment: refused,
	// and the log level changed with it stays debug (health probes log
	// at DEBUG).
	e.setConfig("level: debug", "level: error\noauth:\n  max_failures: 3")
	t.Setenv("SIGND_RATELIMIT_TOKEN_RATE", "5")
	reload("reload: oauth.max_failures, ratelimit.token.rate need a restart; nothing changed")
	probes := strings.Count(logs.String(), "/healthz")
	res, err := http.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	for deadline := time.Now().Add(10 * time.Second); strings.Count(logs.String(), "/healthz") == probes; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("a health probe after the refused reload not logged: log.level error applied:\n%s", logs.String())
		}
	}
	e.setConfig("level: error\noauth:\n  max_failures: 3", "level: debug")
	t.Setenv("SIGND_RATELIMIT_TOKEN_RATE", "")

	got := ofKind(func() []*store.AuditEntry { es, _ := auditExport(t, e); return es }(), store.AuditConfigLoaded)
	admin := func(fields map[string]string) map[string]string {
		maps.Copy(fields, map[string]string{"admin.roles.security_officer": gid, "admin.roles.administrator": gid,
			"admin.roles.auditor": gid, "admin.dual_control": "credential_remove,tsa_enroll"})
		return fields
	}
	want := []struct {
		outcome, reason string
		fields          map[string]string
	}{
		{store.AuditOK, "", admin(map[string]string{"event": "start", "path": e.cfgPath, "sha256": start})},
		{store.AuditOK, "", admin(map[string]string{"event": "reload", "path": e.cfgPath, "sha256": applied})},
		{store.AuditRefused, "configuration refused", map[string]string{"event": "reload"}},
		{store.AuditRefused, "admin.dual_control needs a restart", map[string]string{"event": "reload"}},
		{store.AuditRefused, "oauth.max_failures, ratelimit.token.rate need a restart", map[string]string{"event": "reload"}},
	}
	if len(got) != len(want) {
		t.Fatalf("%d config_loaded entries, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		if got[i].Actor != "signd" || got[i].Outcome != w.outcome || got[i].Reason != w.reason || !maps.Equal(got[i].Fields, w.fields) {
			t.Errorf("config_loaded %d: %+v, want %s %q %v", i, got[i], w.outcome, w.reason, w.fields)
		}
	}
	if start == applied {
		t.Fatal("the test did not change the file")
	}
}
