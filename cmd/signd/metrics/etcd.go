package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/signd/signd/store/etcd"
)

// WatchEtcd publishes the etcd backend's commit counters, read at scrape
// time: how often this node's transactions conflict with other writers
// (conflicts per commit) and how many Batch calls share a commit.
func (m *Metrics) WatchEtcd(stats func() etcd.Stats) {
	counter := func(name, help string, v func(etcd.Stats) uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help},
			func() float64 { return float64(v(stats())) })
	}
	m.reg.MustRegister(
		counter("signd_store_etcd_commits_total", "etcd transactions this node's store sent (conflicting ones included).",
			func(s etcd.Stats) uint64 { return s.Commits }),
		counter("signd_store_etcd_conflicts_total", "etcd transactions whose guard failed (another writer changed what they read); they ran again.",
			func(s etcd.Stats) uint64 { return s.Conflicts }),
		counter("signd_store_etcd_batch_calls_total", "Batch calls (signHash, token, audit appends) answered by a committed shared transaction.",
			func(s etcd.Stats) uint64 { return s.BatchCalls }),
		counter("signd_store_etcd_batch_runs_total", "Runs of batched functions: above batch_calls when conflicts ran shared transactions again.",
			func(s etcd.Stats) uint64 { return s.BatchRuns }),
	)
}
