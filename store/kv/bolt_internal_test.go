package kv

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/signd/signd/store"
)

// testDB is a bbolt file with every bucket of BucketNames: the record
// code's tests run over the embedded backend's own key-value store.
type testDB struct {
	db  *bbolt.DB
	now func() time.Time
}

func openTestDB(tb testing.TB, now func() time.Time) *testDB {
	tb.Helper()
	if now == nil {
		now = time.Now
	}
	db, err := bbolt.Open(filepath.Join(tb.TempDir(), "signd.db"), 0o600, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = db.Close() })
	err = db.Update(func(btx *bbolt.Tx) error {
		for _, name := range BucketNames() {
			if _, err := btx.CreateBucket([]byte(name)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return &testDB{db: db, now: now}
}

// Update runs fn in one write transaction, committed if fn returns nil.
func (d *testDB) Update(_ context.Context, fn func(store.Tx) error) error {
	return d.db.Update(func(btx *bbolt.Tx) error { return fn(NewTx(testBolt{btx}, d.now)) })
}

// testBolt and testBucket adapt bbolt as store/bolt does.
type testBolt struct{ *bbolt.Tx }

func (t testBolt) Writable() error {
	if !t.Tx.Writable() {
		return store.ErrReadOnly
	}
	return nil
}

func (t testBolt) Bucket(name string) Bucket {
	if b := t.Tx.Bucket([]byte(name)); b != nil {
		return testBucket{b}
	}
	return nil
}

type testBucket struct{ *bbolt.Bucket }

func (b testBucket) Cursor() Cursor { return b.Bucket.Cursor() }

func (b testBucket) Last() ([]byte, []byte) { return b.Bucket.Cursor().Last() }

// Reading through Backend and Bucket allocates no more than bbolt itself:
// the key is converted in the transaction's scratch buffer (a conversion
// passed to an interface method would escape), and the audit head is found
// without handing a cursor out through an interface.
func TestReadsAllocateAsBbolt(t *testing.T) {
	db := openTestDB(t, nil)
	err := db.Update(context.Background(), func(st store.Tx) error {
		return st.CreateUser(&store.User{ID: "u1", Username: "alice", Status: store.UserActive})
	})
	if err != nil {
		t.Fatal(err)
	}
	err = db.db.View(func(btx *bbolt.Tx) error {
		tx := NewTx(testBolt{btx}, time.Now)
		user := "alice"
		for _, tc := range []struct {
			name         string
			read, direct func()
		}{
			{"exists", func() {
				if ok, err := tx.exists(bucketUsers, user); !ok || err != nil {
					t.Fatalf("exists: %v, %v", ok, err)
				}
			}, func() { btx.Bucket([]byte(bucketUsers)).Get([]byte(user)) }},
			{"RevocationGeneration", func() {
				if _, err := tx.RevocationGeneration(); err != nil {
					t.Fatal(err)
				}
			}, func() { btx.Bucket([]byte(BucketMeta)).Get([]byte(metaRevocations)) }},
			{"audit head", func() {
				b, err := tx.bucket(bucketAudit)
				if err != nil {
					t.Fatal(err)
				}
				b.Last()
			}, func() { btx.Bucket([]byte(bucketAudit)).Cursor().Last() }},
		} {
			got, want := testing.AllocsPerRun(100, tc.read), testing.AllocsPerRun(100, tc.direct)
			if got > want {
				t.Errorf("%s: %v allocations, bbolt's own %v", tc.name, got, want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
