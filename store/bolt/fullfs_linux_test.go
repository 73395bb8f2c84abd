package bolt_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/signd/signd/store"
	"github.com/signd/signd/store/bolt"
	"github.com/signd/signd/store/storetest"
)

func bigEntry(i int) *store.AuditEntry {
	return &store.AuditEntry{Kind: store.AuditSignHash, User: "alice", Client: "rp",
		Hashes: []string{fmt.Sprintf("%064x", i)}, Outcome: store.AuditRefused, Reason: strings.Repeat("r", 2000)}
}

// TestWriteFailuresOnAFullFilesystem fills the real filesystem under a
// store: writes fail with store.ErrUnavailable wrapping ENOSPC and commit
// nothing, reads go on, Health reports the store not writable, concurrent
// batched writes are not retried one by one, and once space is back the
// store heals without a reopen and checks clean.
func TestWriteFailuresOnAFullFilesystem(t *testing.T) {
	dir := storetest.MountTmpfs(t, 4<<20)
	ctx := context.Background()
	var clock atomic.Int64
	clock.Store(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()) }
	db, err := bolt.Open(filepath.Join(dir, "signd.db"), bolt.Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(ctx, func(tx store.Tx) error {
		return tx.CreateUser(&store.User{ID: "id-alice", Username: "alice", Status: store.UserActive})
	}); err != nil {
		t.Fatal(err)
	}
	free := storetest.Fill(t, dir)

	// Writes that need new pages fail; those the file's free pages still
	// hold succeed, so write until one fails.
	var werr error
	written := 0
	for i := 0; i < 5000 && werr == nil; i++ {
		werr = db.Update(ctx, func(tx store.Tx) error { return tx.AppendAudit(bigEntry(i)) })
		if werr == nil {
			written++
		}
	}
	if werr == nil {
		t.Fatal("5000 writes on a full filesystem all succeeded")
	}
	if !errors.Is(werr, store.ErrUnavailable) || !errors.Is(werr, syscall.ENOSPC) {
		t.Fatalf("write error %v, want store.ErrUnavailable wrapping ENOSPC", werr)
	}
	if !strings.Contains(werr.Error(), dir) {
		t.Errorf("write error does not name the file: %v", werr)
	}

	// Reads go on, and the failed write left nothing.
	err = db.View(ctx, func(tx store.Tx) error {
		if _, err := tx.User("alice"); err != nil {
			return err
		}
		n, _, err := store.VerifyAudit(tx)
		if n != uint64(written) {
			t.Errorf("audit log holds %d entries, %d writes succeeded", n, written)
		}
		return err
	})
	if err != nil {
		t.Fatalf("read on a full filesystem: %v", err)
	}
	if err := db.Health(); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Health on a full filesystem: %v, want store.ErrUnavailable", err)
	}

	// Concurrent batched writes each fail once: a commit that cannot write
	// is not rerun function by function.
	const n = 8
	var calls atomic.Int32
	storetest.AtOnce(n, func(i int) {
		err := db.Batch(ctx, func(tx store.Tx) error {
			calls.Add(1)
			return tx.AppendAudit(bigEntry(10000 + i))
		})
		if !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("batched write on a full filesystem: %v", err)
		}
	})
	if got := calls.Load(); got != n {
		t.Errorf("batched functions ran %d times for %d failing writes", got, n)
	}

	// Space comes back: Health probes (at most once a second) and heals,
	// writes succeed, nothing is damaged.
	free()
	if err := db.Health(); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Health within the probe interval: %v, want the remembered failure", err)
	}
	clock.Add(int64(2 * time.Second))
	if err := db.Health(); err != nil {
		t.Errorf("Health with space back: %v", err)
	}
	if err := db.Update(ctx, func(tx store.Tx) error { return tx.AppendAudit(bigEntry(20000)) }); err != nil {
		t.Fatalf("write with space back: %v", err)
	}
	rep, err := db.Check(ctx)
	if err != nil || !rep.OK {
		t.Fatalf("check after the outage: %v %+v", err, rep)
	}
	if rep.AuditEntries != uint64(written+1) {
		t.Errorf("audit entries %d, want %d", rep.AuditEntries, written+1)
	}
}

// TestOpenOnAFullFilesystem: a store that needs no upgrade opens for
// reading on a full filesystem (Open writes only when the schema changes).
func TestOpenOnAFullFilesystem(t *testing.T) {
	dir := storetest.MountTmpfs(t, 1<<20)
	path := filepath.Join(dir, "signd.db")
	db, err := bolt.Open(path, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	storetest.Fill(t, dir)
	// Burn the file's own free pages too, so any commit would grow it.
	db, err = bolt.Open(path, bolt.Options{})
	if err != nil {
		t.Fatalf("Open on a full filesystem: %v", err)
	}
	defer db.Close()
	for i := 0; i < 5000; i++ {
		if db.Update(context.Background(), func(tx store.Tx) error { return tx.AppendAudit(bigEntry(i)) }) != nil {
			break
		}
	}
	db.Close()
	db, err = bolt.Open(path, bolt.Options{})
	if err != nil {
		t.Fatalf("reopen on a full filesystem: %v", err)
	}
	if err := db.View(context.Background(), func(tx store.Tx) error { _, err := tx.Users(); return err }); err != nil {
		t.Error(err)
	}
}
