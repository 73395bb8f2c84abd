package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/signd/signd/config"
	"github.com/signd/signd/oauth"
	"github.com/signd/signd/store/etcd"
)

// openEtcd connects to the etcd cluster of store.etcd.* (the backend of
// several nodes).
func openEtcd(cfg *config.Config, logger *slog.Logger) (*etcd.DB, error) {
	e := cfg.Store.Etcd
	tlsCfg, err := etcdTLS(e)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), e.DialTimeout+e.RequestTimeout)
	defer cancel()
	db, err := etcd.Open(ctx, etcd.Options{
		Endpoints: e.Endpoints, TLS: tlsCfg, Prefix: e.Prefix,
		DialTimeout: e.DialTimeout, RequestTimeout: e.RequestTimeout, Logger: logger,
	})
	if err != nil {
		return nil, fmt.Errorf("store.etcd (%s): %w", strings.Join(e.Endpoints, ", "), err)
	}
	return db, nil
}

// commitStats is a backend that counts its commits; *etcd.DB is one.
type commitStats interface{ Stats() etcd.Stats }

// etcdTLS is the client TLS configuration: nil (plain HTTP) unless an
// endpoint is https or a TLS file is set. The client certificate (cert_file,
// key_file) authenticates the node to etcd; ca_file replaces the system
// roots.
func etcdTLS(e config.EtcdConfig) (*tls.Config, error) {
	https := false
	for _, ep := range e.Endpoints {
		https = https || strings.HasPrefix(ep, "https://")
	}
	if !https && e.CertFile == "" && e.CAFile == "" {
		return nil, nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if e.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(e.CertFile, e.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("store.etcd.cert_file: %w", err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	if e.CAFile != "" {
		pem, err := os.ReadFile(e.CAFile)
		if err != nil {
			return nil, fmt.Errorf("store.etcd.ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("store.etcd.ca_file: %s holds no PEM certificate", e.CAFile)
		}
		c.RootCAs = pool
	}
	return c, nil
}

// storeName names the store for the start-up log line.
func storeName(cfg *config.Config) string {
	if cfg.Store.BackendName() == config.BackendEtcd {
		return "etcd " + strings.Join(cfg.Store.Etcd.Endpoints, ",") + " " + cfg.Store.Etcd.Prefix
	}
	return cfg.Store.Path
}

// sweepElector is a backend shared by several nodes, whose sweeper runs on
// one node at a time; *etcd.DB satisfies it.
type sweepElector interface {
	Client() *clientv3.Client
	Prefix() string
}

// startSweeper starts the background sweep of expired records: on this
// node alone for bbolt, on the elected node for etcd. stop ends it.
func (s *services) startSweeper(srv *oauth.Server, interval time.Duration) (stop func()) {
	el, ok := s.store.(sweepElector)
	if !ok {
		return srv.StartSweeper(interval)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		leadSweeps(ctx, el, interval, srv.StartSweeper, s.logger.With("service", "oauth"))
	}()
	return func() {
		cancel()
		<-done
	}
}

// sweepLeaseTTL is the lease of the sweeper election, in seconds: a node
// that dies without resigning is replaced after at most this long.
const sweepLeaseTTL = 10

// leadSweeps campaigns in the etcd election prefix "e/sweeper" and runs
// start (the sweeper) while this node leads, until ctx ends. Losing the
// session (etcd unreachable beyond the lease) stops the sweeper and
// campaigns again. A sweep run by two nodes at once would still be correct
// (it is an ordinary transaction); the election only saves the work.
//
// It returns within sweepStopTimeout of ctx ending, quorum or not: the
// campaign is abandoned (campaign), and the resignation and the lease's
// revocation, which let another node take over at once, get that long.
func leadSweeps(ctx context.Context, el sweepElector, interval time.Duration, start func(time.Duration) func(), logger *slog.Logger) {
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
