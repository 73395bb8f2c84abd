// Package reqlog ties the daemon's log lines to the requests they belong
// to: RequestID gives every request one ID (the client's X-Request-Id when
// it is safe to log, else a fresh one), Handler adds that ID as request_id
// to every record logged with the request's context, and AccessLog writes
// the access log's "request" line, health probes at DEBUG while their
// answer does not change.
package reqlog
