package kv

import (
	"bytes"

	"github.com/signd/signd/store"
)

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
