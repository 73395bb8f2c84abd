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

	"github.com/signd/signd/cmd/signd/sweeper"
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

// startSweeper starts the background sweep of expired records: on this
// node alone for bbolt, on the elected node for etcd. stop ends it.
func (s *services) startSweeper(srv *oauth.Server, interval time.Duration) (stop func()) {
	el, ok := s.store.(sweeper.Elector)
	if !ok {
		return srv.StartSweeper(interval)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		sweeper.Lead(ctx, el, interval, srv.StartSweeper, s.logger.With("service", "oauth"))
	}()
	return func() {
		cancel()
		<-done
	}
}
