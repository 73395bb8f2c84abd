package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/signd/signd/store"
	"github.com/signd/signd/store/memory"
)

// countingBatch is a backend whose Batch is counted.
type countingBatch struct {
	*memory.DB
	batches int
}

func (c *countingBatch) Batch(ctx context.Context, fn func(store.Tx) error) error {
	c.batches++
	return c.DB.Batch(ctx, fn)
}

// noBatch is a backend without Batch.
type noBatch struct{ store.Store }

// TestScoped: a Scoped view runs its functions in the backend's View,
// Update and Batch (Update when the backend has no Batch), and each
// function sees the transaction through the narrower interface.
func TestScoped(t *testing.T) {
	ctx := context.Background()
	narrow := func(tx store.Tx) store.ClientTx { return tx }
	create := func(tx store.ClientTx) error {
		return tx.CreateClient(&store.Client{ID: "rp", Name: "RP", RedirectURIs: []string{"https://rp.example/cb"}, SecretHash: store.HashSecret("s")})
	}

	t.Run("View is read-only", func(t *testing.T) {
		s := store.Scope(memory.New(memory.Options{}), narrow)
		if err := s.View(ctx, create); !errors.Is(err, store.ErrReadOnly) {
			t.Errorf("write in View: %v, want ErrReadOnly", err)
		}
	})
	for _, tc := range []struct {
		name  string
		write func(*store.Scoped[store.ClientTx], context.Context, func(store.ClientTx) error) error
		batch bool // reaches the backend's Batch
	}{
		{"Update", (*store.Scoped[store.ClientTx]).Update, false},
		{"Batch", (*store.Scoped[store.ClientTx]).Batch, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, withBatch := range []bool{true, false} {
				db := &countingBatch{DB: memory.New(memory.Options{})}
				var backend store.Store = db
				if !withBatch {
					backend = noBatch{db}
				}
				s := store.Scope(backend, narrow)
				if err := tc.write(s, ctx, create); err != nil {
					t.Fatalf("backend with Batch %v: %v", withBatch, err)
				}
				if want := tc.batch && withBatch; (db.batches == 1) != want {
					t.Errorf("backend with Batch %v: Batch called %d times, want it %v", withBatch, db.batches, want)
				}
				err := s.View(ctx, func(tx store.ClientTx) error {
					_, err := tx.Client("rp")
					return err
				})
				if err != nil {
					t.Errorf("backend with Batch %v: the write did not commit: %v", withBatch, err)
				}
			}
		})
	}
	t.Run("ViewAs", func(t *testing.T) {
		s := store.Scope(memory.New(memory.Options{}), func(tx store.Tx) store.ClientTx { return tx })
		if err := s.Update(ctx, create); err != nil {
			t.Fatal(err)
		}
		v := store.ViewAs(s, func(tx store.ClientTx) store.ClientReader { return tx })
		err := v.View(ctx, func(tx store.ClientReader) error {
			_, err := tx.Client("rp")
			return err
		})
		if err != nil {
			t.Error(err)
		}
	})
}

// BenchmarkScoped compares a read transaction through a Scoped view with
// one on the backend itself: the cost of the seam.
func BenchmarkScoped(b *testing.B) {
	ctx := context.Background()
	db := memory.New(memory.Options{})
	defer db.Close()
	lookup := func(tx store.ClientReader) error {
		_, err := tx.Client("rp")
		return err
	}
	b.Run("backend", func(b *testing.B) {
		for b.Loop() {
			_ = db.View(ctx, func(tx store.Tx) error { return lookup(tx) })
		}
	})
	b.Run("scoped", func(b *testing.B) {
		s := store.Scope(db, func(tx store.Tx) store.ClientReader { return tx })
		for b.Loop() {
			_ = s.View(ctx, lookup)
		}
	})
}
