package etcd

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/signd/signd/store"
)

// faultKV passes requests on to etcd, except: readErr fails every Get
// (the cluster lost its quorum); a Txn is answered with txnErr — after it
// was sent to etcd and applied when apply is set (its answer lost on the
// way back), before anything is sent otherwise; conflict answers every
// Txn as a failed guard. beforeAnswer runs after a Txn applied, before
// its answer. hold answers the next Txn with txnErr without sending it,
// and keeps it in late: a proposal still in flight, that the test makes
// arrive later.
type faultKV struct {
	clientv3.KV
	readErr, txnErr error
	apply, conflict bool
	beforeAnswer    func()
	hold            bool
	late            func() (*clientv3.TxnResponse, error)
}

func (k *faultKV) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	if k.readErr != nil {
		return nil, k.readErr
	}
	return k.KV.Get(ctx, key, opts...)
}

func (k *faultKV) Txn(ctx context.Context) clientv3.Txn {
	return &faultTxn{k: k, ctx: ctx, Txn: k.KV.Txn(ctx)}
}

type faultTxn struct {
	clientv3.Txn
	k    *faultKV
	ctx  context.Context
	cmps []clientv3.Cmp
	ops  []clientv3.Op
}

func (t *faultTxn) If(cs ...clientv3.Cmp) clientv3.Txn {
	t.Txn, t.cmps = t.Txn.If(cs...), append(t.cmps, cs...)
	return t
}

func (t *faultTxn) Then(ops ...clientv3.Op) clientv3.Txn {
	t.Txn, t.ops = t.Txn.Then(ops...), append(t.ops, ops...)
	return t
}

func (t *faultTxn) Else(ops ...clientv3.Op) clientv3.Txn { t.Txn = t.Txn.Else(ops...); return t }

func (t *faultTxn) Commit() (*clientv3.TxnResponse, error) {
	if t.k.hold {
		t.k.hold = false
		kv, cmps, ops := t.k.KV, t.cmps, t.ops
		t.k.late = func() (*clientv3.TxnResponse, error) {
			return kv.Txn(context.Background()).If(cmps...).Then(ops...).Commit()
		}
		return nil, t.k.txnErr
	}
	if t.k.conflict {
		return &clientv3.TxnResponse{Succeeded: false}, nil
	}
	if !t.k.apply {
		if t.k.txnErr != nil {
			return nil, t.k.txnErr
		}
		return t.Txn.Commit()
	}
	resp, err := t.Txn.Commit()
	if err != nil {
		return nil, err
	}
	if t.k.beforeAnswer != nil {
		t.k.beforeAnswer()
	}
	if t.k.txnErr != nil {
		return nil, t.k.txnErr
	}
	return resp, nil
}

// TestOutcomeUnknown: store.MayHaveCommitted holds only for a commit
// that was sent and whose answer was lost (store.ErrOutcomeUnknown, still
// store.ErrUnavailable), the caller's context ending after the send
// included; a failed read inside the transaction (nothing is sent), a
// commit refused for want of a leader, the conflict retry limit and a
// context that ended before the send are plain failures: nothing
// committed, and a caller may undo what it did outside the store.
func TestOutcomeUnknown(t *testing.T) {
	lost := status.Error(codes.Unavailable, "error reading from server: EOF")
	noQuorum := fmt.Errorf("etcdserver: %w", errors.New("no quorum"))
	for _, tt := range []struct {
		name    string
		fault   faultKV
		cancel  string // "fn": ctx ends before the commit; "answer": after it applied
		maybe   bool   // MayHaveCommitted
		applied bool   // the user is stored
		wantCtx bool   // errors.Is(err, context.Canceled)
	}{
		{name: "read fails in the transaction", fault: faultKV{readErr: noQuorum}},
		{name: "commit refused: no leader", fault: faultKV{txnErr: rpctypes.ErrNoLeader}},
		{name: "conflict retry limit", fault: faultKV{conflict: true}},
		{name: "context ended before the commit", cancel: "fn", wantCtx: true},
		{name: "commit applied, answer lost", fault: faultKV{apply: true, txnErr: lost}, maybe: true, applied: true},
		{name: "commit applied, context ended before the answer", fault: faultKV{apply: true, txnErr: context.Canceled}, cancel: "answer", maybe: true, applied: true, wantCtx: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			db := openEmbedded(t, Options{NoCache: true, MaxAttempts: 3})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			fault := &tt.fault
			fault.KV = db.kv
			if tt.cancel == "answer" {
				fault.beforeAnswer = cancel
			}
			db.kv = fault
			err := db.Update(ctx, func(tx store.Tx) error {
				if err := tx.CreateUser(&store.User{ID: "id-alice", Username: "alice", Status: store.UserActive}); err != nil {
					return err
				}
				if tt.cancel == "fn" {
					cancel()
				}
				return nil
			})
			if !errors.Is(err, store.ErrUnavailable) && !tt.wantCtx {
				t.Fatalf("Update = %v, want store.ErrUnavailable", err)
			}
			if tt.wantCtx != errors.Is(err, context.Canceled) {
				t.Fatalf("Update = %v, want context.Canceled: %v", err, tt.wantCtx)
			}
			if got := store.MayHaveCommitted(err); got != tt.maybe {
				t.Errorf("MayHaveCommitted(%v) = %v, want %v", err, got, tt.maybe)
			}
			if got := errors.Is(err, store.ErrOutcomeUnknown); got != tt.maybe {
				t.Errorf("errors.Is(%v, store.ErrOutcomeUnknown) = %v, want %v", err, got, tt.maybe)
			}
			db.kv = fault.KV
			verr := db.View(context.Background(), func(tx store.Tx) error { _, err := tx.User("alice"); return err })
			if tt.applied != (verr == nil) {
				t.Errorf("alice after the Update: %v, want stored: %v", verr, tt.applied)
			}
		})
	}
}

