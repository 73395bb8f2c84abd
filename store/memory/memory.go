package memory

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/signd/signd/store"
)

// Errors of this backend besides the store sentinels.
var (
	// ErrClosed is returned by View, Update, Batch and Secret after Close.
	ErrClosed = errors.New("store: memory store is closed")
	// ErrTxDone is returned by a write on a Tx whose function has returned.
	ErrTxDone = errors.New("store: transaction has ended")
)

// Options configure New.
type Options struct {
	// Now is the clock for CreatedAt/UpdatedAt and unstamped audit
	// entries; nil means time.Now.
	Now func() time.Time
}

// DB is an in-memory store.Store. It is safe for concurrent use.
type DB struct {
	now func() time.Time

	// committed is the last committed snapshot; nil after Close. Its
	// tables are never written.
	committed atomic.Pointer[state]
	// writer serializes write transactions.
	writer sync.Mutex

	// gate counts running transactions for Close.
	gate store.Gate
}

var (
	_ store.Store   = (*DB)(nil)
	_ store.Batcher = (*DB)(nil)
)

// New returns an empty store.
func New(opts Options) *DB {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	db := &DB{now: now}
	db.committed.Store(newState())
	return db
}

// state is one snapshot: every kind of record and every index.
type state struct {
	users        table[string, *store.User]
	proofs       table[string, []byte] // username 0x00 proof ID → content
	clients      table[string, *store.Client]
	credentials  table[string, *store.Credential]
	credsByOwner set // owner 0x00 credential ID
	tokens       expiring[*store.Token]
	tokensByCode set // code fingerprint ‖ token fingerprint
	requests     expiring[*store.AuthRequest]
	codes        expiring[*store.AuthCode]
	sessions     expiring[*store.Session]
	signingKeys  table[string, *store.SigningKey]
	audit        table[uint64, auditRecord]
	secrets      table[string, []byte]
	revocations  uint64 // store.RevocationReader
}

func newState() *state {
	return &state{
		users:        newTable[string, *store.User](),
		proofs:       newTable[string, []byte](),
		clients:      newTable[string, *store.Client](),
		credentials:  newTable[string, *store.Credential](),
		credsByOwner: newSet(),
		tokens:       newExpiring(tokenMeta),
		tokensByCode: newSet(),
		requests:     newExpiring(requestMeta),
		codes:        newExpiring(codeMeta),
		sessions:     newExpiring(sessionMeta),
		signingKeys:  newTable[string, *store.SigningKey](),
		audit:        newTable[uint64, auditRecord](),
		secrets:      newTable[string, []byte](),
	}
}

// clone returns a writable copy of s: O(1) per table, nodes are copied as
// they are written.
func (s *state) clone() *state {
	return &state{
		users:        s.users.clone(),
		proofs:       s.proofs.clone(),
		clients:      s.clients.clone(),
		credentials:  s.credentials.clone(),
		credsByOwner: s.credsByOwner.clone(),
		tokens:       s.tokens.clone(),
		tokensByCode: s.tokensByCode.clone(),
		requests:     s.requests.clone(),
		codes:        s.codes.clone(),
		sessions:     s.sessions.clone(),
		signingKeys:  s.signingKeys.clone(),
		audit:        s.audit.clone(),
		secrets:      s.secrets.clone(),
		revocations:  s.revocations,
	}
}

// begin registers a running transaction, or returns ErrClosed.
func (db *DB) begin() error { return db.gate.Enter(ErrClosed) }

func (db *DB) end() { db.gate.Leave() }

// View runs fn in a read-only transaction on the committed snapshot; see
// store.Store.
func (db *DB) View(ctx context.Context, fn func(store.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := db.begin(); err != nil {
		return err
	}
	defer db.end()
	t := &tx{s: db.committed.Load(), now: db.now}
	defer t.finish()
	return fn(t)
}

// Update runs fn in one write transaction; see store.Store. Write
// transactions are serialized; fn works on a copy-on-write clone of the
// committed snapshot, which replaces it only if fn returns nil.
func (db *DB) Update(ctx context.Context, fn func(store.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return db.update(fn)
}

// update is Update without the context check.
func (db *DB) update(fn func(store.Tx) error) error {
	if err := db.begin(); err != nil {
		return err
	}
	defer db.end()
	db.writer.Lock()
	defer db.writer.Unlock()
	work := db.committed.Load().clone()
	t := &tx{s: work, writable: true, now: db.now}
	defer t.finish() // also when fn panics: the clone is dropped
	if err := fn(t); err != nil {
		return err
	}
	db.committed.Store(work)
	return nil
}

// Batch runs fn in a write transaction: csc.Store's group commit. With no
// commit to share it is Update, so fn runs exactly once (the contract of
// Batch allows more).
func (db *DB) Batch(ctx context.Context, fn func(store.Tx) error) error {
	return db.Update(ctx, fn)
}

// Close waits for running transactions, then drops every record. Later
// calls fail with ErrClosed; closing again does nothing.
func (db *DB) Close() error {
	db.gate.Close()
	db.committed.Store(nil)
	return nil
}

// Secret returns the random key stored under name, creating it with size
// bytes from crypto/rand on first use; a stored key of another size is an
// error (the name is reused for something else). The same contract as
// bolt's DB.Secret, except that the key lives as long as the DB.
func (db *DB) Secret(ctx context.Context, name string, size int) ([]byte, error) {
	if err := store.CheckSecretRequest(ctx, name, size); err != nil {
		return nil, err
	}
	var key []byte
	err := db.update(func(stx store.Tx) error {
		secrets := stx.(*tx).s.secrets
		v, ok := secrets.get(name)
		var created bool
		var err error
		if key, created, err = store.SecretKey(name, size, v, ok); err != nil || !created {
			return err
		}
		secrets.put(name, bytes.Clone(key))
		return nil
	})
	if err != nil {
		return nil, err
	}
	return key, nil
}

// tx implements store.Tx on one snapshot (View) or one clone (Update).
type tx struct {
	s        *state
	writable bool
	done     bool
	now      func() time.Time
}

var _ store.Tx = (*tx)(nil)

// finish ends the transaction: later writes fail with ErrTxDone instead of
// writing to a snapshot that may be committed by then.
func (t *tx) finish() { t.done = true }

// writes returns ErrTxDone after the transaction ended and
// store.ErrReadOnly inside View.
func (t *tx) writes() error {
	switch {
	case t.done:
		return ErrTxDone
	case !t.writable:
		return store.ErrReadOnly
	}
	return nil
}

// validator is a record that checks itself (store.User, store.Token, …).
type validator interface{ Validate() error }

// checkWrite refuses the write of r: ErrTxDone after the transaction,
// store.ErrReadOnly inside View, else r's own Validate error.
func (t *tx) checkWrite(r validator) error {
	if err := t.writes(); err != nil {
		return err
	}
	return r.Validate()
}

// stamp returns the store clock in UTC, without a monotonic reading.
func (t *tx) stamp() time.Time { return t.now().UTC().Round(0) }
