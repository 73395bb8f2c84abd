package memory_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/signd/signd/store"
	"github.com/signd/signd/store/memory"
	"github.com/signd/signd/store/storetest"
	"github.com/signd/signd/store/storetest/backends"
)

// conformance opens the suites' stores.
func conformance(t *testing.T, now func() time.Time) storetest.Full {
	return backends.Memory(t, memory.Options{Now: now})
}

func TestConformance(t *testing.T)       { storetest.Run(t, conformance) }
func TestConformanceClock(t *testing.T)  { storetest.RunClock(t, conformance) }
func TestBatchConformance(t *testing.T)  { storetest.RunBatch(t, conformance) }
func TestSecretConformance(t *testing.T) { storetest.RunSecrets(t, conformance) }

// TestTxAfterEnd: a Tx kept past its function cannot write, neither to the
// snapshot its Update committed nor to the one its View read.
func TestTxAfterEnd(t *testing.T) {
	db := backends.Memory(t, memory.Options{})
	ctx := context.Background()
	user := func(name string) *store.User {
		return &store.User{ID: "id-" + name, Username: name, Status: store.UserActive}
	}
	var fromUpdate, fromView, fromFailed store.Tx
	if err := db.Update(ctx, func(tx store.Tx) error { fromUpdate = tx; return tx.CreateUser(user("alice")) }); err != nil {
		t.Fatal(err)
	}
	if err := db.View(ctx, func(tx store.Tx) error { fromView = tx; return nil }); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	if err := db.Update(ctx, func(tx store.Tx) error { fromFailed = tx; return boom }); !errors.Is(err, boom) {
		t.Fatal(err)
	}
	for name, tx := range map[string]store.Tx{"Update": fromUpdate, "View": fromView, "failed Update": fromFailed} {
		if err := tx.CreateUser(user("mallory")); !errors.Is(err, memory.ErrTxDone) {
			t.Errorf("CreateUser on the Tx of an ended %s = %v, want ErrTxDone", name, err)
		}
		if _, err := tx.RevokeUser("alice"); !errors.Is(err, memory.ErrTxDone) {
			t.Errorf("RevokeUser on the Tx of an ended %s = %v, want ErrTxDone", name, err)
		}
	}
	err := db.View(ctx, func(tx store.Tx) error {
		users, err := tx.Users()
		if err == nil && (len(users) != 1 || users[0].Username != "alice") {
			t.Errorf("users %+v, want alice alone", users)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestClosed: after Close every entry point fails with ErrClosed without
// calling fn, and Close again succeeds.
func TestClosed(t *testing.T) {
	db := memory.New(memory.Options{})
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	fn := func(store.Tx) error { t.Error("fn ran after Close"); return nil }
	for name, call := range map[string]func() error{
		"View":   func() error { return db.View(ctx, fn) },
		"Update": func() error { return db.Update(ctx, fn) },
		"Batch":  func() error { return db.Batch(ctx, fn) },
		"Secret": func() error { _, err := db.Secret(ctx, "page", 32); return err },
	} {
		if err := call(); !errors.Is(err, memory.ErrClosed) {
			t.Errorf("%s after Close = %v, want ErrClosed", name, err)
		}
	}
	if err := db.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}
