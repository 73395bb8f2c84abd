package oauth_test

import (
	"context"
	"errors"
	"testing"

	"github.com/signd/signd/oauth"
	"github.com/signd/signd/oauth/oauthtest"
	"github.com/signd/signd/store"
	"github.com/signd/signd/store/storetest/backends"
)

// bearerStore is s as RequireBearer sees it.
func bearerStore(s store.Store) *store.Scoped[oauth.BearerTx] {
	return store.Scope(s, func(tx store.Tx) oauth.BearerTx { return tx })
}

// TestStoreSeam: both backends serve the authorization server and the
// bearer middleware through store.Scope.
func TestStoreSeam(t *testing.T) {
	backends.Each(t, func(t *testing.T, db store.Store) {
		var s oauth.Store = oauthtest.Store(db)
		err := s.Update(context.Background(), func(tx oauth.Tx) error {
			_, err := tx.Code(make([]byte, 32))
			return err
		})
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Update through oauth.Tx: %v, want ErrNotFound", err)
		}
		var b oauth.BearerStore = bearerStore(db)
		err = b.View(context.Background(), func(tx oauth.BearerTx) error {
			_, err := tx.Token(make([]byte, 32))
			return err
		})
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("View through oauth.BearerTx: %v, want ErrNotFound", err)
		}
	})
}

// credentialStore is s as csc.CredentialProfile sees it.
func credentialStore(s store.Store) *store.Scoped[store.CredentialReader] {
	return store.Scope(s, func(tx store.Tx) store.CredentialReader { return tx })
}
