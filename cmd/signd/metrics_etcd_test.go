package main

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestMetricsEtcdCommits: a node on etcd publishes its store's commit
// counters (the daemon's start-up already commits: the OIDC signing key,
// the page-token secret); a node on bbolt has none of them. Both publish
// the store's size.
func TestMetricsEtcdCommits(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  func(t *testing.T) *env
		etcd bool
	}{
		{"etcd", func(t *testing.T) *env { return newEtcdEnv(t, "", "") }, true},
		{"bbolt", func(t *testing.T) *env { return newEnv(t, "") }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := tc.env(t)
			e.daemon()
			status, _, text := httpGet(t, "GET", "http://"+e.metricsAddr+"/metrics")
			if status != http.StatusOK {
				t.Fatalf("GET /metrics = %d", status)
			}
			for _, name := range []string{
				"signd_store_etcd_commits_total", "signd_store_etcd_conflicts_total",
				"signd_store_etcd_batch_calls_total", "signd_store_etcd_batch_runs_total",
				"signd_store_etcd_barriers_total", "signd_store_etcd_reads_total",
			} {
				m := regexp.MustCompile(`(?m)^` + name + ` (\S+)$`).FindStringSubmatch(text)
				if (m != nil) != tc.etcd {
					t.Errorf("%s published %v, want %v", name, m != nil, tc.etcd)
					continue
				}
				if m == nil {
					continue
				}
				v, err := strconv.ParseFloat(m[1], 64)
				if err != nil || name == "signd_store_etcd_commits_total" && v < 1 {
					t.Errorf("%s = %s, want a count (commits at least 1)", name, m[1])
				}
			}
			if tc.etcd && !strings.Contains(text, "# TYPE signd_store_etcd_conflicts_total counter") {
				t.Error("signd_store_etcd_conflicts_total is not a counter")
			}
			// The store's size: the bbolt file at each scrape, etcd's
			// database size from the first refresh on.
			waitFor(t, func() bool { return scrape(t, e)["signd_store_size_bytes"] > 0 })
		})
	}
}
