// Command signd-load is the load generator of `make bench` (scripts/bench.sh,
// scripts/bench-token.sh): it measures signd's signing throughput in the HSM
// alone and through the HTTP signHash path of a running daemon, and the
// token endpoint of signd or of any other OpenID provider, from a separate
// process.
//
//	signd-load prepare --config F --user U --client C --credential ID --count N --out FILE
//	    writes an access token and N SADs (each bound to its own random
//	    digest) straight into the store (the bbolt file while the daemon
//	    is stopped, or the loopback etcd cluster of store.backend: etcd),
//	    and the bearer values to FILE (mode 0600);
//	signd-load hsm --config F --in FILE --concurrency 1,2,8,32 --duration 5s
//	    signs with the credential's key through hsm.Token.SignDigest on the
//	    same token and pool size as the daemon: the raw throughput;
//	signd-load http --url http://127.0.0.1:PORT --in FILE --concurrency C --duration 5s
//	    POSTs signatures/signHash with one fresh SAD per request until the
//	    SADs or the time run out, and reports throughput and latency;
//	signd-load store --config F --in FILE --concurrency C --duration 5s
//	    consumes the SADs of FILE straight in the store, one transaction
//	    each as signHash commits it (SAD read and deleted, audit entry
//	    appended), and reports the commit latency without HTTP and HSM;
//	signd-load codes --url http://127.0.0.1:PORT --client ID --redirect-uri URI --user U --password-file F --count N --out FILE
//	    runs N authorization code flows (scope openid, PKCE S256) through
//	    the provider's discovery, authorization endpoint and login and
//	    consent pages, as a browser would, and writes the codes with their
//	    code_verifiers to FILE (mode 0600);
//	signd-load token --in FILE --secret-file F --concurrency C --duration 5s
//	    redeems each code once at the token endpoint (client_secret_basic,
//	    or client_secret_post with --auth post) until the codes or the time
//	    run out; a 200 with an id_token counts;
//	signd-load phases --trace FILE [--task signHash]
//	    reads an execution trace (runtime/trace) taken while requests ran —
//	    `signd serve --trace FILE`, or `go test -trace FILE -bench
//	    SignHashHTTPSoftHSM ./csc/` — and prints a Markdown table: per
//	    phase of the task (its regions, and the HTTP read and write around
//	    it), p50 and p99 of the wall time and of where it went (running,
//	    waiting for a CPU, fsync, write, cgo, other syscalls, blocked).
//
// Each measurement prints one line of key=value pairs. The http, codes and
// token modes only talk to loopback addresses (codes reads the code off the
// redirect to URI, never visits it); every run is bounded by a count and a
// duration. It is a benchmark tool: it holds bearer values and codes in
// memory and in FILE, which must stay on the test machine.
package main
