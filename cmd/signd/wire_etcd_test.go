package main

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/signd/signd/cmd/signd/sweeper"
	"github.com/signd/signd/store/etcd/etcdtest"
)

// elector is a sweeper.Elector over a client of the embedded etcd.
type elector struct {
	c      *clientv3.Client
	prefix string
}

func (e elector) Client() *clientv3.Client { return e.c }
func (e elector) Prefix() string           { return e.prefix }

// TestSweeperElection: of two nodes, one sweeps at a time; when the leader
// stops, the other takes over; none sweeps after shutdown.
func TestSweeperElection(t *testing.T) {
	srv := sharedEtcd(t)
	prefix := srv.Prefix()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	var active, overlap atomic.Int32
	type node struct {
		started atomic.Int32
		cancel  context.CancelFunc
		done    chan struct{}
	}
	run := func(n *node) {
		c, err := srv.Client()
		if err != nil {
			t.Fatal(err)
		}
		start := func(time.Duration) func() {
			n.started.Add(1)
			if active.Add(1) > 1 {
				overlap.Add(1)
			}
			return func() { active.Add(-1) }
		}
		ctx, cancel := context.WithCancel(context.Background())
		n.cancel, n.done = cancel, make(chan struct{})
		go func() {
			defer close(n.done)
			defer c.Close()
			sweeper.Lead(ctx, elector{c, prefix}, time.Minute, start, logger)
		}()
	}
	a, b := &node{}, &node{}
	run(a)
	run(b)
	defer func() {
		a.cancel()
		b.cancel()
		<-a.done
		<-b.done
	}()
	waitFor(t, func() bool { return a.started.Load()+b.started.Load() == 1 })
	time.Sleep(500 * time.Millisecond) // the follower must not start meanwhile
	if n := a.started.Load() + b.started.Load(); n != 1 {
		t.Fatalf("%d sweepers started with two nodes up, want 1", n)
	}
	leader, follower := a, b
	if b.started.Load() == 1 {
		leader, follower = b, a
	}
	leader.cancel()
	<-leader.done
	waitFor(t, func() bool { return follower.started.Load() == 1 })
	if overlap.Load() != 0 {
		t.Errorf("two sweepers ran at once")
	}
	follower.cancel()
	<-follower.done
	if active.Load() != 0 {
		t.Errorf("%d sweepers still running after shutdown", active.Load())
	}
}

// waitFor polls cond for up to 20 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 20 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSweeperElectionStopsWithoutQuorum: a node that campaigns (another
// leads) and the node that leads both stop within seconds after the etcd
// cluster lost its quorum. (etcd's Campaign, cancelled, resigns with the
// client's own context: the campaigning node waited until the quorum was
// back.)
func TestSweeperElectionStopsWithoutQuorum(t *testing.T) {
	cl, err := etcdtest.StartProcessCluster(signdClusterBinary(t), t.TempDir(), 3)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	prefix := cl.Prefix()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	var started atomic.Int32
	start := func(time.Duration) func() { started.Add(1); return func() {} }
	type node struct {
		cancel context.CancelFunc
		done   chan struct{}
	}
	run := func() *node {
		c, err := cl.Client()
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		n := &node{cancel: cancel, done: make(chan struct{})}
		go func() {
			defer close(n.done)
			sweeper.Lead(ctx, elector{c, prefix}, time.Minute, start, logger)
		}()
		t.Cleanup(func() { c.Close() }) // ends an abandoned campaign
		return n
	}
	leading := run()
	waitFor(t, func() bool { return started.Load() == 1 })
	campaigning := run()
	time.Sleep(200 * time.Millisecond) // it campaigns
	lead := cl.Leader()
	cl.Kill(lead)
	cl.Kill((lead + 1) % 3)
	begin := time.Now()
	leading.cancel()
	campaigning.cancel()
	for name, n := range map[string]*node{"campaigning": campaigning, "leading": leading} {
		select {
		case <-n.done:
			t.Logf("the %s node stopped without quorum in %s", name, time.Since(begin).Round(time.Millisecond))
		case <-time.After(time.Until(begin.Add(6 * time.Second))):
			t.Errorf("the %s node did not stop within 6 s without quorum", name)
		}
	}
	if started.Load() != 1 {
		t.Errorf("%d sweepers started, want 1", started.Load())
	}
}
