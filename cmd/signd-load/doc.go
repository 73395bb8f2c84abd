// Command signd-load is the load generator of `make bench` (scripts/bench.sh):
// it measures signd's signing throughput in the HSM alone and through the
// HTTP signHash path of a running daemon, from a separate process.
//
//	signd-load prepare --config F --user U --client C --credential ID --count N --out FILE
//	    writes an access token and N SADs (each bound to its own random
//	    digest) straight into the store, while the daemon is stopped, and
//	    the bearer values to FILE (mode 0600);
//	signd-load hsm --config F --in FILE --concurrency 1,2,8,32 --duration 5s
//	    signs with the credential's key through hsm.Token.SignDigest on the
//	    same token and pool size as the daemon: the raw throughput;
//	signd-load http --url http://127.0.0.1:PORT --in FILE --concurrency C --duration 5s
//	    POSTs signatures/signHash with one fresh SAD per request until the
//	    SADs or the time run out, and reports throughput and latency.
//
// Each measurement prints one line of key=value pairs. The HTTP mode only
// talks to loopback addresses; every run is bounded by a count and a
// duration. It is a benchmark tool: it holds bearer values in memory and in
// FILE, which must stay on the test machine.
package main
