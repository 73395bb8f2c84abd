package admin

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/signd/signd/hsm/hsmtest/softtoken"
	"github.com/signd/signd/store"
	"github.com/signd/signd/store/etcd"
	"github.com/signd/signd/store/etcd/etcdtest"
)

// etcdServer starts an embedded one-member etcd for the test.
func etcdServer(t *testing.T) *etcdtest.Server {
	t.Helper()
	srv, err := etcdtest.Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

// openEtcd opens a store on prefix of srv as node, through a client whose
// requests pass intercept (nil: none), closed when the test ends.
func openEtcd(t *testing.T, srv *etcdtest.Server, prefix, node string, intercept grpc.UnaryClientInterceptor) *etcd.DB {
	t.Helper()
	cfg := clientv3.Config{Endpoints: srv.Endpoints, DialTimeout: 5 * time.Second}
	if intercept != nil {
		cfg.DialOptions = []grpc.DialOption{grpc.WithChainUnaryInterceptor(intercept)}
	}
	cli, err := clientv3.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	db, err := etcd.Open(context.Background(), etcd.Options{Client: cli, Prefix: prefix, Node: node, NoCache: true,
		RequestTimeout: 30 * time.Second, HealthTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// lateCommit sits between a DB and etcd. Armed, it answers the next Txn
// as a connection that dropped after the send does (the outcome is
// unknown: store.ErrOutcomeUnknown), and keeps it: send makes it arrive
// later, as a proposal still in flight does. With onRead it arrives on
// its own, right after the next read was answered.
type lateCommit struct {
	mu     sync.Mutex
	armed  bool
	onRead bool
	held   func() (applied bool, err error)
	// sent is the outcome of the held Txn once it arrived.
	sent    bool
	applied bool
}

func (l *lateCommit) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	l.mu.Lock()
	if l.armed && method == "/etcdserverpb.KV/Txn" {
		l.armed = false
		l.held = func() (bool, error) {
			resp := new(etcdserverpb.TxnResponse)
			err := invoker(context.Background(), method, req, resp, cc, opts...)
			return resp.Succeeded, err
		}
		l.mu.Unlock()
		return status.Error(codes.Unavailable, "error reading from server: EOF")
	}
	arrive := l.onRead && l.held != nil && !l.sent && method == "/etcdserverpb.KV/Range"
	l.mu.Unlock()
	err := invoker(ctx, method, req, reply, cc, opts...)
	if arrive {
		if serr := l.send(); serr != nil {
			return serr
		}
	}
	return err
}

// send makes the held Txn arrive at etcd and records whether it applied.
func (l *lateCommit) send() error {
	l.mu.Lock()
	held := l.held
	l.mu.Unlock()
	if held == nil {
		return fmt.Errorf("no Txn held")
	}
	applied, err := held()
	l.mu.Lock()
	l.sent, l.applied = true, applied
	l.mu.Unlock()
	return err
}

// TestSettleLateCommitEtcd: on etcd, a key's record whose commit answered
// nothing (the connection dropped after the send) arrives at etcd later —
// during the read that settles the key's fate, or after it. Whenever it
// arrives, the key and its record agree: arriving during that read (a
// fence), the record is found and the key kept — a plain read found
// nothing, and the key was destroyed under the record that then applied;
// arriving after, the commit fails its guard (against the fence, and here
// also against the act's failed entry appended to the node's audit chain
// since) and the key is destroyed with no record naming it. The fence
// alone refusing a late commit is store/etcd's TestFenceRefusesLateCommit.
func TestSettleLateCommitEtcd(t *testing.T) {
	srv := etcdServer(t)
	ctx := context.Background()
	acts := []struct {
		name   string
		do     func(l *Local) error
		stored func(tx store.Tx) (int, error)
	}{
		{name: "credential", do: func(l *Local) error {
			_, err := l.CreateCredential(ctx, operator, CreateCredentialRequest{User: "alice", Algo: store.AlgRSA2048, Subject: "CN=Alice"})
			return err
		}, stored: func(tx store.Tx) (int, error) {
			cs, err := tx.Credentials("alice", "", 0)
			return len(cs), err
		}},
		{name: "tsa", do: func(l *Local) error {
			_, err := l.EnrollTSA(ctx, operator, EnrollTSARequest{Algo: "rsa-2048"})
			return err
		}, stored: func(tx store.Tx) (n int, err error) {
			err = store.AuditEntries(tx, 1, func(e *store.AuditEntry) error {
				if e.Kind == store.AuditTSAEnrolled && e.Outcome == store.AuditOK {
					n++
				}
				return nil
			})
			return n, err
		}},
	}
	for _, op := range acts {
		for _, during := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/arrives during the settling read: %v", op.name, during), func(t *testing.T) {
				late := &lateCommit{onRead: during}
				db := openEtcd(t, srv, srv.Prefix(), "n1", late.intercept)
				if err := db.Update(ctx, func(tx store.Tx) error {
					return tx.CreateUser(&store.User{ID: "id-alice", Username: "alice", Status: store.UserActive})
				}); err != nil {
					t.Fatal(err)
				}
				tok := softtoken.New(softtoken.Options{})
				l := New(Config{Store: db, Keys: tokenLike{Token: tok}})
				late.mu.Lock()
				late.armed = true
				late.mu.Unlock()
				err := op.do(l)
				if !during {
					if serr := late.send(); serr != nil {
						t.Fatalf("the late Txn: %v", serr)
					}
				}
				if !late.sent {
					t.Fatalf("%s = %v: no Txn was held and sent late", op.name, err)
				}
				if (err == nil) != during {
					t.Errorf("%s = %v (%s), want success: %v", op.name, err, KindOf(err), during)
				}
				var records int
				if verr := db.View(ctx, func(tx store.Tx) (err error) {
					records, err = op.stored(tx)
					return err
				}); verr != nil {
					t.Fatal(verr)
				}
				infos, kerr := tok.Keys(ctx)
				if kerr != nil || len(infos) != records || records != map[bool]int{true: 1}[during] {
					t.Errorf("the late Txn applied: %v; records stored: %d; key pairs in the token: %d, %v; want both %d",
						late.applied, records, len(infos), kerr, map[bool]int{true: 1}[during])
				}
			})
		}
	}
}

// etcdNodes opens n stores on one fresh prefix of srv, as n signd nodes
// of one cluster.
func etcdNodes(t *testing.T, srv *etcdtest.Server, n int) []store.Store {
	prefix := srv.Prefix()
	dbs := make([]store.Store, n)
	for i := range dbs {
		dbs[i] = openEtcd(t, srv, prefix, fmt.Sprintf("n%d", i+1), nil)
	}
	return dbs
}
