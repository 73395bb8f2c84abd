package etcdtest_test

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/signd/signd/store/etcd/etcdtest"
)

// TestCluster: a 3-member cluster keeps accepting writes with its leader
// killed, refuses them with a second member stopped (no quorum), and has
// every acknowledged write once the members are back.
func TestCluster(t *testing.T) {
	c, err := etcdtest.StartCluster(t.TempDir(), 3)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
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
	t.Logf("killed the leader (member %d) in %s", lead, time.Since(start))
	// A write the dead leader had taken is lost and times out (etcd answers
	// "request timed out"); the client tries again, as signd's clients do.
	for err := put("/b", 3*time.Second); err != nil; err = put("/b", 3*time.Second) {
		if time.Since(start) > 30*time.Second {
			t.Fatalf("write with 2 of 3 members: %v", err)
		}
	}
	t.Logf("written with 2 of 3 members %s after the kill", time.Since(start))
	other := (lead + 1) % 3
	c.Stop(other)
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
}
