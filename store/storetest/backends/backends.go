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
		{"bolt", func(t testing.TB) store.Store { return Bolt(t, bolt.Options{}) }},
		{"memory", func(t testing.TB) store.Store { return Memory(t, memory.Options{}) }},
	}
}

// Each runs fn as one subtest per backend, on a fresh store of it.
func Each(t *testing.T, fn func(t *testing.T, s store.Store)) {
	t.Helper()
	for _, b := range All() {
		t.Run(b.Name, func(t *testing.T) { fn(t, b.Open(t)) })
	}
}

// Bolt opens a fresh database file in t.TempDir() with opts. It is closed
// when the test ends; an error closing it fails the test.
func Bolt(t testing.TB, opts bolt.Options) *bolt.DB {
	t.Helper()
	db, err := bolt.Open(filepath.Join(t.TempDir(), "signd.db"), opts)
	if err != nil {
		t.Fatal(err)
	}
	closeAtEnd(t, db)
	return db
}

// Memory returns an empty in-memory store with opts, closed when the test
// ends.
func Memory(t testing.TB, opts memory.Options) *memory.DB {
	db := memory.New(opts)
	closeAtEnd(t, db)
	return db
}

func closeAtEnd(t testing.TB, db store.Store) {
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Error(err)
		}
	})
}
