package kv

import (
	"bytes"
	"context"

	"github.com/signd/signd/store"
)

// Secret is a backend's Secret over kv.Tx: the random key stored under
// name, created in an Update of s on first use (Tx.Secret). Every backend
// has the same contract (store.CheckSecretRequest, store.SecretKey).
func Secret(ctx context.Context, s store.Store, name string, size int) ([]byte, error) {
	if err := store.CheckSecretRequest(ctx, name, size); err != nil {
		return nil, err
	}
	var key []byte
	err := s.Update(ctx, func(tx store.Tx) error {
		var err error
		key, err = tx.(*Tx).Secret(name, size)
		return err
	})
	if err != nil {
		return nil, err
	}
	return key, nil
}

// Secret returns the random key stored under name in the secrets bucket,
// creating it with size bytes from crypto/rand on first use
// (store.SecretKey). A stored key of another size is an error (the name is
// reused for something else).
func (t *Tx) Secret(name string, size int) ([]byte, error) {
	b, err := t.bucket(BucketSecrets)
	if err != nil {
		return nil, err
	}
	v := b.Get([]byte(name))
	key, created, err := store.SecretKey(name, size, v, v != nil)
	if err != nil || !created {
		return key, err
	}
	// The backend keeps a reference to the value until commit.
	return key, b.Put([]byte(name), bytes.Clone(key))
}
