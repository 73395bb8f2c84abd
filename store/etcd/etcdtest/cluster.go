package etcdtest

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"

	"github.com/signd/signd/store/etcd"
)

// Cluster is an embedded etcd cluster of several members in this process,
// each on its own loopback ports with its data in its own directory. A
// member can be stopped (gracefully, or killed without handing over its
// leadership) and started again on the same ports and data, so that tests
// see a member failure, a lost quorum and its return.
type Cluster struct {
	// Endpoints are the client URLs of every member, in member order.
	Endpoints []string
	members   []*member
	prefixes  atomic.Int64
}

// member is one member of a Cluster; e is nil while it is stopped.
type member struct {
	mu  sync.Mutex
	cfg *embed.Config
	e   *embed.Etcd
}

// StartCluster starts an n-member cluster with the members' data under dir
// and waits until every member serves (at most a minute). The members
// accept the transactions store/etcd sends, as Start's single member does,
// and do not fsync.
func StartCluster(dir string, n int) (*Cluster, error) {
	if n < 1 {
		return nil, errors.New("etcdtest: a cluster needs a member")
	}
	ports, err := freePorts(2 * n)
	if err != nil {
		return nil, err
	}
	c := &Cluster{}
	var initial []string
	for i := range n {
		cfg := embed.NewConfig()
		cfg.Name = fmt.Sprintf("m%d", i)
		cfg.Dir = filepath.Join(dir, cfg.Name)
		client := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", ports[2*i])}
		peer := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", ports[2*i+1])}
		cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
		cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
		cfg.InitialClusterToken = "signd-test"
		cfg.LogLevel = "error"
		cfg.MaxTxnOps = 1 << 16
		// embed.NewConfig leaves the slow-request threshold at 0, unlike the
		// etcd binary (300 ms): every request would count as slow, and the
		// server would format its whole content for a log line it then drops
		// (a tenth of its CPU under load).
		cfg.WarningUnaryRequestDuration = embed.DefaultWarningUnaryRequestDuration
		cfg.MaxRequestBytes = etcd.MaxRequestBytes
		cfg.UnsafeNoFsync = true
		// A 2 s election timeout: shorter ones (500 ms was tried) let the
		// members of a test machine loaded by -race and parallel packages
		// miss heartbeats and elect again and again, and proposals failed
		// with "request timed out". A test that kills the leader waits
		// a few seconds for the next one.
		cfg.TickMs, cfg.ElectionMs = 100, 2000
		initial = append(initial, cfg.Name+"="+peer.String())
		c.Endpoints = append(c.Endpoints, client.String())
		c.members = append(c.members, &member{cfg: cfg})
	}
	for _, m := range c.members {
		m.cfg.InitialCluster = strings.Join(initial, ",")
	}
	// The members must run at once: each waits for the others to elect a
	// leader before it is ready.
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, m := range c.members {
		wg.Go(func() { errs[i] = m.start() })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// start starts the member on its ports and data and waits until it serves.
func (m *member) start() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.e != nil {
		return nil
	}
	e, err := embed.StartEtcd(m.cfg)
	if err != nil {
		return fmt.Errorf("etcdtest: start %s: %w", m.cfg.Name, err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return fmt.Errorf("etcdtest: start %s: %w", m.cfg.Name, err)
	case <-time.After(time.Minute):
		e.Close()
		return fmt.Errorf("etcdtest: %s did not become ready in a minute", m.cfg.Name)
	}
	m.e = e
	return nil
}

// stop stops the member; kill stops its raft node first, so that a leader
// goes away without handing its leadership over, as a crashed one does.
func (m *member) stop(kill bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.e == nil {
		return
	}
	if kill {
		m.e.Server.HardStop()
	}
	m.e.Close()
	m.e = nil
}

// Stop stops member i gracefully (a leader hands its leadership over); its
// data stays for Restart. Stopping a stopped member does nothing.
func (c *Cluster) Stop(i int) { c.members[i].stop(false) }

// Kill stops member i without handing over its leadership, as a crash
// does; its data stays for Restart.
func (c *Cluster) Kill(i int) { c.members[i].stop(true) }

// Restart starts the stopped member i again on its ports and data and waits
// until it serves, which needs a quorum of members running. Restarting a
// running member does nothing.
func (c *Cluster) Restart(i int) error { return c.members[i].start() }

// Leader returns the index of the member that leads as the running
// members see it, or -1 if none knows a leader.
func (c *Cluster) Leader() int {
	ids := make([]uint64, len(c.members)) // 0: stopped
	var lead uint64
	for i, m := range c.members {
		m.mu.Lock()
		if m.e != nil {
			ids[i] = uint64(m.e.Server.MemberID())
			if l := uint64(m.e.Server.Leader()); l != 0 {
				lead = l
			}
		}
		m.mu.Unlock()
	}
	for i, id := range ids {
		if id != 0 && id == lead {
			return i
		}
	}
	return -1
}

// Close stops every member.
func (c *Cluster) Close() {
	var wg sync.WaitGroup
	for _, m := range c.members {
		wg.Go(func() { m.stop(false) })
	}
	wg.Wait()
}

// Client returns a new client of every member; the caller closes it.
func (c *Cluster) Client() (*clientv3.Client, error) { return newClient(c.Endpoints) }

// Prefix returns a key prefix no other caller of this Cluster got.
func (c *Cluster) Prefix() string { return fmt.Sprintf("/signd-test/%d/", c.prefixes.Add(1)) }

// Open opens a fresh store (a new prefix, unless opts has one) on every
// member with its own client, as Server.Open does.
func (c *Cluster) Open(opts etcd.Options) (*etcd.DB, error) {
	if opts.Prefix == "" {
		opts.Prefix = c.Prefix()
	}
	return open(c.Endpoints, opts)
}

// open opens a store on endpoints, allowing 30 s per request, and per
// attempt, unless opts says otherwise: a loaded test machine is not a
// failover.
func open(endpoints []string, opts etcd.Options) (*etcd.DB, error) {
	opts.Endpoints = endpoints
	if opts.RequestTimeout == 0 {
		opts.RequestTimeout = 30 * time.Second
		if opts.HealthTimeout == 0 {
			opts.HealthTimeout = opts.RequestTimeout
		}
	}
	return etcd.Open(context.Background(), opts)
}

func newClient(endpoints []string) (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{
		Endpoints:          endpoints,
		DialTimeout:        5 * time.Second,
		MaxCallSendMsgSize: etcd.MaxRequestBytes,
		MaxCallRecvMsgSize: etcd.MaxRequestBytes,
	})
}
