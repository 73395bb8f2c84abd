package etcd_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/signd/signd/store"
	"github.com/signd/signd/store/etcd"
	"github.com/signd/signd/store/etcd/etcdtest"
	"github.com/signd/signd/store/storetest"
)

// server is the embedded etcd every test of the package shares; each store
// gets its own prefix.
var server *etcdtest.Server

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "signd-etcd-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	server, err = etcdtest.Start(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer server.Close()
	return m.Run()
}

// open returns a fresh store (a new prefix) closed when the test ends.
func open(t testing.TB, opts etcd.Options) *etcd.DB {
	t.Helper()
	db, err := server.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Error(err)
		}
	})
	return db
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return open(t, etcd.Options{}) })
}

func TestConformanceClock(t *testing.T) {
	storetest.RunClock(t, func(t *testing.T, now func() time.Time) store.Store {
		return open(t, etcd.Options{Now: now})
	})
}

func TestBatchConformance(t *testing.T) {
	storetest.RunBatch(t, func(t *testing.T) storetest.Batcher { return open(t, etcd.Options{}) })
}

func TestSecretConformance(t *testing.T) {
	storetest.RunSecrets(t, func(t *testing.T) storetest.Secrets { return open(t, etcd.Options{}) })
}

// The interfaces the CSC service and its wiring ask of a store.
var (
	_ storetest.Batcher = (*etcd.DB)(nil)
	_ storetest.Secrets = (*etcd.DB)(nil)
)
