package storeopen

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/signd/signd/config"
	"github.com/signd/signd/internal/safepath"
	"github.com/signd/signd/store"
	"github.com/signd/signd/store/bolt"
	"github.com/signd/signd/store/etcd"
)

// Backend is the store the daemon opened: the transactional store (with
// group commit where it has Batch, see store.Batcher) and the named secrets
// that outlive restarts (the CSC page-token key).
type Backend interface {
	store.Store
	Secret(ctx context.Context, name string, size int) ([]byte, error)
}

// store/bolt is the daemon's backend, and signHash's SAD transactions share
// its commits (group commit); store/etcd is the backend of several nodes
// (store.backend etcd).
var (
	_ Backend       = (*bolt.DB)(nil)
	_ store.Batcher = (*bolt.DB)(nil)
	_ Backend       = (*etcd.DB)(nil)
	_ store.Batcher = (*etcd.DB)(nil)
)

// Open opens the configured backend: the etcd cluster
// (store.backend etcd, see openEtcd), or the bbolt file, creating its
// directory (0700) if needed where no other user controls it (safepath.DataDir);
// logger (nil for none) hears what the store does on its own.
func Open(cfg *config.Config, logger *slog.Logger) (Backend, error) {
	return open(cfg, logger, true)
}

// OpenCommand opens the configured backend for a one-shot command (a few
// transactions): as Open without a logger, and on etcd without the watch
// cache (store.etcd.cache), whose load would read the whole store.
func OpenCommand(cfg *config.Config) (Backend, error) {
	return open(cfg, nil, false)
}

func open(cfg *config.Config, logger *slog.Logger, cache bool) (Backend, error) {
	if cfg.Store.BackendName() == config.BackendEtcd {
		return openEtcd(cfg, logger, cache)
	}
	// Only where no other user can redirect the mkdir; elsewhere bolt.Open
	// refuses the place and says why.
	if dir := filepath.Dir(cfg.Store.Path); safepath.DataDir(os.Geteuid()).Parents(dir) == nil {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("store directory: %w", err)
		}
	}
	return bolt.Open(cfg.Store.Path, bolt.Options{
		Timeout: cfg.Store.OpenTimeout, VerifyOnOpen: cfg.Store.VerifyOnOpen, Logger: logger,
	})
}

// openEtcd connects to the etcd cluster of store.etcd.* (the backend of
// several nodes), with the watch cache if cache and store.etcd.cache.
func openEtcd(cfg *config.Config, logger *slog.Logger, cache bool) (*etcd.DB, error) {
	e := cfg.Store.Etcd
	tlsCfg, err := etcdTLS(e)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), e.DialTimeout+e.RequestTimeout)
	defer cancel()
	db, err := etcd.Open(ctx, etcd.Options{
		Endpoints: e.Endpoints, TLS: tlsCfg, Prefix: e.Prefix,
		DialTimeout: e.DialTimeout, RequestTimeout: e.RequestTimeout, HealthTimeout: e.HealthTimeout, Logger: logger, Node: e.Node,
		NoCache: !cache || !e.Cache,
	})
	if err != nil {
		return nil, fmt.Errorf("store.etcd (%s): %w", strings.Join(e.Endpoints, ", "), err)
	}
	if logger != nil {
		// Two nodes of one name stay correct but contend on one chain head:
		// the name in every node's log shows it.
		logger.Info("etcd store: this node appends to its own audit chain", "node", e.Node, "bucket", store.AuditChainBucket(e.Node))
	}
	return db, nil
}

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

// Name names the store for the start-up log line.
func Name(cfg *config.Config) string {
	if cfg.Store.BackendName() == config.BackendEtcd {
		return "etcd " + strings.Join(cfg.Store.Etcd.Endpoints, ",") + " " + cfg.Store.Etcd.Prefix
	}
	return cfg.Store.Path
}
