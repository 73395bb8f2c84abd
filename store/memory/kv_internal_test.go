package memory

import (
	"testing"

	"github.com/signd/signd/store/kv"
)

// TestPutCopies: a bucket keeps copies of what Put was given (the
// kv.Bucket contract), so a caller reusing its key or value buffer after
// the commit changes nothing stored.
func TestPutCopies(t *testing.T) {
	db := New(Options{})
	defer db.Close()
	work := db.committed.Load().clone()
	key, val := []byte("k1"), []byte("v1")
	w := &txn{s: work, writable: true}
	if err := w.Bucket(kv.BucketMeta).Put(key, val); err != nil {
		t.Fatal(err)
	}
	w.done = true
	db.committed.Store(&work)
	copy(key, "k2")
	copy(val, "v2")

	b := (&txn{s: *db.committed.Load()}).Bucket(kv.BucketMeta)
	if got := b.Get([]byte("k1")); string(got) != "v1" {
		t.Errorf("k1 = %q after the caller reused its buffers, want v1", got)
	}
	if got := b.Get([]byte("k2")); got != nil {
		t.Errorf("k2 = %q, want absent", got)
	}
}
