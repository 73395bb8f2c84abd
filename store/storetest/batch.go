package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/signd/signd/store"
)

// Batcher is a store with Batch, what the CSC API asks of a store
// (csc.Store): a write transaction that may be shared with concurrent
// ones, whose function may run more than once.
type Batcher interface {
	store.Store
	Batch(ctx context.Context, fn func(store.Tx) error) error
}

// RunBatch runs the conformance tests of Batch against a fresh store per
// subtest.
func RunBatch(t *testing.T, open Opener) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s Batcher)
	}{
		{"ConsumeOnce", testBatchConsumeOnce},
		{"IsolatesFailures", testBatchIsolatesFailures},
		{"PanicReachesCaller", testBatchPanicReachesCaller},
		{"CanceledContext", testBatchCanceledContext},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.fn(t, open(t, nil)) })
	}
}

// testBatchConsumeOnce is the SAD pattern through Batch: of many
// concurrent consumers of one token, each appending an audit entry in the
// same transaction whatever happens, exactly one wins, every attempt is
// audited once, and the chain holds.
func testBatchConsumeOnce(t *testing.T, db Batcher) {
	ctx := context.Background()
	update(t, db, func(tx store.Tx) error {
		return tx.CreateToken(&store.Token{
			Hash: store.Fingerprint("sad"), Kind: store.TokenSAD, ClientID: "rp", Username: "alice",
			CredentialID: "c", Hashes: [][]byte{make([]byte, 32)}, ExpiresAt: time.Now().Add(time.Hour),
		})
	})
	const n = 50
	var wins atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range n {
		wg.Go(func() {
			<-start
			var won bool
			err := db.Batch(ctx, func(tx store.Tx) error {
				won = false // fn may run more than once
				outcome := store.AuditRefused
				if _, err := tx.Token(store.Fingerprint("sad")); err == nil {
					if err := tx.DeleteToken(store.Fingerprint("sad")); err != nil {
						return err
					}
					won, outcome = true, store.AuditGranted
				}
				return tx.AppendAudit(&store.AuditEntry{Kind: store.AuditSignHash, User: "alice", Outcome: outcome})
			})
			if err != nil {
				t.Error(err)
			}
			if won {
				wins.Add(1)
			}
		})
	}
	close(start)
	wg.Wait()
	if wins.Load() != 1 {
		t.Errorf("%d winners, want 1", wins.Load())
	}
	var count uint64
	granted := 0
	view(t, db, func(tx store.Tx) (err error) {
		if count, _, err = store.VerifyAudit(tx); err != nil {
			return err
		}
		return store.AuditEntries(tx, 1, func(e *store.AuditEntry) error {
			if e.Outcome == store.AuditGranted {
				granted++
			}
			return nil
		})
	})
	if count != n || granted != 1 {
		t.Errorf("%d entries (%d granted), want %d (1 granted)", count, granted, n)
	}
}

// testBatchIsolatesFailures: a function that fails does not fail the
// others it shared a transaction with, and none of its writes stay.
func testBatchIsolatesFailures(t *testing.T, db Batcher) {
	ctx := context.Background()
	boom := errors.New("boom")
	errs := make([]error, 40)
	AtOnce(len(errs), func(i int) {
		errs[i] = db.Batch(ctx, func(tx store.Tx) error {
			if err := tx.AppendAudit(&store.AuditEntry{Kind: store.AuditSignHash, User: fmt.Sprint(i), Outcome: store.AuditOK}); err != nil {
				return err
			}
			if i%4 == 0 {
				return boom
			}
			return nil
		})
	})
	users := map[string]bool{}
	view(t, db, func(tx store.Tx) error {
		if _, _, err := store.VerifyAudit(tx); err != nil {
			return err
		}
		return store.AuditEntries(tx, 1, func(e *store.AuditEntry) error {
			if users[e.User] {
				t.Errorf("user %s appended twice", e.User)
			}
			users[e.User] = true
			return nil
		})
	})
	for i, err := range errs {
		failing := i%4 == 0
		if failing != errors.Is(err, boom) || (!failing && err != nil) {
			t.Errorf("call %d: %v", i, err)
		}
		if users[fmt.Sprint(i)] == failing {
			t.Errorf("call %d (failing %v): entry stored %v", i, failing, users[fmt.Sprint(i)])
		}
	}
}

func testBatchPanicReachesCaller(t *testing.T, db Batcher) {
	defer func() {
		if v := recover(); v != "kaboom" {
			t.Errorf("recovered %v, want kaboom", v)
		}
		// The store is usable afterwards.
		if err := db.Batch(context.Background(), func(store.Tx) error { return nil }); err != nil {
			t.Error(err)
		}
	}()
	_ = db.Batch(context.Background(), func(store.Tx) error { panic("kaboom") })
	t.Error("Batch returned after a panic")
}

func testBatchCanceledContext(t *testing.T, db Batcher) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	called := false
	err := db.Batch(ctx, func(store.Tx) error { called = true; return nil })
	if !errors.Is(err, context.Canceled) || called {
		t.Errorf("Batch = %v, called %v", err, called)
	}
}

// Secrets is a store that keeps named random keys across the services'
// restarts (the CSC page-token MAC key).
type Secrets interface {
	Secret(ctx context.Context, name string, size int) ([]byte, error)
}

// RunSecrets checks Secret on a fresh store: a random key per name, the
// same key on every later call, refusals of a changed size, sizes out of
// 16–1024 bytes, an empty name and a canceled context. Whether keys
// survive a restart is the backend's own test.
func RunSecrets(t *testing.T, open Opener) {
	s := open(t, nil)
	ctx := context.Background()
	k1, err := s.Secret(ctx, "page", 32)
	if err != nil || len(k1) != 32 || bytes.Equal(k1, make([]byte, 32)) {
		t.Fatalf("Secret = %x, %v", k1, err)
	}
	again, err := s.Secret(ctx, "page", 32)
	if err != nil || !bytes.Equal(again, k1) {
		t.Errorf("second Secret(page) = %x, %v; want %x", again, err, k1)
	}
	again[0] ^= 0xff // the caller's copy
	if third, _ := s.Secret(ctx, "page", 32); !bytes.Equal(third, k1) {
		t.Errorf("changing a returned key changed the stored one: %x", third)
	}
	if k2, err := s.Secret(ctx, "other", 32); err != nil || bytes.Equal(k1, k2) {
		t.Errorf("Secret(other) = %x, %v; want another key", k2, err)
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		key  string
		size int
	}{
		{"size change", ctx, "page", 64},
		{"8 bytes", ctx, "tiny", 8},
		{"2048 bytes", ctx, "huge", 2048},
		{"no name", ctx, "", 32},
		{"canceled context", canceled, "new", 32},
	} {
		if k, err := s.Secret(tc.ctx, tc.key, tc.size); err == nil {
			t.Errorf("%s: Secret(%q, %d) = %x, want an error", tc.name, tc.key, tc.size, k)
		}
	}
}
