package etcdtest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"

	"github.com/signd/signd/store/etcd"
)

// Server is one embedded etcd member.
type Server struct {
	e *embed.Etcd
	// Endpoints are its client URLs.
	Endpoints []string
	prefixes  atomic.Int64
}

// Start starts a single-member cluster with its data in dir and waits
// until it serves (at most a minute). It accepts the transactions store/etcd
// sends: up to etcd.MaxRequestBytes and many operations per transaction.
// Writes are not fsynced: the tests check the store's semantics, not
// etcd's durability.
func Start(dir string) (*Server, error) {
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	cfg := embed.NewConfig()
	cfg.Name = "signd-test"
	cfg.Dir = dir
	client := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", ports[0])}
	peer := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", ports[1])}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.LogLevel = "error"
	cfg.MaxTxnOps = 1 << 16
	// embed.NewConfig leaves the slow-request threshold at 0, unlike the
	// etcd binary (300 ms): every request would count as slow, and the
	// server would format its whole content for a log line it then drops
	// (a tenth of its CPU under load).
	cfg.WarningUnaryRequestDuration = embed.DefaultWarningUnaryRequestDuration
	cfg.MaxRequestBytes = etcd.MaxRequestBytes
	cfg.UnsafeNoFsync = true
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("etcdtest: start: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("etcdtest: start: %w", err)
	case <-time.After(time.Minute):
		e.Close()
		return nil, fmt.Errorf("etcdtest: the server did not become ready in a minute")
	}
	return &Server{e: e, Endpoints: []string{client.String()}}, nil
}

// Close stops the server.
func (s *Server) Close() { s.e.Close() }

// Client returns a new client of the server; the caller closes it.
func (s *Server) Client() (*clientv3.Client, error) { return newClient(s.Endpoints) }

// Prefix returns a key prefix no other caller of this Server got: a fresh,
// empty store on the shared server.
func (s *Server) Prefix() string { return fmt.Sprintf("/signd-test/%d/", s.prefixes.Add(1)) }

// Open opens a fresh store (a new prefix, unless opts has one) on the
// server with its own client. Without a RequestTimeout it allows 30 s per
// request: a 10 MiB proof under the race detector on a busy machine takes
// longer than the product's default.
func (s *Server) Open(opts etcd.Options) (*etcd.DB, error) {
	if opts.Prefix == "" {
		opts.Prefix = s.Prefix()
	}
	return open(s.Endpoints, opts)
}

// freePorts returns n loopback ports that were free a moment ago. They are
// taken below the kernel's ephemeral range (ip_local_port_range) when
// there is room: a member restarted on its ports after a kill must find
// them free, and a port of the ephemeral range may meanwhile have become
// the local end of some outgoing connection (bind: address already in
// use). Otherwise the kernel picks them.
func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	lo := ephemeralLow()
	for range n {
		var l net.Listener
		for try := 0; l == nil && lo > minPort+1000 && try < 50; try++ {
			l, _ = net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", minPort+rand.IntN(lo-minPort)))
		}
		if l == nil {
			var err error
			if l, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
				return nil, fmt.Errorf("etcdtest: %w", err)
			}
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// minPort is the lowest port freePorts picks: above the well-known and
// most registered service ports.
const minPort = 20000

// ephemeralLow is the first port of the kernel's ephemeral range, or 0 if
// it cannot be read (then freePorts lets the kernel pick).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0
	}
	lo, err := strconv.Atoi(f[0])
	if err != nil {
		return 0
	}
	return lo
}
