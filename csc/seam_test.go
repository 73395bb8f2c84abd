package csc_test

import (
	"context"
	"errors"
	"testing"

	"github.com/signd/signd/csc"
	"github.com/signd/signd/store"
	"github.com/signd/signd/store/storetest/backends"
)

// cscStore is s as the CSC API sees it.
func cscStore(s store.Store) *store.Scoped[csc.Tx] {
	return store.Scope(s, func(tx store.Tx) csc.Tx { return tx })
}

// credentialStore is s as csc.CredentialProfile sees it.
func credentialStore(s store.Store) *store.Scoped[store.CredentialReader] {
	return store.Scope(s, func(tx store.Tx) store.CredentialReader { return tx })
}

// TestStoreSeam: both backends serve the CSC API and the credential
// profile through store.Scope, Batch included.
func TestStoreSeam(t *testing.T) {
	backends.Each(t, func(t *testing.T, db store.Store) {
		var s csc.Store = cscStore(db)
		err := s.Batch(context.Background(), func(tx csc.Tx) error {
			return tx.DeleteToken(make([]byte, 32))
		})
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Batch through csc.Tx: %v, want ErrNotFound", err)
		}
		var p csc.CredentialStore = credentialStore(db)
		err = p.View(context.Background(), func(tx store.CredentialReader) error {
			_, err := tx.Credential("nope")
			return err
		})
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("View through store.CredentialReader: %v, want ErrNotFound", err)
		}
	})
}
