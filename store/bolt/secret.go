package bolt

import (
	"context"

	"github.com/signd/signd/store/kv"
)

// Secret returns the random key stored under name, creating it with size
// bytes from crypto/rand on first use (kv.Secret). A stored key of another
// size is an error (the name is reused for something else). The keys are
// as safe as the file, which is 0600 and already holds everything else.
func (db *DB) Secret(ctx context.Context, name string, size int) ([]byte, error) {
	return kv.Secret(ctx, db, name, size)
}
