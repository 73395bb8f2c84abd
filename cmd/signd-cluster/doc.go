// Command signd-cluster runs the pieces of a several-node signd on one
// machine, for `make demo-ha` and `make bench-ha` (scripts/demo-ha.sh,
// scripts/bench-ha.sh): etcd members and a round-robin front. It is a
// development tool: everything listens on loopback only.
//
//	signd-cluster etcd --name m1 --dir DIR --client URL --peer URL [--advertise-peer URL] --cluster m1=URL,m2=URL,m3=URL
//	    runs one etcd member (go.etcd.io/etcd/server/v3/embed, the server
//	    store/etcd is tested against) of a static cluster, with the limits
//	    signd's transactions need (--max-request-bytes, --max-txn-ops), its
//	    data fsynced in DIR, until SIGINT or SIGTERM (the daemon's failover
//	    test runs its members this way: etcdtest.StartProcessCluster);
//	signd-cluster front --listen ADDR --backend URL [--backend URL ...]
//	    a reverse proxy that sends each request to the next healthy
//	    backend in turn; a backend is healthy while its /readyz answers
//	    200 (checked every --check interval) and no request to it failed
//	    to connect since the last check;
//	signd-cluster delay --listen ADDR --to ADDR --delay D
//	    a TCP proxy that delivers every byte, both ways, D after it was
//	    sent: the network between machines, simulated on one (this
//	    kernel has no netem). `make bench-ha` with NET_DELAY puts one in
//	    front of every etcd member's client and peer port (the members
//	    advertise the proxy: signd-cluster etcd --advertise-peer);
//	signd-cluster ports N
//	    prints N loopback TCP ports that were free a moment ago;
//	signd-cluster pick PORT [PORT ...]
//	    prints, for each PORT, PORT itself if 127.0.0.1:PORT could be
//	    listened on a moment ago, else a free one the kernel chose, no two
//	    the same: how `make demo` and `make demo-ha` keep their default
//	    ports when they are free and move when another program holds them.
//
// A production deployment uses etcd's own packaged server and a standard
// proxy (HAProxy, nginx, a cloud load balancer) with the same health check
// on /readyz; see docs/OPERATIONS.md, "Running several nodes".
package main