// TestFenceRefusesLateCommit: a commit whose answer was lost may still be
// in flight (queued at a member, in the log of a leader that died) and
// apply after a read that found it absent. store.Settle reads through a
// fence (DB.Fence): a Txn of a transaction begun before the fence that
// arrives after it fails its guard, so "absent" stays true; one that
// applies before the fence commits is seen by the fence's read, whose
// guard it changed.
func TestFenceRefusesLateCommit(t *testing.T) {
	lost := status.Error(codes.Unavailable, "error reading from server: EOF")
	for _, tt := range []struct {
		name string
		// arrives: the late Txn arrives inside the fence, after its
		// read (else after the fence committed).
		arrives bool
		noCache bool
		want    store.Fate
	}{
		{name: "arrives after the fence", want: store.NotCommitted},
		{name: "arrives during the fence, after its read", arrives: true, want: store.Committed},
		{name: "no cache, arrives after the fence", noCache: true, want: store.NotCommitted},
		{name: "no cache, arrives during the fence, after its read", noCache: true, arrives: true, want: store.Committed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			db := openEmbedded(t, Options{NoCache: tt.noCache, MaxAttempts: 3})
			ctx := context.Background()
			fault := &faultKV{KV: db.kv, txnErr: lost, hold: true}
			db.kv = fault
			err := db.Update(ctx, func(tx store.Tx) error {
				return tx.CreateUser(&store.User{ID: "id-alice", Username: "alice", Status: store.UserActive})
			})
			if !store.MayHaveCommitted(err) || fault.late == nil {
				t.Fatalf("Update = %v, want its Txn held with an unknown outcome", err)
			}
			fault.txnErr = nil
			var arrived *clientv3.TxnResponse
			fate, err := store.Settle(ctx, db, err, func(tx store.Tx) error {
				_, err := tx.User("alice")
				if tt.arrives && arrived == nil {
					var lerr error
					if arrived, lerr = fault.late(); lerr != nil {
						t.Fatalf("the late Txn: %v", lerr)
					}
					if !arrived.Succeeded {
						t.Fatal("the late Txn failed its guard before any fence committed")
					}
				}
				return err
			})
			if err != nil || fate != tt.want {
				t.Fatalf("Settle = %v, %v; want %v", fate, err, tt.want)
			}
			if !tt.arrives {
				if arrived, err = fault.late(); err != nil {
					t.Fatalf("the late Txn: %v", err)
				}
			}
			verr := db.View(ctx, func(tx store.Tx) error { _, err := tx.User("alice"); return err })
			if stored := verr == nil; stored != (fate == store.Committed) {
				t.Errorf("Settle said %v, and alice is stored: %v (%v); the late Txn applied: %v", fate, stored, verr, arrived.Succeeded)
			}
		})
	}
}
