package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
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
// build computed, exports without the new fields, and an entry with them
// appended after the old ones chains on and verifies.
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
	if len(export) != 10 || strings.Contains(strings.Join(export, "\n"), "_algo") {
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
	if out := e.must("", "audit", "verify"); !strings.HasPrefix(out, "audit log intact: 11 entries, head digest ") {
		t.Fatalf("audit verify after a new entry = %q", out)
	}
	export = strings.Split(strings.TrimSpace(e.must("", "audit", "export")), "\n")
	var last map[string]any
	if err := json.Unmarshal([]byte(export[len(export)-1]), &last); err != nil {
		t.Fatal(err)
	}
	if last["prev"] != head || last["sign_algo"] != "1.2.840.10045.4.3.4" || last["hash_algo"] != "2.16.840.1.101.3.4.2.3" {
		t.Errorf("new entry %s", export[len(export)-1])
	}
}
