package bolt

import (
	"bytes"
	"context"
	"fmt"

	"go.etcd.io/bbolt"

	"github.com/signd/signd/store"
)

// bucketSecrets holds named random keys the services need across restarts
// (the CSC page-token MAC key): name → raw key bytes. They are as safe as
// the file, which is 0600 and already holds everything else.
const bucketSecrets = "secrets"

// Secret returns the random key stored under name, creating it with size
// bytes from crypto/rand on first use. A stored key of another size is an
// error (the name is reused for something else).
func (db *DB) Secret(ctx context.Context, name string, size int) ([]byte, error) {
	if err := store.CheckSecretRequest(ctx, name, size); err != nil {
		return nil, err
	}
	var key []byte
	err := db.update(func(btx *bbolt.Tx) error {
		b := btx.Bucket([]byte(bucketSecrets))
		if b == nil {
			return fmt.Errorf("store: bucket %s is missing", bucketSecrets)
		}
		v := b.Get([]byte(name))
		var created bool
		var err error
		if key, created, err = store.SecretKey(name, size, v, v != nil); err != nil || !created {
			return err
		}
		return b.Put([]byte(name), bytes.Clone(key))
	})
	if err != nil {
		return nil, err
	}
	return key, nil
}
