package etcdtest_test

import (
	"testing"

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
	etcdtest.CheckFailover(t, c, c.Stop)
}
