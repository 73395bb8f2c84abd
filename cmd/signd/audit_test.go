package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/signd/signd/store"
	"github.com/signd/signd/store/bolt"
)

// TestAuditVerifiesFileWrittenBeforeSignAlgo runs `signd audit verify` and
// `export` on testdata/audit-written-before-sign-algo.db, a store file the
// build before signHash entries recorded their algorithm wrote: ten
// entries of every kind (credential enrolment, a granted, a refused and a
// restored signHash, authorize, timestamp, credential_auth, a disable),
// store clock 2026-11-23 12:00 UTC. The log is intact with the head that
// build computed (the verification appends its admin_read entry after
// verifying, as entry 11), exports without the new fields, and entries
// with them appended after the old ones chain on and verify.
func TestAuditVerifiesFileWrittenBeforeSignAlgo(t *testing.T) {
	const head = "3f931c96ce94e1f50eae2945fb2459a077152b8d0362d2bc7447ed8fc0ec1040"
	e := newEnv(t, "")
	data, err := os.ReadFile(filepath.Join("testdata", "audit-written-before-sign-algo.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.store, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if out := e.must("", "audit", "verify"); out != "audit log intact: 10 entries, head digest "+head+"\n" {
		t.Fatalf("audit verify = %q", out)
	}
	export := strings.Split(strings.TrimSpace(e.must("", "audit", "export")), "\n")
	if len(export) != 12 || strings.Contains(strings.Join(export[:10], "\n"), "_algo") ||
		!strings.HasSuffix(export[9], `"digest":"`+head+`"}`) || !strings.Contains(export[10], `"prev":"`+head+`"`) {
		t.Fatalf("export:\n%s", strings.Join(export, "\n"))
	}

	db, err := bolt.Open(e.store, bolt.Options{Now: func() time.Time { return time.Date(2026, 11, 23, 13, 0, 0, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(context.Background(), func(tx store.Tx) error {
		return tx.AppendAudit(&store.AuditEntry{Kind: store.AuditSignHash, User: "alice", Client: "rp", Credential: "c1",
			Hashes: []string{strings.Repeat("ab", 32)}, SignAlgo: "1.2.840.10045.4.3.4", HashAlgo: "2.16.840.1.101.3.4.2.3", Outcome: store.AuditGranted})
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	if out := e.must("", "audit", "verify"); !strings.HasPrefix(out, "audit log intact: 13 entries, head digest ") {
		t.Fatalf("audit verify after a new entry = %q", out)
	}
	export = strings.Split(strings.TrimSpace(e.must("", "audit", "export", "--kind", "signHash", "--since", "2026-11-23T13:00:00Z")), "\n")
	var last map[string]any
	if err := json.Unmarshal([]byte(export[len(export)-1]), &last); len(export) != 1 || err != nil {
		t.Fatalf("new entry %q: %v", export, err)
	}
	if last["seq"] != 13.0 || last["sign_algo"] != "1.2.840.10045.4.3.4" || last["hash_algo"] != "2.16.840.1.101.3.4.2.3" {
		t.Errorf("new entry %s", export[len(export)-1])
	}
}

// TestAuditExportFlags: the export's filters select by kind, actor,
// target and time, and a malformed filter is refused before anything is
// read, naming the flag.
func TestAuditExportFlags(t *testing.T) {
	e := newEnv(t, "")
	e.must("a long password\n", "user", "add", "alice", "--password-file", "-")
	e.must("a long password\n", "user", "add", "bob", "--password-file", "-")
	e.must("", "user", "disable", "bob")
	uid := strconv.Itoa(os.Getuid())

	lines := func(args ...string) []map[string]any {
		t.Helper()
		var out []map[string]any
		for l := range strings.Lines(e.must("", append([]string{"audit", "export"}, args...)...)) {
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("line %q: %v", l, err)
			}
			out = append(out, m)
		}
		return out
	}
	summary := func(ms []map[string]any) string {
		var s []string
		for _, m := range ms {
			s = append(s, fmt.Sprint(m["kind"], " ", m["target"]))
		}
		return strings.Join(s, ", ")
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--kind", "user_added"}, "user_added user:alice, user_added user:bob"},
		// The global --json changes nothing: the export is JSON lines.
		{[]string{"--kind", "user_added", "--json"}, "user_added user:alice, user_added user:bob"},
		{[]string{"--kind", "user_added", "--kind", "user_disabled"}, "user_added user:alice, user_added user:bob, user_disabled user:bob"},
		{[]string{"--target", "user:bob"}, "user_added user:bob, user_disabled user:bob"},
		{[]string{"--target", "user:bob", "--actor", "uid:" + uid}, "user_added user:bob, user_disabled user:bob"},
		{[]string{"--target", "user:bob", "--actor", "uid:" + uid + "0"}, ""},
		{[]string{"--kind", "user_added", "--until", "2000-01-01"}, ""},
		{[]string{"--kind", "user_added", "--since", "2000-01-01", "--until", time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}, "user_added user:alice, user_added user:bob"},
	} {
		if got := summary(lines(tc.args...)); got != tc.want {
			t.Errorf("export %v: %s, want %s", tc.args, got, tc.want)
		}
	}
	// The exports are audited, with the filter they used.
	reads := lines("--kind", "admin_read", "--actor", "uid:"+uid)
	if last := reads[len(reads)-1]; fmt.Sprint(last["fields"]) != "map[actor:uid:"+uid+" kinds:admin_read op:AuditExport]" {
		t.Errorf("the export's own entry: %v", last)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--since", "yesterday"}, `--since "yesterday": want RFC 3339 (2026-01-02T15:04:05Z) or a date (2026-01-02)`},
		{[]string{"--until", "2026-13-01"}, `--until "2026-13-01": want RFC 3339`},
		{[]string{"--kind", "user_added", "--kind", "password_changed"}, `unknown audit kind "password_changed" (kinds: account_action, admin_read,`},
		{[]string{"--since", "2026-02-01", "--until", "2026-01-01"}, "until (2026-01-01T00:00:00Z) must be after since (2026-02-01T00:00:00Z)"},
		{[]string{"--actor", strings.Repeat("x", 300)}, "actor must be at most 256 printable characters"},
		{[]string{"--target", "user:\x1b[2J"}, "target must be at most 256 printable characters"},
	} {
		out, _, err := e.run("", append([]string{"audit", "export"}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) || out != "" {
			t.Errorf("export %q: %v, output %q; want the error %q", tc.args, err, out, tc.want)
		}
	}
}
