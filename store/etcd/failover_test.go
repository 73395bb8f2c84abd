package etcd_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"go.etcd.io/etcd/server/v3/embed"

	"github.com/signd/signd/store"
	"github.com/signd/signd/store/etcd"
	"github.com/signd/signd/store/etcd/etcdtest"
)

// openMember opens a store with the daemon's default timeouts (a 5 s
// request, 1 s attempts) on member i of c alone, so that the test knows
// which member its requests reach; the store holds alice.
func openMember(t *testing.T, c *etcdtest.Cluster, i int) *etcd.DB {
	t.Helper()
	db, err := etcd.Open(context.Background(), etcd.Options{Endpoints: c.Endpoints[i : i+1], Prefix: c.Prefix()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Update(context.Background(), func(tx store.Tx) error { return tx.CreateUser(newUser("alice")) }); err != nil {
		t.Fatal(err)
	}
	return db
}

// bumpAfter counts a wrong PIN of alice, running fault between the read
// and the write the first time the function runs, and returns how long
// the commit took from the end of the function, and Update's result.
func bumpAfter(db *etcd.DB, fault func()) (time.Duration, error) {
	var sent time.Time
	err := db.Update(context.Background(), func(tx store.Tx) error {
		u, err := tx.User("alice")
		if err != nil {
			return err
		}
		if fault != nil {
			fault()
			fault = nil
		}
		u.FailedPINs++
		sent = time.Now()
		return tx.PutUser(u)
	})
	return time.Since(sent), err
}

// waitLeader waits until a running member leads, at most 30 s.
func waitLeader(t *testing.T, c *etcdtest.Cluster) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); c.Leader() < 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no leader after 30 s")
		}
	}
}

// waitNoLeader waits until member i knows it has no leader (etcd's Status
// of the member), at most 30 s.
func waitNoLeader(t *testing.T, c *etcdtest.Cluster, i int) {
	t.Helper()
	cli, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		st, err := cli.Status(ctx, c.Endpoints[i])
		cancel()
		if err == nil && st.Leader == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("member %d still has a leader after 30 s (%v)", i, err)
		}
	}
}

// clusterWithLeader starts a three-member cluster, closed when the test
// ends, and returns it with the index of its leader.
func clusterWithLeader(t *testing.T) (*etcdtest.Cluster, int) {
	t.Helper()
	c, err := etcdtest.StartCluster(t.TempDir(), 3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	lead := c.Leader()
	if lead < 0 {
		t.Fatal("no leader")
	}
	return c, lead
}

// TestCommitDeadLeader: a commit sent to a follower just after the leader
// crashed, before the follower noticed (the cluster's election timeout is
// 2 s), is not held for the whole request timeout (5 s): its attempt ends
// after the health timeout (1 s) with store.ErrUnavailable, its outcome
// unknown and not sent again. Once a new leader is elected the store
// writes again.
func TestCommitDeadLeader(t *testing.T) {
	c, lead := clusterWithLeader(t)
	db := openMember(t, c, (lead+1)%3)

	took, err := bumpAfter(db, func() { c.Kill(lead) })
	if !errors.Is(err, store.ErrUnavailable) || errors.Is(err, etcd.ErrConflict) {
		t.Errorf("commit to a follower of a dead leader = %v, want store.ErrUnavailable", err)
	}
	if took > 3*time.Second {
		t.Errorf("the commit waited %s on the dead leader; one attempt is 1 s", took.Round(time.Millisecond))
	}
	t.Logf("commit answered in %s: %v", took.Round(time.Millisecond), err)

	waitLeader(t, c)
	if _, err := bumpAfter(db, nil); err != nil {
		t.Errorf("write after the election: %v", err)
	}
}

// TestNoQuorum: a member left alone knows it has no leader. A commit it
// gets is refused at once with rpctypes.ErrNoLeader (the request requires
// a leader), so it cannot have applied and is sent again until the
// request timeout; Update then fails with store.ErrUnavailable wrapping
// ErrNoLeader. Health answers within the health timeout (1 s), not the
// request timeout (5 s), for every caller at once.
func TestNoQuorum(t *testing.T) {
	c, lead := clusterWithLeader(t)
	survivor := (lead + 1) % 3
	db := openMember(t, c, survivor)

	took, err := bumpAfter(db, func() {
		c.Kill(lead)
		c.Kill((lead + 2) % 3)
		waitNoLeader(t, c, survivor)
	})
	if !errors.Is(err, store.ErrUnavailable) || !errors.Is(err, rpctypes.ErrNoLeader) {
		t.Errorf("commit without a leader = %v, want store.ErrUnavailable wrapping %v", err, rpctypes.ErrNoLeader)
	}
	if took > 10*time.Second {
		t.Errorf("the commit took %s without a leader; the request timeout is 5 s", took.Round(time.Millisecond))
	}
	t.Logf("commit without a leader answered in %s: %v", took.Round(time.Millisecond), err)

	var wg sync.WaitGroup
	errs, took2 := make([]error, 8), make([]time.Duration, 8)
	for i := range errs {
		wg.Go(func() {
			start := time.Now()
			errs[i] = db.Health()
			took2[i] = time.Since(start)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("Health without a leader = %v, want store.ErrUnavailable", err)
		}
		if took2[i] > 3*time.Second {
			t.Errorf("Health took %s without a leader; the health timeout is 1 s", took2[i].Round(time.Millisecond))
		}
	}
	t.Logf("Health without a leader answered in %s", took2[0].Round(time.Millisecond))
}

// TestKeepAlive: the client's keepalive is one that grpc-go keeps (it
// raises an interval under 10 s to 10 s) and that etcd's members accept
// (they close the connection of a client pinging more often than
// --grpc-keepalive-min-time with GOAWAY "too_many_pings").
func TestKeepAlive(t *testing.T) {
	const grpcLeast = 10 * time.Second // google.golang.org/grpc/internal.KeepaliveMinPingTime
	if etcd.KeepAliveTime < grpcLeast || etcd.KeepAliveTime < embed.DefaultGRPCKeepAliveMinTime {
		t.Errorf("KeepAliveTime %s: grpc-go keeps at least %s, etcd accepts at least %s",
			etcd.KeepAliveTime, grpcLeast, embed.DefaultGRPCKeepAliveMinTime)
	}
}
