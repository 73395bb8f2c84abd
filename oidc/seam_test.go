package oidc_test

import (
	"context"
	"errors"
	"testing"

	"github.com/signd/signd/oidc"
	"github.com/signd/signd/store"
	"github.com/signd/signd/store/storetest/backends"
)

// providerStore is s as the provider's endpoints see it.
func providerStore(s store.Store) *store.Scoped[oidc.Tx] {
	return store.Scope(s, func(tx store.Tx) oidc.Tx { return tx })
}

// keyRingStore is s as the KeyRing sees it.
func keyRingStore(s store.Store) *store.Scoped[oidc.KeyRingTx] {
	return store.Scope(s, func(tx store.Tx) oidc.KeyRingTx { return tx })
}

// TestStoreSeam: both backends serve the provider and the key ring through
// store.Scope.
func TestStoreSeam(t *testing.T) {
	backends.Each(t, func(t *testing.T, db store.Store) {
		var s oidc.Store = providerStore(db)
		err := s.View(context.Background(), func(tx oidc.Tx) error {
			_, err := tx.Proof("alice", "nope")
			return err
		})
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("View through oidc.Tx: %v, want ErrNotFound", err)
		}
		var k oidc.KeyRingStore = keyRingStore(db)
		err = k.Update(context.Background(), func(tx oidc.KeyRingTx) error {
			return tx.DeleteSigningKey("nope")
		})
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Update through oidc.KeyRingTx: %v, want ErrNotFound", err)
		}
	})
}
