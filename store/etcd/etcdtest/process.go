package etcdtest

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/signd/signd/internal/logtest"
	"github.com/signd/signd/store/etcd"
)

// ProcessCluster is an etcd cluster whose members are processes of their
// own: each runs `BIN etcd --name NAME --dir DIR --client URL --peer URL
// --cluster NAME=URL,...`, the member of cmd/signd-cluster (an embedded
// etcd server that fsyncs its data, as a deployed member does). Killing a
// member (SIGKILL) is a crash: no leadership handed over, nothing flushed
// beyond what etcd had synced. A killed or stopped member restarts on its
// ports and data directory.
type ProcessCluster struct {
	// Endpoints are the client URLs of every member, in member order.
	Endpoints []string
	members   []*process
	client    *clientv3.Client
	prefixes  atomic.Int64
}

// process is one member; cmd is nil while it is not running.
type process struct {
	name, endpoint string
	bin            string
	args           []string
	log            *logtest.Buffer

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed once cmd has exited
}

// StartProcessCluster starts an n-member cluster of bin's members with
// their data under dir, and waits until every member serves and the
// cluster has a leader (at most a minute).
func StartProcessCluster(bin, dir string, n int) (*ProcessCluster, error) {
	if n < 1 {
		return nil, errors.New("etcdtest: a cluster needs a member")
	}
	ports, err := freePorts(2 * n)
	if err != nil {
		return nil, err
	}
	c := &ProcessCluster{}
	var initial []string
	for i := range n {
		initial = append(initial, fmt.Sprintf("m%d=http://127.0.0.1:%d", i, ports[2*i+1]))
	}
	for i := range n {
		name := fmt.Sprintf("m%d", i)
		client := fmt.Sprintf("http://127.0.0.1:%d", ports[2*i])
		c.Endpoints = append(c.Endpoints, client)
		c.members = append(c.members, &process{
			name: name, endpoint: client, bin: bin, log: &logtest.Buffer{Keep: 64 << 10},
			args: []string{"etcd", "--name", name, "--dir", filepath.Join(dir, name), "--client", client,
				"--peer", fmt.Sprintf("http://127.0.0.1:%d", ports[2*i+1]), "--cluster", strings.Join(initial, ",")},
		})
	}
	if c.client, err = newClient(c.Endpoints); err != nil {
		return nil, err
	}
	for _, m := range c.members {
		if err := m.start(); err != nil {
			c.Close()
			return nil, err
		}
	}
	for i := range c.members {
		if err := c.waitServing(i, time.Minute); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

// start starts the member's process if it is not running.
func (m *process) start() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd != nil {
		return nil
	}
	cmd := exec.Command(m.bin, m.args...)
	cmd.Stdout, cmd.Stderr = m.log, m.log
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("etcdtest: start %s: %w", m.name, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	m.cmd, m.done = cmd, done
	return nil
}

// signal sends sig to the member's process and waits until it has exited
// (SIGKILL after wait). A member that is not running is left alone.
func (m *process) signal(sig syscall.Signal, wait time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil {
		return
	}
	_ = m.cmd.Process.Signal(sig)
	select {
	case <-m.done:
	case <-time.After(wait):
		_ = m.cmd.Process.Kill()
		<-m.done
	}
	m.cmd, m.done = nil, nil
}

// running reports whether the member's process runs.
func (m *process) running() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil {
		return false
	}
	select {
	case <-m.done:
		return false
	default:
		return true
	}
}

// waitServing waits until member i answers a status request naming a
// leader: it serves clients, which needs a quorum of running members.
func (c *ProcessCluster) waitServing(i int, d time.Duration) error {
	m := c.members[i]
	deadline := time.Now().Add(d)
	for {
		if !m.running() {
			return fmt.Errorf("etcdtest: %s exited:\n%s", m.name, m.log)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		st, err := c.client.Status(ctx, m.endpoint)
		cancel()
		if err == nil && st.Leader != 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("etcdtest: %s did not serve within %s (%v):\n%s", m.name, d, err, m.log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Kill sends SIGKILL to member i's process, as a crash: its data stays for
// Restart. Killing a member that is not running does nothing.
func (c *ProcessCluster) Kill(i int) { c.members[i].signal(syscall.SIGKILL, time.Minute) }

// Stop stops member i with SIGTERM (a leader hands its leadership over);
// its data stays for Restart.
func (c *ProcessCluster) Stop(i int) { c.members[i].signal(syscall.SIGTERM, 30*time.Second) }

// Restart starts member i's process again on its ports and data, and
// waits until it serves, which needs a quorum of members running.
// Restarting a running member does nothing.
func (c *ProcessCluster) Restart(i int) error {
	if err := c.members[i].start(); err != nil {
		return err
	}
	return c.waitServing(i, time.Minute)
}

// Leader returns the index of the member that leads, as etcd's maintenance
// Status API of the running members reports it, or -1 if none knows a
// leader.
func (c *ProcessCluster) Leader() int {
	ids := make([]uint64, len(c.members)) // 0: not answering
	var lead uint64
	for i, m := range c.members {
		if !m.running() {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		st, err := c.client.Status(ctx, m.endpoint)
		cancel()
		if err != nil {
			continue
		}
		ids[i] = st.Header.MemberId
		if st.Leader != 0 {
			lead = st.Leader
		}
	}
	for i, id := range ids {
		if id != 0 && id == lead {
			return i
		}
	}
	return -1
}

// Log returns what member i's processes wrote, for a failing test.
func (c *ProcessCluster) Log(i int) string { return c.members[i].log.String() }

// Close kills every member (SIGKILL: a member without quorum would take
// seconds to stop gracefully, and its data is thrown away) and closes the
// cluster's client.
func (c *ProcessCluster) Close() {
	var wg sync.WaitGroup
	for i := range c.members {
		wg.Go(func() { c.Kill(i) })
	}
	wg.Wait()
	if c.client != nil {
		c.client.Close()
	}
}

// Client returns a new client of every member; the caller closes it.
func (c *ProcessCluster) Client() (*clientv3.Client, error) { return newClient(c.Endpoints) }

// Prefix returns a key prefix no other caller of this cluster got.
func (c *ProcessCluster) Prefix() string {
	return fmt.Sprintf("/signd-test/%d/", c.prefixes.Add(1))
}

// Open opens a fresh store (a new prefix, unless opts has one) on every
// member with its own client, as Cluster.Open does.
func (c *ProcessCluster) Open(opts etcd.Options) (*etcd.DB, error) {
	if opts.Prefix == "" {
		opts.Prefix = c.Prefix()
	}
	return open(c.Endpoints, opts)
}
