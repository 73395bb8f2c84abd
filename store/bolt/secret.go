package bolt

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"

	"go.etcd.io/bbolt"
)

// bucketSecrets holds named random keys the services need across restarts
// (the CSC page-token MAC key): name → raw key bytes. They are as safe as
// the file, which is 0600 and already holds everything else.
const bucketSecrets = "secrets"

// Secret returns the random key stored under name, creating it with size
// bytes from crypto/rand on first use. A stored key of another size is an
// error (the name is reused for something else).
func (db *DB) Secret(ctx context.Context, name string, size int) ([]byte, error) {
	if name == "" || size < 16 || size > 1024 {
		return nil, fmt.Errorf("store: secret %q: size %d (name required, 16 to 1024 bytes)", name, size)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var key []byte
	err := db.update(func(btx *bbolt.Tx) error {
		b := btx.Bucket([]byte(bucketSecrets))
		if b == nil {
			return fmt.Errorf("store: bucket %s is missing", bucketSecrets)
		}
		if v := b.Get([]byte(name)); v != nil {
			if len(v) != size {
				return fmt.Errorf("store: secret %q is %d bytes, want %d", name, len(v), size)
			}
			key = bytes.Clone(v)
			return nil
		}
		key = make([]byte, size)
		if _, err := rand.Read(key); err != nil {
			return fmt.Errorf("store: secret %q: %w", name, err)
		}
		return b.Put([]byte(name), bytes.Clone(key))
	})
	if err != nil {
		return nil, err
	}
	return key, nil
}
