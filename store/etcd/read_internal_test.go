package etcd

import (
	"context"
	"net"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"

	"github.com/signd/signd/store"
)

// countKV counts the reads of each kind and passes them on. behind, it
// is a member that has not applied the snapshot revision yet: its
// serializable reads at a revision fail with ErrFutureRev.
type countKV struct {
	clientv3.KV
	behind                     bool
	linearizable, serializable atomic.Int32
}

func (k *countKV) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	if clientv3.OpGet(key, opts...).IsSerializable() {
		k.serializable.Add(1)
		if k.behind {
			return nil, rpctypes.ErrFutureRev
		}
	} else {
		k.linearizable.Add(1)
	}
	return k.KV.Get(ctx, key, opts...)
}

// TestSnapshotReads: without the watch cache (off, or reloading: the
// direct path), the first read of a transaction is linearizable, the
// later ones serializable at the snapshot; when the member answering has
// not applied the snapshot yet (ErrFutureRev), the read is made
// linearizable and the transaction reads and commits as usual.
func TestSnapshotReads(t *testing.T) {
	db := openEmbedded(t, Options{NoCache: true})
	ctx := context.Background()
	counted := &countKV{KV: db.kv}
	db.kv = counted
	if err := db.Update(ctx, func(tx store.Tx) error {
		return tx.CreateUser(&store.User{ID: "id-alice", Username: "alice", Status: store.UserActive})
	}); err != nil {
		t.Fatal(err)
	}
	bump := func() error {
		return db.Update(ctx, func(tx store.Tx) error {
			if _, err := tx.User("bob"); err == nil { // a first read: linearizable
				t.Error("bob exists")
			}
			u, err := tx.User("alice") // a later one: serializable
			if err != nil {
				return err
			}
			u.FailedPINs++
			return tx.PutUser(u)
		})
	}
	before := counted.linearizable.Load()
	if err := bump(); err != nil {
		t.Fatal(err)
	}
	if got := counted.linearizable.Load() - before; got != 1 || counted.serializable.Load() == 0 {
		t.Errorf("%d linearizable reads, %d serializable: want 1 and the rest serializable", got, counted.serializable.Load())
	}

	behind := &countKV{KV: counted.KV, behind: true}
	db.kv = behind
	if err := bump(); err != nil {
		t.Fatal(err)
	}
	if behind.serializable.Load() == 0 || behind.linearizable.Load() < 2 {
		t.Errorf("behind: %d serializable reads, %d linearizable", behind.serializable.Load(), behind.linearizable.Load())
	}
	db.kv = counted.KV
	err := db.View(ctx, func(tx store.Tx) error {
		u, err := tx.User("alice")
		if err == nil && u.FailedPINs != 2 {
			t.Errorf("FailedPINs = %d, want 2", u.FailedPINs)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// openEmbedded opens a store with opts on a one-member etcd started for
// the test.
func openEmbedded(t *testing.T, opts Options) *DB {
	t.Helper()
	opts.Endpoints, opts.RequestTimeout = startEmbedded(t), 30*time.Second
	db, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// startEmbedded starts a one-member etcd with the server's defaults
// (--max-txn-ops 128, --max-request-bytes 1.5 MiB), without fsync, stopped
// when the test ends, and returns its client URL. (etcdtest imports this
// package: tests inside it cannot use etcdtest.)
func startEmbedded(t *testing.T) []string {
	t.Helper()
	var addrs []string
	for range 2 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, l.Addr().String())
		l.Close()
	}
	client := url.URL{Scheme: "http", Host: addrs[0]}
	peer := url.URL{Scheme: "http", Host: addrs[1]}
	cfg := embed.NewConfig()
	cfg.Name = "defaults"
	cfg.Dir = t.TempDir()
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.LogLevel = "error"
	cfg.UnsafeNoFsync = true
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		t.Fatal(err)
	case <-time.After(time.Minute):
		t.Fatal("etcd did not become ready in a minute")
	}
	return []string{client.String()}
}
