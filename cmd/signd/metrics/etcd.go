package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/signd/signd/store/etcd"
)

// WatchEtcd publishes the etcd backend's counters, read at scrape time:
// how often this node's transactions conflict with other writers
// (conflicts per commit), how many Batch calls share a commit, and the
// etcd reads besides the commits (barriers, direct reads).
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
		counter("signd_store_etcd_barriers_total", "etcd reads that started transactions on the watch cache (shared by the transactions that arrived together).",
			func(s etcd.Stats) uint64 { return s.Barriers }),
		counter("signd_store_etcd_reads_total", "etcd reads of records by transactions: all of them while the watch cache reloads or is off, audit walks otherwise.",
			func(s etcd.Stats) uint64 { return s.Reads }),
	)
}
