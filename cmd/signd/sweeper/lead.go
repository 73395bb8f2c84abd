package sweeper

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// Elector is a backend shared by several nodes, whose sweeper runs on one
// node at a time; *etcd.DB satisfies it.
type Elector interface {
	Client() *clientv3.Client
	Prefix() string
}

// sweepLeaseTTL is the lease of the sweeper election, in seconds: a node
// that dies without resigning is replaced after at most this long.
const sweepLeaseTTL = 10

// Lead campaigns in the etcd election prefix "e/sweeper" and runs
// start (the sweeper) while this node leads, until ctx ends. Losing the
// session (etcd unreachable beyond the lease) stops the sweeper and
// campaigns again. A sweep run by two nodes at once would still be correct
// (it is an ordinary transaction); the election only saves the work.
//
// It returns within sweepStopTimeout of ctx ending, quorum or not: the
// campaign is abandoned (campaign), and the resignation and the lease's
// revocation, which let another node take over at once, get that long.
func Lead(ctx context.Context, el Elector, interval time.Duration, start func(time.Duration) func(), logger *slog.Logger) {
	name, _ := os.Hostname()
	name = fmt.Sprintf("%s/%d", name, os.Getpid())
	for ctx.Err() == nil {
		sess, err := concurrency.NewSession(el.Client(), concurrency.WithTTL(sweepLeaseTTL), concurrency.WithContext(ctx))
		if err != nil {
			if ctx.Err() == nil {
				logger.Warn("sweeper election: no etcd session", "err", err)
			}
			wait(ctx, interval)
			continue
		}
		e := concurrency.NewElection(sess, el.Prefix()+"e/sweeper")
		elected := campaign(ctx, e, name) == nil
		if elected {
			logger.Info("this node sweeps expired records (elected)")
			stop := start(interval)
			select {
			case <-ctx.Done():
			case <-sess.Done():
				logger.Warn("sweeper election: etcd session lost; campaigning again")
			}
			stop()
		}
		endSession(ctx, el.Client(), sess, e, elected)
	}
}

// sweepStopTimeout bounds the resignation and the lease revocation of a
// node that stops leading or campaigning.
const sweepStopTimeout = 2 * time.Second

// campaign is e.Campaign(ctx, name) that returns as soon as ctx ends.
// etcd's Campaign, cancelled while it waits for the leader to go, resigns
// with the client's own context: without a quorum that request waits until
// the quorum is back, and a stopping node would wait with it.
// The abandoned call ends when that request fails or the client closes
// (the store's Close, right after the services stop); the lease it
// campaigned with is revoked by endSession, so it can never lead.
func campaign(ctx context.Context, e *concurrency.Election, name string) error {
	done := make(chan error, 1)
	go func() { done <- e.Campaign(ctx, name) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// endSession resigns (when elected) and revokes the session's lease, so
// that another node is elected at once; both within sweepStopTimeout, also
// after ctx ended (a node shutting down hands over) and without a quorum
// (the lease then expires on its own after sweepLeaseTTL).
func endSession(ctx context.Context, c *clientv3.Client, sess *concurrency.Session, e *concurrency.Election, elected bool) {
	sess.Orphan() // stop the keep-alives
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sweepStopTimeout)
	defer cancel()
	if elected {
		_ = e.Resign(rctx) // the revocation below ends it anyway
	}
	_, _ = c.Revoke(rctx, sess.Lease())
}

// wait sleeps d or until ctx ends.
func wait(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
