package csc_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/signd/signd/csc"
	"github.com/signd/signd/oauth"
	"github.com/signd/signd/store"
	"github.com/signd/signd/store/bolt"
	"github.com/signd/signd/store/memory"
)

// cscStore is s as the CSC API sees it.
func cscStore(s store.Store) *store.Scoped[csc.Tx] {
	return store.Scope(s, func(tx store.Tx) csc.Tx { return tx })
}

// credentialStore is s as csc.CredentialProfile sees it.
func credentialStore(s store.Store) *store.Scoped[store.CredentialReader] {
	return store.Scope(s, func(tx store.Tx) store.CredentialReader { return tx })
}

// oauthStore is s as the authorization server sees it.
func oauthStore(s store.Store) *store.Scoped[oauth.Tx] {
	return store.Scope(s, func(tx store.Tx) oauth.Tx { return tx })
}

// TestStoreSeam: both backends serve the CSC API and the credential
// profile through store.Scope, Batch included.
func TestStoreSeam(t *testing.T) {
	for _, tc := range []struct {
		name string
		open func(t *testing.T) store.Store
	}{
		{"bolt", func(t *testing.T) store.Store {
			db, err := bolt.Open(filepath.Join(t.TempDir(), "signd.db"), bolt.Options{})
			if err != nil {
				t.Fatal(err)
			}
			return db
		}},
		{"memory", func(*testing.T) store.Store { return memory.New(memory.Options{}) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := tc.open(t)
			t.Cleanup(func() { db.Close() })
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
}
