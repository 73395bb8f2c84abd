package checkpointtest

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/signd/signd/store"
)

// auditBucket is the bbolt bucket of the audit log (store/kv): the
// sequence number as 8 bytes big-endian → the entry's stored encoding.
const auditBucket = "audit"

func key(seq uint64) []byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], seq)
	return k[:]
}

// update opens the bbolt file at path directly and runs fn on its audit
// bucket in one write transaction.
func update(t testing.TB, path string, fn func(b *bbolt.Bucket) error) {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("open %s with bbolt: %v", path, err)
	}
	defer db.Close()
	if err := db.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(auditBucket))
		if b == nil {
			return fmt.Errorf("no %q bucket", auditBucket)
		}
		return fn(b)
	}); err != nil {
		t.Fatalf("tamper with %s: %v", path, err)
	}
}

// Truncate deletes every audit entry after entry keep. It returns how
// many it deleted.
func Truncate(t testing.TB, path string, keep uint64) int {
	t.Helper()
	n := 0
	update(t, path, func(b *bbolt.Bucket) error {
		var doomed [][]byte
		c := b.Cursor()
		for k, _ := c.Seek(key(keep + 1)); k != nil; k, _ = c.Next() {
			doomed = append(doomed, append([]byte(nil), k...))
		}
		for _, k := range doomed {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		n = len(doomed)
		return nil
	})
	return n
}

// Rewrite changes audit entry seq with change and seals it and every
// entry after it again (store.SealAudit), so that the chain holds from
// the first entry to the last: only a digest kept from before shows it.
func Rewrite(t testing.TB, path string, seq uint64, change func(e *store.AuditEntry)) {
	t.Helper()
	update(t, path, func(b *bbolt.Bucket) error {
		prev := store.AuditGenesis()
		if seq > 1 {
			e, err := store.DecodeAuditEntry(b.Get(key(seq - 1)))
			if err != nil {
				return fmt.Errorf("entry %d: %w", seq-1, err)
			}
			prev = e.Digest
		}
		type rec struct {
			seq uint64
			raw []byte
		}
		var recs []rec
		c := b.Cursor()
		for k, v := c.Seek(key(seq)); k != nil; k, v = c.Next() {
			recs = append(recs, rec{binary.BigEndian.Uint64(k), append([]byte(nil), v...)})
		}
		if len(recs) == 0 || recs[0].seq != seq {
			return fmt.Errorf("no entry %d", seq)
		}
		for i, r := range recs {
			e, err := store.DecodeAuditEntry(r.raw)
			if err != nil {
				return fmt.Errorf("entry %d: %w", r.seq, err)
			}
			if i == 0 {
				change(e)
			}
			raw, err := store.SealAudit(e, r.seq, prev)
			if err != nil {
				return fmt.Errorf("seal entry %d: %w", r.seq, err)
			}
			if err := b.Put(key(r.seq), raw); err != nil {
				return err
			}
			prev = e.Digest
		}
		return nil
	})
}
