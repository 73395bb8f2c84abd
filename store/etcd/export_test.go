package etcd

import (
	"context"
	"go.uber.org/zap"

	"github.com/signd/signd/store"
	"github.com/signd/signd/store/kv"
)

// FailedPINs reads alice's failed PIN count through a View.
var FailedPINs = pins

// StartEmbedded starts a one-member etcd with the server's defaults for
// the test and returns its client URL.
var StartEmbedded = startEmbedded

// QueuedBatch returns how many Batch calls wait for the next shared
// transaction.
func (db *DB) QueuedBatch() int {
	return db.batch.Queued()
}

// TxnSize runs fns in one write transaction, as a shared commit does, and
// returns the operations, comparisons and bytes its commit would send;
// nothing commits.
func (db *DB) TxnSize(fns ...func(store.Tx) error) (ops, cmps, bytes int, err error) {
	t := newTxn(context.Background(), db, true)
	defer func() { t.done = true }()
	for _, fn := range fns {
		if err := fn(kv.NewTx(t, db.now)); err != nil {
			return 0, 0, 0, err
		}
	}
	if t.err != nil {
		return 0, 0, 0, t.err
	}
	ops, bytes = t.size()
	return ops, len(t.reads) + len(t.ranged), bytes, nil
}

// ClientLogger is the etcd client's zap logger.
func (db *DB) ClientLogger() *zap.Logger { return db.client.GetLogger() }

// ZapLogger is zapLogger.
var ZapLogger = zapLogger
