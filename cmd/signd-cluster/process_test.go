package main

import (
	"os"
	"testing"

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
	etcdtest.CheckFailover(t, c, c.Kill)
}
