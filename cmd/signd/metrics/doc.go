// Package metrics is the daemon's Prometheus instrumentation, in a
// registry of its own (no global state): the collectors the services
// report to (Metrics implements hsm.Metrics, csc.Metrics,
// certstatus.Metrics, passwords.Metrics and ratelimit.Metrics), the HTTP
// middleware counting requests by route template, the gauges read at
// scrape time (the token's health, readiness, etcd's commit counters),
// State (what the daemon reads from the store every StateRefresh rather
// than counts: certificate expiry, the audit log's length and latest
// checkpoint, the store's size and writability) and Endpoint, the
// listener of server.metrics_listen.
//
// cmd/signd builds one Metrics per serve and passes it to the services
// it wires; nothing here reads the configuration.
package metrics
