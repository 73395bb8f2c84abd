package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/signd/signd/config"
	"github.com/signd/signd/store"
	"github.com/signd/signd/store/bolt"
	"github.com/signd/signd/store/etcd"
)

// txStore is what prepare and the store measurement need of a backend.
type txStore interface {
	Update(ctx context.Context, fn func(store.Tx) error) error
	Close() error
}

// openConfigStore loads the signd config file and opens its store
// (openStore).
func openConfigStore(ctx context.Context, file string) (txStore, error) {
	cfg, err := config.Load(config.Options{File: file})
	if err != nil {
		return nil, err
	}
	return openStore(ctx, cfg)
}

// openStore opens the backend of cfg: the bbolt file (the daemon must be
// stopped) or the etcd cluster (plain HTTP on loopback: this tool does not
// dial etcd over TLS).
func openStore(ctx context.Context, cfg *config.Config) (txStore, error) {
	if cfg.Store.BackendName() != config.BackendEtcd {
		db, err := bolt.Open(cfg.Store.Path, bolt.Options{Timeout: time.Second})
		if err != nil {
			return nil, fmt.Errorf("%w (prepare writes the store directly: stop the daemon first)", err)
		}
		return db, nil
	}
	e := cfg.Store.Etcd
	if e.CertFile != "" || e.CAFile != "" {
		return nil, errors.New("store.etcd with TLS files: signd-load talks to a loopback etcd over plain HTTP only")
	}
	for _, ep := range e.Endpoints {
		if _, err := loopback(ep); err != nil {
			return nil, fmt.Errorf("store.etcd.endpoints: %w", err)
		}
	}
	return etcd.Open(ctx, etcd.Options{
		Endpoints: e.Endpoints, Prefix: e.Prefix, DialTimeout: e.DialTimeout, RequestTimeout: e.RequestTimeout, Node: e.Node,
		HealthTimeout: e.HealthTimeout,
		NoCache:       !e.Cache,
	})
}
