package etcd_test

import (
	"fmt"
	"os"
	"testing"
	"time"

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

// conformance opens the suites' stores, each on a prefix of its own.
func conformance(t *testing.T, now func() time.Time) storetest.Full {
	return open(t, etcd.Options{Now: now})
}

func TestConformance(t *testing.T)       { storetest.Run(t, conformance) }
func TestConformanceClock(t *testing.T)  { storetest.RunClock(t, conformance) }
func TestBatchConformance(t *testing.T)  { storetest.RunBatch(t, conformance) }
func TestSecretConformance(t *testing.T) { storetest.RunSecrets(t, conformance) }
