package memory_test

import (
	"testing"
	"time"

	"github.com/signd/signd/store"
	"github.com/signd/signd/store/memory"
	"github.com/signd/signd/store/storetest"
)

// open returns a fresh store closed when the test ends.
func open(t testing.TB, opts memory.Options) *memory.DB {
	t.Helper()
	db := memory.New(opts)
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Error(err)
		}
	})
	return db
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return open(t, memory.Options{}) })
}

func TestConformanceClock(t *testing.T) {
	storetest.RunClock(t, func(t *testing.T, now func() time.Time) store.Store {
		return open(t, memory.Options{Now: now})
	})
}
