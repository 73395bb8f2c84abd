package bolt

import (
	"path/filepath"
	"testing"

	"go.etcd.io/bbolt"

	"github.com/signd/signd/store/kv"
)

// The adapters of kvtx.go are one pointer each: looking a bucket up and
// reading a key through kv.Backend allocates no more than bbolt itself.
func TestKVAdapterAllocations(t *testing.T) {
	db, err := bbolt.Open(filepath.Join(t.TempDir(), "kv.db"), fileMode, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	key := []byte("k")
	err = db.Update(func(btx *bbolt.Tx) error {
		b, err := btx.CreateBucket([]byte("b"))
		if err != nil {
			return err
		}
		return b.Put(key, []byte("v"))
	})
	if err != nil {
		t.Fatal(err)
	}
	err = db.View(func(btx *bbolt.Tx) error {
		direct := testing.AllocsPerRun(100, func() { _ = btx.Bucket([]byte("b")).Get(key) })
		var backend kv.Backend = boltTx{btx}
		adapted := testing.AllocsPerRun(100, func() {
			if backend.Bucket("b").Get(key) == nil {
				t.Fatal("value missing")
			}
		})
		if adapted > direct {
			t.Errorf("Bucket+Get through kv.Backend: %v allocs, bbolt's own: %v", adapted, direct)
		}
		if backend.Bucket("missing") != nil {
			t.Error("a missing bucket is not a nil kv.Bucket")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
