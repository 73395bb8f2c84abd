package bolt

import (
	"bytes"
	"context"
	"fmt"

	"go.etcd.io/bbolt"

	"github.com/signd/signd/store"
	"github.com/signd/signd/store/kv"
)

// Secret returns the random key stored under name, creating it with size
// bytes from crypto/rand on first use. A stored key of another size is an
// error (the name is reused for something else).
func (db *DB) Secret(ctx context.Context, name string, size int) ([]byte, error) {
	if err := store.CheckSecretRequest(ctx, name, size); err != nil {
		return nil, err
	}
	var key []byte
	err := db.update(func(btx *bbolt.Tx) error {
		b := btx.Bucket([]byte(kv.BucketSecrets))
		if b == nil {
			return fmt.Errorf("store: bucket %s is missing", kv.BucketSecrets)
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
