package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/signd/signd/store"
	"github.com/signd/signd/store/etcd"
)

// TestCacheReadAfterWrite: what a node committed is seen by a transaction
// that another node starts after the commit returned, though that node
// reads its watch cache: a SAD created through a is consumed through b at
// once, and a token revoked through b is refused by a at once. 200 rounds
// in parallel goroutines; the watch is always a little behind the commit,
// so without the barrier some round reads a stale cache.
func TestCacheReadAfterWrite(t *testing.T) {
	prefix := server.Prefix()
	a := open(t, etcd.Options{Prefix: prefix})
	b := open(t, etcd.Options{Prefix: prefix})
	ctx := context.Background()
	const rounds, workers = 200, 8
	var wg sync.WaitGroup
	errs := make(chan error, rounds)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < rounds; i += workers {
				if err := readAfterWrite(ctx, a, b, i); err != nil {
					errs <- fmt.Errorf("round %d: %w", i, err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// readAfterWrite creates a SAD through a and consumes it through b, then
// creates a token through b, revokes it through a and looks it up
// through b.
func readAfterWrite(ctx context.Context, a, b *etcd.DB, i int) error {
	exp := time.Now().Add(time.Hour)
	sad := store.Fingerprint(fmt.Sprint("sad-", i))
	err := a.Update(ctx, func(tx store.Tx) error {
		return tx.CreateToken(&store.Token{Hash: sad, Kind: store.TokenSAD, ClientID: "rp", Username: "alice",
			CredentialID: "cred-1", Hashes: [][]byte{make([]byte, 32)}, ExpiresAt: exp})
	})
	if err != nil {
		return err
	}
	err = b.Batch(ctx, func(tx store.Tx) error {
		if _, err := tx.Token(sad); err != nil {
			return err
		}
		return tx.DeleteToken(sad)
	})
	if err != nil {
		return fmt.Errorf("consuming through b the SAD created through a: %w", err)
	}
	access := store.Fingerprint(fmt.Sprint("access-", i))
	err = b.Update(ctx, func(tx store.Tx) error {
		return tx.CreateToken(&store.Token{Hash: access, Kind: store.TokenAccess, ClientID: "rp", Username: "alice",
			Scopes: []string{"service"}, ExpiresAt: exp})
	})
	if err != nil {
		return err
	}
	if err := a.Update(ctx, func(tx store.Tx) error { return tx.DeleteToken(access) }); err != nil {
		return err
	}
	err = b.View(ctx, func(tx store.Tx) error { _, err := tx.Token(access); return err })
	if !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("b reads the token a revoked: %v", err)
	}
	return nil
}
