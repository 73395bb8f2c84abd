package etcdtest

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Members is what CheckFailover needs of a 3-member cluster: Cluster (in
// this process) and ProcessCluster (members as processes) both are.
type Members interface {
	Client() (*clientv3.Client, error)
	Leader() int
	Kill(i int)
	Restart(i int) error
}

// CheckFailover runs the failover every 3-member cluster of this package
// must survive: a write acknowledged before the leader is killed survives;
// with 2 of 3 members the cluster takes writes again (within 30 s; a write
// the dead leader had taken times out and is retried, as signd's clients
// do); with a second member taken away by remove (Stop or Kill) a write
// fails; restarted from their data directories, the members have every
// acknowledged write and elect a leader.
func CheckFailover(t testing.TB, c Members, remove func(i int)) {
	t.Helper()
	cli, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	put := func(key string, timeout time.Duration) error {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		_, err := cli.Put(ctx, key, "v")
		return err
	}
	if err := put("/a", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	lead := c.Leader()
	if lead < 0 {
		t.Fatal("no leader")
	}
	start := time.Now()
	c.Kill(lead)
	for err := put("/b", 3*time.Second); err != nil; err = put("/b", 3*time.Second) {
		if time.Since(start) > 30*time.Second {
			t.Fatalf("write with 2 of 3 members: %v", err)
		}
	}
	t.Logf("written with 2 of 3 members %s after the leader (member %d) was killed", time.Since(start).Round(time.Millisecond), lead)
	other := (lead + 1) % 3
	remove(other)
	if err := put("/c", 2*time.Second); err == nil {
		t.Fatal("a write succeeded with 1 of 3 members")
	}
	for _, i := range []int{lead, other} {
		if err := c.Restart(i); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := cli.Get(ctx, "/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, kv := range res.Kvs {
		got[string(kv.Key)] = true
	}
	if !got["/a"] || !got["/b"] {
		t.Errorf("keys after the members returned: %v", got)
	}
	if l := c.Leader(); l < 0 {
		t.Error("no leader after the members returned")
	}
}
