package bolt

import (
	"context"

	"go.etcd.io/bbolt"

	"github.com/signd/signd/store"
	"github.com/signd/signd/store/kv"
)

// Secret returns the random key stored under name, creating it with size
// bytes from crypto/rand on first use. A stored key of another size is an
// error (the name is reused for something else). The keys are as safe as
// the file, which is 0600 and already holds everything else.
func (db *DB) Secret(ctx context.Context, name string, size int) ([]byte, error) {
	if err := store.CheckSecretRequest(ctx, name, size); err != nil {
		return nil, err
	}
	var key []byte
	err := db.update(func(btx *bbolt.Tx) error {
		var err error
		key, err = kv.NewTx(boltTx{btx}, db.now).Secret(name, size)
		return err
	})
	if err != nil {
		return nil, err
	}
	return key, nil
}
