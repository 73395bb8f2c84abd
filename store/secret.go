package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
)

// The named secrets of a backend (Secret(ctx, name, size)): random keys the
// services need across restarts, such as the CSC page-token MAC key. Every
// backend keeps the same contract with these two rules.

// CheckSecretRequest refuses a Secret call without a name or with a size
// outside 16 to 1024 bytes, then one whose context is done.
func CheckSecretRequest(ctx context.Context, name string, size int) error {
	if name == "" || size < 16 || size > 1024 {
		return fmt.Errorf("store: secret %q: size %d (name required, 16 to 1024 bytes)", name, size)
	}
	return ctx.Err()
}

// SecretKey returns the key of a Secret call: a copy of stored when the
// backend found one (an error when its size is not size: the name is reused
// for something else), else a new key of size bytes from crypto/rand, which
// the backend stores when created is true.
func SecretKey(name string, size int, stored []byte, found bool) (key []byte, created bool, err error) {
	if found {
		if len(stored) != size {
			return nil, false, fmt.Errorf("store: secret %q is %d bytes, want %d", name, len(stored), size)
		}
		return bytes.Clone(stored), false, nil
	}
	key = make([]byte, size)
	if _, err := rand.Read(key); err != nil {
		return nil, false, fmt.Errorf("store: secret %q: %w", name, err)
	}
	return key, true, nil
}
