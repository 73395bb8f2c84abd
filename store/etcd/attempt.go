package etcd

import (
	"context"
	"errors"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// attemptKV is the clientv3.KV of a DB: every Get and every Txn's Commit
// is tried in attempts of at most attempt each, within the context's
// deadline (the request timeout), so that a member that does not answer
// (its leader is gone and it does not know yet, its host is down) costs
// one attempt, not the whole request (doc.go, "Timeouts and failover").
//
//   - A Get whose attempt timed out or found the member unavailable (no
//     leader, connection lost) is sent again: a read has no effect.
//   - A Commit is sent again only when the member refused it before
//     proposing it (rpctypes.ErrNoLeader: the request carries
//     clientv3.WithRequireLeader, which the member checks before it
//     handles the request), so it cannot have applied. Any other failure
//     (the attempt timed out, the connection dropped) leaves the outcome
//     unknown: the Txn may have applied, or may still apply, and is
//     returned as it is, never sent again.
//
// Put, Delete, Do and Compact, which the store does not send, are
// clientv3's.
type attemptKV struct {
	clientv3.KV
	attempt time.Duration
}

// Get runs the read in attempts until one answers, the error is not
// transient, or ctx ends; it returns the last attempt's result.
func (k *attemptKV) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	for n := 1; ; n++ {
		actx, cancel := context.WithTimeout(ctx, k.attempt)
		resp, err := k.KV.Get(actx, key, opts...)
		cancel()
		if err == nil || ctx.Err() != nil || !transient(err) {
			return resp, err
		}
		if pause(ctx, n) != nil {
			return resp, err
		}
	}
}

// Txn returns a Txn whose Commit is tried in attempts (see attemptKV).
func (k *attemptKV) Txn(ctx context.Context) clientv3.Txn {
	return &attemptTxn{kv: k, ctx: ctx}
}

// attemptTxn records a Txn to send it in attempts; like clientv3's, it is
// built once (If, Then, Else) and committed once.
type attemptTxn struct {
	kv        *attemptKV
	ctx       context.Context
	cmps      []clientv3.Cmp
	then, els []clientv3.Op
}

func (t *attemptTxn) If(cs ...clientv3.Cmp) clientv3.Txn {
	t.cmps = append(t.cmps, cs...)
	return t
}

func (t *attemptTxn) Then(ops ...clientv3.Op) clientv3.Txn {
	t.then = append(t.then, ops...)
	return t
}

func (t *attemptTxn) Else(ops ...clientv3.Op) clientv3.Txn {
	t.els = append(t.els, ops...)
	return t
}

// Commit sends the Txn, again only while a member refuses it for want of
// a leader (not applied), within ctx.
func (t *attemptTxn) Commit() (*clientv3.TxnResponse, error) {
	for n := 1; ; n++ {
		actx, cancel := context.WithTimeout(t.ctx, t.kv.attempt)
		resp, err := t.kv.KV.Txn(actx).If(t.cmps...).Then(t.then...).Else(t.els...).Commit()
		cancel()
		if err == nil || t.ctx.Err() != nil || !errors.Is(err, rpctypes.ErrNoLeader) {
			return resp, err
		}
		if pause(t.ctx, n) != nil {
			return resp, err
		}
	}
}

// pause waits before attempt n+1: 10 ms per attempt made, at most
// 100 ms, so that a member answering at once (no leader) is not asked in a
// busy loop while the cluster elects one (which takes etcd's election
// timeout, 1 s by default). It fails when ctx ends first.
func pause(ctx context.Context, n int) error {
	return sleep(ctx, min(time.Duration(n)*10*time.Millisecond, 100*time.Millisecond))
}

// sleep waits d; it fails when ctx ends first.
func sleep(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// transient reports whether a read may succeed if sent again: its attempt
// ran out of time, or the member was unavailable (no leader, the leader
// changed, the connection is gone).
func transient(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ee rpctypes.EtcdError
	if errors.As(err, &ee) {
		return ee.Code() == codes.Unavailable
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded:
		return true
	}
	return false
}
