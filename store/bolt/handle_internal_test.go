package bolt

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/signd/signd/store"
)

// TestPoisonedHandleIsReopened: when bbolt's handle becomes unusable (as
// after a failed remap while growing, which leaves it unmapped), the next
// transaction reopens the file instead of failing for ever; data survives.
func TestPoisonedHandleIsReopened(t *testing.T) {
	ctx := context.Background()
	var logs bytes.Buffer
	db, err := Open(filepath.Join(t.TempDir(), "signd.db"), Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	create := func(name string) error {
		return db.Update(ctx, func(tx store.Tx) error {
			return tx.CreateUser(&store.User{ID: "id-" + name, Username: name, Status: store.UserActive})
		})
	}
	if err := create("alice"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		op   func() error
	}{
		{"read", func() error {
			return db.View(ctx, func(tx store.Tx) error { _, err := tx.User("alice"); return err })
		}},
		{"write", func() error { return create("bob") }},
		{"batch", func() error {
			return db.Batch(ctx, func(tx store.Tx) error {
				return tx.CreateUser(&store.User{ID: "id-carol", Username: "carol", Status: store.UserActive})
			})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Poison the handle under the DB's feet.
			if err := db.db.Close(); err != nil {
				t.Fatal(err)
			}
			if err := tt.op(); err != nil {
				t.Fatalf("%s after the handle became unusable: %v", tt.name, err)
			}
			if err := db.Health(); err != nil {
				t.Errorf("Health: %v", err)
			}
		})
	}
	if !strings.Contains(logs.String(), "reopened") {
		t.Errorf("the reopen was not logged:\n%s", logs.String())
	}
	// A closed DB is not reopened.
	db.Close()
	if err := db.View(ctx, func(store.Tx) error { return nil }); err == nil {
		t.Error("View on a closed DB succeeded")
	}
	if errors.Is(db.Health(), store.ErrCorrupt) {
		t.Error("a closed DB reported damage")
	}
}
