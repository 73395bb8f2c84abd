package etcd_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/signd/signd/store"
	"github.com/signd/signd/store/etcd"
	"github.com/signd/signd/store/etcd/etcdtest"
	"github.com/signd/signd/store/storetest"
)

// nodes is one store seen through several DBs on the same prefix, each
// with its own client, as several signd nodes see it: every call goes to
// the next DB in turn. Concurrent calls land on different DBs, so the
// conformance suite's races (single spend, lockout counters, audit
// appends) are decided by the commit guard, not by a DB's local mutex.
type nodes struct {
	dbs  []*etcd.DB
	next atomic.Uint64
}

func (n *nodes) pick() *etcd.DB { return n.dbs[(n.next.Add(1)-1)%uint64(len(n.dbs))] }

func (n *nodes) View(ctx context.Context, fn func(store.Tx) error) error {
	return n.pick().View(ctx, fn)
}

func (n *nodes) Update(ctx context.Context, fn func(store.Tx) error) error {
	return n.pick().Update(ctx, fn)
}

func (n *nodes) Fence(ctx context.Context, fn func(store.Tx) error) error {
	return n.pick().Fence(ctx, fn)
}

func (n *nodes) Batch(ctx context.Context, fn func(store.Tx) error) error {
	return n.pick().Batch(ctx, fn)
}

func (n *nodes) Secret(ctx context.Context, name string, size int) ([]byte, error) {
	return n.pick().Secret(ctx, name, size)
}

func (n *nodes) Close() error {
	for _, db := range n.dbs {
		if err := db.Close(); err != nil {
			return err
		}
	}
	return nil
}

// openNodes opens three DBs on one fresh prefix of the package's server,
// for the suites.
func openNodes(t *testing.T, now func() time.Time) storetest.Full {
	t.Helper()
	return openNodesOn(t, server, now)
}

// etcdServer is an etcdtest server or cluster: fresh prefixes and DBs.
type etcdServer interface {
	Prefix() string
	Open(etcd.Options) (*etcd.DB, error)
}

// openNodesOn opens three DBs on one fresh prefix of srv; they close when
// the test ends.
func openNodesOn(t *testing.T, srv etcdServer, now func() time.Time) *nodes {
	t.Helper()
	prefix := srv.Prefix()
	n := &nodes{}
	for range 3 {
		db, err := srv.Open(etcd.Options{Prefix: prefix, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		n.dbs = append(n.dbs, db)
	}
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Error(err)
		}
	})
	return n
}

// TestConformanceNodes runs the whole suite on three nodes of one store.
func TestConformanceNodes(t *testing.T)       { storetest.Run(t, openNodes) }
func TestConformanceClockNodes(t *testing.T)  { storetest.RunClock(t, openNodes) }
func TestBatchConformanceNodes(t *testing.T)  { storetest.RunBatch(t, openNodes) }
func TestSecretConformanceNodes(t *testing.T) { storetest.RunSecrets(t, openNodes) }

// TestConformanceCluster runs the suite, Batch's included, on three nodes
// of one store on a three-member cluster, each node's client spread over
// every member: a transaction's reads after its first are served by
// whichever member answers, at the snapshot (a follower that has not
// applied it yet makes the read linearizable).
func TestConformanceCluster(t *testing.T) {
	cluster, err := etcdtest.StartCluster(t.TempDir(), 3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	open := func(t *testing.T, now func() time.Time) storetest.Full { return openNodesOn(t, cluster, now) }
	t.Run("Store", func(t *testing.T) { storetest.Run(t, open) })
	t.Run("Batch", func(t *testing.T) { storetest.RunBatch(t, open) })
}
