package bolt_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/signd/signd/store"
	"github.com/signd/signd/store/bolt"
)

// TestBatchConsumeOnce is the SAD pattern through Batch: of many
// concurrent consumers of one token, each appending an audit entry in the
// same transaction whatever happens, exactly one wins, every attempt is
// audited once, and the chain holds.
func TestBatchConsumeOnce(t *testing.T) {
	db := mustOpen(t, bolt.Options{})
	ctx := context.Background()
	err := db.Update(ctx, func(tx store.Tx) error {
		return tx.CreateToken(&store.Token{
			Hash: store.Fingerprint("sad"), Kind: store.TokenSAD, ClientID: "rp", Username: "alice",
			CredentialID: "c", Hashes: [][]byte{make([]byte, 32)}, ExpiresAt: time.Now().Add(time.Hour),
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	const n = 50
	var wins atomic.Int32
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
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
	wg.Wait()
	if wins.Load() != 1 {
		t.Errorf("%d winners, want 1", wins.Load())
	}
	var count uint64
	granted := 0
	err = db.View(ctx, func(tx store.Tx) (err error) {
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
	if err != nil {
		t.Fatal(err)
	}
	if count != n || granted != 1 {
		t.Errorf("%d entries (%d granted), want %d (1 granted)", count, granted, n)
	}
}

// TestBatchIsolatesFailures: a function that fails does not fail the
// others it shared a transaction with, and none of its writes stay.
func TestBatchIsolatesFailures(t *testing.T) {
	db := mustOpen(t, bolt.Options{})
	ctx := context.Background()
	boom := errors.New("boom")
	const n = 40
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
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
	}
	wg.Wait()
	users := map[string]bool{}
	err := db.View(ctx, func(tx store.Tx) error {
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
	if err != nil {
		t.Fatal(err)
	}
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

func TestBatchPanicReachesCaller(t *testing.T) {
	db := mustOpen(t, bolt.Options{})
	defer func() {
		if v := recover(); v != "kaboom" {
			t.Errorf("recovered %v, want kaboom", v)
		}
		// The batcher is usable afterwards.
		if err := db.Batch(context.Background(), func(store.Tx) error { return nil }); err != nil {
			t.Error(err)
		}
	}()
	_ = db.Batch(context.Background(), func(store.Tx) error { panic("kaboom") })
	t.Error("Batch returned after a panic")
}

func TestBatchCanceledContext(t *testing.T) {
	db := mustOpen(t, bolt.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	called := false
	err := db.Batch(ctx, func(store.Tx) error { called = true; return nil })
	if !errors.Is(err, context.Canceled) || called {
		t.Errorf("Batch = %v, called %v", err, called)
	}
}

func TestSecret(t *testing.T) {
	path := filepath.Join(t.TempDir(), "signd.db")
	db, err := bolt.Open(path, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	k1, err := db.Secret(ctx, "page", 32)
	if err != nil || len(k1) != 32 || bytes.Equal(k1, make([]byte, 32)) {
		t.Fatalf("Secret = %x, %v", k1, err)
	}
	k2, _ := db.Secret(ctx, "other", 32)
	if bytes.Equal(k1, k2) {
		t.Error("two names gave the same key")
	}
	if _, err := db.Secret(ctx, "page", 64); err == nil {
		t.Error("size change accepted")
	}
	if _, err := db.Secret(ctx, "tiny", 8); err == nil {
		t.Error("8-byte secret accepted")
	}
	db.Close()
	// It survives a restart.
	db, err = bolt.Open(path, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	again, err := db.Secret(ctx, "page", 32)
	if err != nil || !bytes.Equal(again, k1) {
		t.Errorf("after reopen: %x, %v; want %x", again, err, k1)
	}
}

// TestAuditTamper flips one byte of one stored entry, with bbolt directly
// as an intruder with the file would, and VerifyAudit names that entry.
func TestAuditTamper(t *testing.T) {
	for _, flip := range []struct {
		name string
		at   func(raw []byte) int // index of the byte to change
	}{
		{"user name", func(raw []byte) int { return bytes.Index(raw, []byte(`"user":"`)) + len(`"user":"`) }},
		{"digest", func(raw []byte) int { return bytes.Index(raw, []byte(`"digest":"`)) + len(`"digest":"`) + 5 }},
		{"prev", func(raw []byte) int { return bytes.Index(raw, []byte(`"prev":"`)) + len(`"prev":"`) }},
		{"structure", func(raw []byte) int { return 0 }},
		{"time", func(raw []byte) int { return bytes.Index(raw, []byte(`"time":"`)) + len(`"time":"`) + 3 }},
	} {
		t.Run(flip.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "signd.db")
			db, err := bolt.Open(path, bolt.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for i := range 5 {
				err := db.Update(context.Background(), func(tx store.Tx) error {
					return tx.AppendAudit(&store.AuditEntry{Kind: store.AuditSignHash, User: fmt.Sprintf("user%d", i), Outcome: store.AuditOK})
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			db.Close()

			raw, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			err = raw.Update(func(btx *bbolt.Tx) error {
				b := btx.Bucket([]byte("audit"))
				key := []byte{0, 0, 0, 0, 0, 0, 0, 3}
				v := bytes.Clone(b.Get(key))
				v[flip.at(v)] ^= 0x01
				return b.Put(key, v)
			})
			raw.Close()
			if err != nil {
				t.Fatal(err)
			}

			db, err = bolt.Open(path, bolt.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			err = db.View(context.Background(), func(tx store.Tx) error {
				_, _, err := store.VerifyAudit(tx)
				return err
			})
			var be *store.AuditBrokenError
			if !errors.As(err, &be) || be.Seq != 3 {
				t.Fatalf("VerifyAudit = %v, want broken at entry 3", err)
			}
		})
	}
}
