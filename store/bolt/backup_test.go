package bolt_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/signd/signd/store"
	"github.com/signd/signd/store/bolt"
	"github.com/signd/signd/store/storetest"
	"github.com/signd/signd/store/storetest/backends"
)

// TestBackupOnlineDuringWrites takes backups while writers append audit
// entries: each backup is a 0600 store that opens, checks clean and whose
// audit chain verifies; an existing file is never overwritten and nothing
// is left behind.
func TestBackupOnlineDuringWrites(t *testing.T) {
	ctx := context.Background()
	db := backends.Bolt(t, bolt.Options{})
	dir := t.TempDir()

	var appended atomic.Int64
	seq := make([]int, 4) // each writer's entries
	stop := storetest.Meanwhile(len(seq), func(w int) bool {
		seq[w]++
		err := db.Batch(ctx, func(tx store.Tx) error {
			return tx.AppendAudit(&store.AuditEntry{Kind: store.AuditSignHash, User: fmt.Sprintf("w%d", w),
				Client: "rp", Hashes: []string{fmt.Sprintf("%064x", seq[w])}, Outcome: store.AuditGranted})
		})
		if err != nil {
			t.Error(err)
			return false
		}
		appended.Add(1)
		return true
	})
	var last uint64
	for i := range 3 {
		for appended.Load() < int64(50*(i+1)) {
			time.Sleep(time.Millisecond)
		}
		path := filepath.Join(dir, fmt.Sprintf("backup-%d.db", i))
		res, err := bolt.SaveBackup(ctx, path, func(w io.Writer) error { _, err := db.Backup(ctx, w); return err })
		if err != nil {
			t.Fatal(err)
		}
		if !res.Check.OK || res.Check.AuditEntries == 0 || res.Check.AuditEntries < last || res.Bytes == 0 {
			t.Errorf("backup %d: %+v %+v", i, res, res.Check)
		}
		last = res.Check.AuditEntries
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("backup mode %v, want 0600", fi.Mode().Perm())
		}
		// Restorable: it opens as a store and its chain verifies.
		restored, err := bolt.Open(path, bolt.Options{VerifyOnOpen: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := restored.View(ctx, func(tx store.Tx) error {
			n, _, err := store.VerifyAudit(tx)
			if n != res.Check.AuditEntries {
				t.Errorf("restored store has %d entries, the check said %d", n, res.Check.AuditEntries)
			}
			return err
		}); err != nil {
			t.Error(err)
		}
		restored.Close()
	}
	stop()

	// Never over an existing file.
	existing := filepath.Join(dir, "backup-0.db")
	before, _ := os.ReadFile(existing)
	_, err := bolt.SaveBackup(ctx, existing, func(w io.Writer) error { _, err := db.Backup(ctx, w); return err })
	if err == nil || !strings.Contains(err.Error(), "refusing to overwrite") {
		t.Errorf("backup over an existing file: %v", err)
	}
	if after, _ := os.ReadFile(existing); string(after) != string(before) {
		t.Error("the existing file changed")
	}
	// A snapshot that is not a store is refused, and nothing is left.
	_, err = bolt.SaveBackup(ctx, filepath.Join(dir, "bad.db"), func(w io.Writer) error {
		_, err := io.WriteString(w, "not a store")
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "does not check") {
		t.Errorf("backup of garbage: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "backup-0.db backup-1.db backup-2.db" {
		t.Errorf("directory holds %v", names)
	}
}
