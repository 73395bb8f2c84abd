package bolt

import (
	"bytes"

	"go.etcd.io/bbolt"

	"github.com/signd/signd/store"
	"github.com/signd/signd/store/kv"
)

// boltTx is a bbolt transaction as a kv.Backend. It and boltBucket are one
// pointer each, so handing them out as interfaces allocates nothing.
type boltTx struct{ *bbolt.Tx }

// Writable returns store.ErrReadOnly inside View.
func (t boltTx) Writable() error {
	if !t.Tx.Writable() {
		return store.ErrReadOnly
	}
	return nil
}

// Bucket returns the bucket Open created, or nil (a corrupt file).
func (t boltTx) Bucket(name string) kv.Bucket {
	b := t.Tx.Bucket([]byte(name))
	if b == nil {
		return nil
	}
	return boltBucket{b}
}

// boltBucket is a bbolt bucket as a kv.Bucket: Get, Put, Delete and
// ForEach are bbolt's own.
type boltBucket struct{ *bbolt.Bucket }

// Cursor returns bbolt's cursor, which is a kv.Cursor as it is.
func (b boltBucket) Cursor() kv.Cursor { return b.Bucket.Cursor() }

// Last returns the last entry through a cursor that stays on the stack.
func (b boltBucket) Last() ([]byte, []byte) { return b.Bucket.Cursor().Last() }

// AuditBuckets lists the buckets "audit.<chain>" of the file that hold a
// key (kv.AuditBucketLister). signd never makes one in a bbolt file, whose
// audit log is chain "" alone; verification reports one that is there.
func (t boltTx) AuditBuckets() ([]string, error) {
	var names []string
	err := t.Tx.ForEach(func(name []byte, b *bbolt.Bucket) error {
		if bytes.HasPrefix(name, []byte("audit.")) {
			if k, _ := b.Cursor().First(); k != nil {
				names = append(names, string(name))
			}
		}
		return nil
	})
	return names, err
}
