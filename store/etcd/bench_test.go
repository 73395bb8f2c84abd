package etcd_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/signd/signd/store"
	"github.com/signd/signd/store/etcd"
	"github.com/signd/signd/store/storetest"
)

// BenchmarkConsumeSAD: one SAD consumed with its audit entry, on one node
// (sequential); store/bolt and store/memory have the same benchmark.
func BenchmarkConsumeSAD(b *testing.B) {
	storetest.BenchConsume(b, open(b, etcd.Options{}))
}

// BenchmarkConsumeSADNodes: SADs consumed in parallel through three nodes
// of one store. Every consumption appends to the one audit chain, so the
// nodes contend for its head: runs/op is how often a transaction's
// function ran per committed consumption (1 = no conflict).
func BenchmarkConsumeSADNodes(b *testing.B) {
	prefix := server.Prefix()
	var dbs []*etcd.DB
	for range 3 {
		dbs = append(dbs, open(b, etcd.Options{Prefix: prefix}))
	}
	ctx := context.Background()
	sads := storetest.PrepareSADs(b, dbs[0], b.N, 100)
	var next, runs atomic.Int64
	b.SetParallelism(2) // 2×GOMAXPROCS goroutines spread over the nodes
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := next.Add(1) - 1
			db := dbs[i%3]
			err := db.Update(ctx, func(tx store.Tx) error {
				runs.Add(1)
				return storetest.ConsumeSAD(tx, sads[i])
			})
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(runs.Load())/float64(b.N), "runs/op")
}

// BenchmarkBatchConsume: the commit of a granted signHash (read the SAD,
// delete it, append the audit entry) through Batch, as csc calls it, by c
// goroutines, each call on the next of one or three nodes of one store
// (round robin), with the watch cache and without it. Reported:
// runs/op, how often a function ran per consumption (1 = no conflict),
// txns/op, the etcd Txns that committed per consumption (the revisions the
// store advanced: below 1 when consumptions share a commit), and reads/op,
// the etcd reads per consumption (barriers and reads of records).
func BenchmarkBatchConsume(b *testing.B) {
	for _, nodes := range []int{1, 3} {
		for _, c := range []int{1, 8} {
			for _, cache := range []bool{true, false} {
				name := fmt.Sprintf("nodes=%d/c=%d/cache=%v", nodes, c, cache)
				b.Run(name, func(b *testing.B) { benchBatchConsume(b, nodes, c, !cache) })
			}
		}
	}
}

func benchBatchConsume(b *testing.B, nodes, c int, noCache bool) {
	prefix := server.Prefix()
	var dbs []*etcd.DB
	for range nodes {
		dbs = append(dbs, open(b, etcd.Options{Prefix: prefix, NoCache: noCache}))
	}
	reads := func() (n uint64) {
		for _, db := range dbs {
			st := db.Stats()
			n += st.Barriers + st.Reads
		}
		return n
	}
	cli, err := server.Client()
	if err != nil {
		b.Fatal(err)
	}
	defer cli.Close()
	ctx := context.Background()
	sads := storetest.PrepareSADs(b, dbs[0], b.N, 100)
	revision := func() int64 {
		resp, err := cli.Get(ctx, prefix+"v/audit")
		if err != nil {
			b.Fatal(err)
		}
		return resp.Header.Revision
	}
	rev0, reads0 := revision(), reads()
	var next, runs atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	for range c {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= b.N {
					return
				}
				db := dbs[i%nodes] // round robin, as a front spreads requests
				err := db.Batch(ctx, func(tx store.Tx) error {
					runs.Add(1)
					return storetest.ConsumeSAD(tx, sads[i])
				})
				if err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(runs.Load())/float64(b.N), "runs/op")
	b.ReportMetric(float64(revision()-rev0)/float64(b.N), "txns/op")
	b.ReportMetric(float64(reads()-reads0)/float64(b.N), "reads/op")
}
