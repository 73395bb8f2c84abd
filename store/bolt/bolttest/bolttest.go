package bolttest

import (
	"testing"
	"time"

	"go.etcd.io/bbolt"
)

// SchemaVersion reads meta/schema_version of the store file at path ("" when
// the file has none).
func SchemaVersion(t testing.TB, path string) string {
	t.Helper()
	raw, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var v string
	if err := raw.View(func(tx *bbolt.Tx) error {
		if b := tx.Bucket([]byte("meta")); b != nil {
			v = string(b.Get([]byte("schema_version")))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return v
}

// SetSchemaVersion writes meta/schema_version of the store file at path
// (creating the file and the bucket if need be), leaving the rest as it is.
func SetSchemaVersion(t testing.TB, path, v string) {
	t.Helper()
	Update(t, path, func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte("meta"))
		if err != nil {
			return err
		}
		return b.Put([]byte("schema_version"), []byte(v))
	})
}

// Update edits the closed store file at path in one bbolt transaction.
func Update(t testing.TB, path string, fn func(tx *bbolt.Tx) error) {
	t.Helper()
	raw, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if err := raw.Update(fn); err != nil {
		t.Fatal(err)
	}
}
