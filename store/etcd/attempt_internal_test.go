package etcd

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/signd/signd/store"
	"github.com/signd/signd/store/storetest"
)

// scriptedKV answers the Gets and Txn commits sent to it with the errors
// of its script in turn (nil: success; context.DeadlineExceeded: the
// member holds the request until the attempt's deadline), counting them.
type scriptedKV struct {
	clientv3.KV
	mu     sync.Mutex
	script []error
	sent   int
}

func (k *scriptedKV) next(ctx context.Context) error {
	k.mu.Lock()
	err := error(nil)
	if k.sent < len(k.script) {
		err = k.script[k.sent]
	}
	k.sent++
	k.mu.Unlock()
	if errors.Is(err, context.DeadlineExceeded) {
		<-ctx.Done()
		return ctx.Err()
	}
	return err
}

func (k *scriptedKV) Get(ctx context.Context, _ string, _ ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	if err := k.next(ctx); err != nil {
		return nil, err
	}
	return &clientv3.GetResponse{}, nil
}

func (k *scriptedKV) Txn(ctx context.Context) clientv3.Txn { return &scriptedTxn{kv: k, ctx: ctx} }

type scriptedTxn struct {
	kv  *scriptedKV
	ctx context.Context
}

func (t *scriptedTxn) If(...clientv3.Cmp) clientv3.Txn  { return t }
func (t *scriptedTxn) Then(...clientv3.Op) clientv3.Txn { return t }
func (t *scriptedTxn) Else(...clientv3.Op) clientv3.Txn { return t }
func (t *scriptedTxn) Commit() (*clientv3.TxnResponse, error) {
	if err := t.kv.next(t.ctx); err != nil {
		return nil, err
	}
	return &clientv3.TxnResponse{Succeeded: true}, nil
}

// TestAttempts: a read is sent again after an attempt that timed out or
// found the member unavailable, within the request's deadline; a commit
// is sent again only after a refusal for want of a leader (it was not
// proposed), never after an attempt whose outcome is unknown (timed out,
// connection lost: it may have applied).
func TestAttempts(t *testing.T) {
	timeout, lost := context.DeadlineExceeded, status.Error(codes.Unavailable, "error reading from server: EOF")
	for _, tt := range []struct {
		name   string
		commit bool
		script []error
		sent   int
		want   error // nil: success
	}{
		{"read answered", false, nil, 1, nil},
		{"read after timed-out attempts", false, []error{timeout, timeout}, 3, nil},
		{"read after no leader", false, []error{rpctypes.ErrNoLeader, rpctypes.ErrLeaderChanged}, 3, nil},
		{"read not transient", false, []error{rpctypes.ErrCompacted}, 1, rpctypes.ErrCompacted},
		{"read future revision", false, []error{rpctypes.ErrFutureRev}, 1, rpctypes.ErrFutureRev},
		{"read until the request deadline", false, []error{timeout, timeout, timeout, timeout, timeout, timeout}, 3, context.DeadlineExceeded},
		{"commit answered", true, nil, 1, nil},
		{"commit after no leader", true, []error{rpctypes.ErrNoLeader, rpctypes.ErrNoLeader}, 3, nil},
		{"commit timed out: outcome unknown", true, []error{timeout}, 1, context.DeadlineExceeded},
		{"commit connection lost: outcome unknown", true, []error{lost}, 1, lost},
		{"commit request timed out in etcd", true, []error{rpctypes.ErrTimeout}, 1, rpctypes.ErrTimeout},
		{"commit leader lost in etcd", true, []error{rpctypes.ErrTimeoutDueToLeaderFail}, 1, rpctypes.ErrTimeoutDueToLeaderFail},
		{"commit no leader until the deadline", true, []error{rpctypes.ErrNoLeader, rpctypes.ErrNoLeader, rpctypes.ErrNoLeader, timeout}, 4, context.DeadlineExceeded},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fake := &scriptedKV{script: tt.script}
			kv := &attemptKV{KV: fake, attempt: 100 * time.Millisecond}
			// Three attempts of 100 ms (and the pauses) fit in 350 ms.
			ctx, cancel := context.WithTimeout(context.Background(), 350*time.Millisecond)
			defer cancel()
			var err error
			if tt.commit {
				_, err = kv.Txn(ctx).If().Then().Commit()
			} else {
				_, err = kv.Get(ctx, "k")
			}
			if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("error = %v, want %v", err, tt.want)
			}
			if fake.sent != tt.sent {
				t.Errorf("sent %d times, want %d", fake.sent, tt.sent)
			}
		})
	}
}

// TestHealthShared: the Health calls made while a check runs share it: one
// etcd read for all of them, each answered within the health timeout,
// whatever etcd does.
func TestHealthShared(t *testing.T) {
	fake := &scriptedKV{script: []error{context.DeadlineExceeded, context.DeadlineExceeded}}
	db := &DB{prefix: DefaultPrefix, health: 300 * time.Millisecond, timeout: time.Minute}
	db.kv = &attemptKV{KV: fake, attempt: time.Minute}
	var late atomic.Int32
	errs := make([]error, 16)
	storetest.AtOnce(len(errs), func(i int) {
		begin := time.Now()
		errs[i] = db.Health()
		if time.Since(begin) > 2*time.Second {
			late.Add(1)
		}
	})
	for _, err := range errs {
		if !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("Health = %v, want store.ErrUnavailable", err)
		}
	}
	if n := late.Load(); n > 0 {
		t.Errorf("%d Health calls took over 2 s; the health timeout is 300 ms", n)
	}
	if fake.sent != 1 {
		t.Errorf("16 Health calls at once sent %d reads to etcd, want 1", fake.sent)
	}
}
