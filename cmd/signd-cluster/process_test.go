package main

import (
	"context"
	"os"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/signd/signd/store/etcd/etcdtest"
)

// runMainEnv makes this test binary run signd-cluster's main instead of
// the tests: TestMembersAsProcesses runs it as its member processes.
const runMainEnv = "SIGND_CLUSTER_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestMembersAsProcesses: three `signd-cluster etcd` members as processes
// (etcdtest.StartProcessCluster, as the daemon's failover test runs them).
// A write acknowledged before the leader is killed with SIGKILL survives;
// with 2 of 3 members the cluster takes writes, with a second member
// killed it refuses them, and restarted from their data directories the
// members have every acknowledged write.
func TestMembersAsProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three etcd member processes")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(runMainEnv, "1") // inherited by the members
	c, err := etcdtest.StartProcessCluster(exe, t.TempDir(), 3)
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
	for err := put("/b", 3*time.Second); err != nil; err = put("/b", 3*time.Second) {
		if time.Since(start) > 30*time.Second {
			t.Fatalf("write with 2 of 3 members: %v", err)
		}
	}
	t.Logf("written with 2 of 3 members %s after the kill", time.Since(start).Round(time.Millisecond))
	other := (lead + 1) % 3
	c.Kill(other)
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
