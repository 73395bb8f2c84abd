package bolt_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"go.etcd.io/bbolt"

	"github.com/signd/signd/store"
	"github.com/signd/signd/store/bolt"
	"github.com/signd/signd/store/bolt/bolttest"
	"github.com/signd/signd/store/storetest"
)

// The Batch tests and the generic Secret tests are storetest's RunBatch and
// RunSecrets, which memory passes too; what is bolt's own stays here.

func TestBatchConformance(t *testing.T)  { storetest.RunBatch(t, conformance) }
func TestSecretConformance(t *testing.T) { storetest.RunSecrets(t, conformance) }

// TestSecretSurvivesReopen: a key is kept in the file.
func TestSecretSurvivesReopen(t *testing.T) {
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
	db.Close()
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

			bolttest.Update(t, path, func(btx *bbolt.Tx) error {
				b := btx.Bucket([]byte("audit"))
				key := []byte{0, 0, 0, 0, 0, 0, 0, 3}
				v := bytes.Clone(b.Get(key))
				v[flip.at(v)] ^= 0x01
				return b.Put(key, v)
			})

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
