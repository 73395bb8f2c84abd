package backends

import (
	"path/filepath"
	"testing"

	"github.com/signd/signd/store"
	"github.com/signd/signd/store/bolt"
	"github.com/signd/signd/store/memory"
)

// Backend is one store backend under a name for subtests.
type Backend struct {
	Name string
	// Open returns a new, empty store whose Close is registered with
	// t.Cleanup.
	Open func(t testing.TB) store.Store
}

// All returns every backend: bolt on a file in t.TempDir(), and memory.
func All() []Backend {
	return []Backend{
		{"bolt", func(t testing.TB) store.Store {
			t.Helper()
			db, err := bolt.Open(filepath.Join(t.TempDir(), "signd.db"), bolt.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			return db
		}},
		{"memory", func(t testing.TB) store.Store {
			db := memory.New(memory.Options{})
			t.Cleanup(func() { db.Close() })
			return db
		}},
	}
}

// Each runs fn as one subtest per backend, on a fresh store of it.
func Each(t *testing.T, fn func(t *testing.T, s store.Store)) {
	t.Helper()
	for _, b := range All() {
		t.Run(b.Name, func(t *testing.T) { fn(t, b.Open(t)) })
	}
}
