package etcd

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/sync/singleflight"

	"github.com/signd/signd/store"
	"github.com/signd/signd/store/kv"
	"github.com/signd/signd/store/kv/groupcommit"
)

// Errors of this backend besides the store sentinels.
var (
	// ErrClosed is returned by View, Update, Batch and Secret after Close.
	ErrClosed = errors.New("store: etcd store is closed")
	// ErrTxDone is returned by a write on a Tx whose function has returned.
	ErrTxDone = errors.New("store: transaction has ended")
	// ErrConflict is returned (wrapped in plain store.ErrUnavailable:
	// nothing committed) by an Update whose commit lost to other writers
	// MaxAttempts times in a row.
	ErrConflict = errors.New("store: etcd transaction conflicted too often")
)

// Defaults of Options.
const (
	DefaultPrefix         = "/signd/"
	DefaultDialTimeout    = 5 * time.Second
	DefaultRequestTimeout = 5 * time.Second
	DefaultMaxAttempts    = 64
	// DefaultHealthTimeout bounds one attempt at etcd: Health, and each
	// try of a read or a commit (doc.go, "Timeouts and failover"). It is
	// etcd's default election timeout: a member that lost its leader
	// knows it after about that long.
	DefaultHealthTimeout = time.Second
	// KeepAliveTime is how long a connection to a member may stay silent
	// while a request or stream waits on it before the client pings the
	// member; KeepAliveTime plus the health timeout without an answer and
	// the connection is closed, and its requests fail over. It is gRPC's
	// least (grpc-go raises a shorter one to 10 s, with a warning), and
	// above etcd's default --grpc-keepalive-min-time (5 s): a member
	// closes the connection of a client that pings more often (GOAWAY
	// "too_many_pings"). A member also refuses pings on a connection
	// without a stream, so the client sends none there
	// (PermitWithoutStream off).
	KeepAliveTime = 10 * time.Second
	// DefaultMaxBatch is how many Batch calls share one transaction at
	// most. A signHash consumption sends 8 etcd operations of its own
	// (deleting the SAD, its four party index entries, its code and expiry
	// index entries; the audit entry) plus 5 version keys shared by all,
	// and 1 comparison of its own plus 4 shared (credential, client, user,
	// the audit head): 12 of them (101 operations) stay within
	// DefaultMaxTxnOps with room to spare (TestBatchDefaultFits).
	DefaultMaxBatch = 12
	// DefaultMaxTxnOps is etcd's default --max-txn-ops: a shared commit
	// stays within it (and within 1 MiB), whatever the cluster allows.
	DefaultMaxTxnOps = 128
	// MaxRequestBytes is the gRPC message size the client allows: a proof
	// document (store.MaxProofSize) with its transaction. The etcd server
	// must accept requests this large (--max-request-bytes).
	MaxRequestBytes = store.MaxProofSize + 1<<20
)

// Options configure Open.
type Options struct {
	// Endpoints are the etcd client URLs (https://host:2379, …). Ignored
	// when Client is set.
	Endpoints []string
	// TLS is the client TLS configuration (client certificate and CA);
	// nil dials without TLS. Ignored when Client is set.
	TLS *tls.Config
	// Client is an open client to use instead of dialing Endpoints; Close
	// leaves it open.
	Client *clientv3.Client
	// Prefix is prepended to every key; DefaultPrefix when empty. Several
	// stores may share a cluster under distinct prefixes.
	Prefix string
	// DialTimeout bounds connecting; DefaultDialTimeout when zero.
	DialTimeout time.Duration
	// RequestTimeout bounds each etcd request (one read, one commit),
	// all its attempts together; DefaultRequestTimeout when zero.
	RequestTimeout time.Duration
	// HealthTimeout bounds one attempt at etcd: Health (the daemon's
	// /readyz), and each try of a read or of a commit within
	// RequestTimeout (doc.go, "Timeouts and failover").
	// DefaultHealthTimeout when zero; at most RequestTimeout (a greater
	// value is taken as RequestTimeout).
	HealthTimeout time.Duration
	// MaxAttempts bounds how often Update runs its function when commits
	// conflict; DefaultMaxAttempts when zero.
	MaxAttempts int
	// MaxBatch bounds how many Batch calls share one transaction;
	// DefaultMaxBatch when zero, 1 turns group commit off.
	MaxBatch int
	// MaxTxnOps bounds the operations (and the comparisons) of a shared
	// commit: the calls that would exceed it are committed in the next
	// one. DefaultMaxTxnOps when zero; at most the cluster's
	// --max-txn-ops. A single call's transaction is sent whatever its size.
	MaxTxnOps int
	// Now is the clock for CreatedAt/UpdatedAt; nil means time.Now.
	Now func() time.Time
	// NoCache turns the watch cache off (cache.go): every read of a
	// transaction is then an etcd request. For diagnosis.
	NoCache bool
	// Logger hears the etcd client's own log (zapLogger); nil for none.
	// Ignored when Client is set.
	Logger *slog.Logger
	// Node names the audit chain this node appends to (audit.go): 1 to 63
	// characters of a-z, 0-9, '.', '_' and '-' (store.CheckAuditChain),
	// distinct per node, so that nodes never contend on one chain head.
	// "" appends to the shared chain "" (the bucket audit), as every node
	// did before there were per-node chains: correct, but every commit
	// that appends then compares-and-swaps one head across the cluster.
	Node string
}

// DB is an etcd-backed store.Store. It is safe for concurrent use, and
// several DBs (on several nodes) may share one prefix of one cluster.
type DB struct {
	client     *clientv3.Client
	ownsClient bool
	kv         clientv3.KV
	prefix     string
	timeout    time.Duration
	health     time.Duration
	attempts   int
	maxTxnOps  int
	now        func() time.Time
	// node is the audit chain of this node (Options.Node).
	node string

	// writer serializes this node's write transactions: they would only
	// conflict with each other. Other nodes are kept out by the commit
	// guard.
	writer sync.Mutex
	// batch queues Batch calls for the next shared transaction (batch.go).
	batch groupcommit.Batcher
	stats counters

	// gate counts running transactions for Close.
	gate store.Gate
	// checks shares one Health check among the callers that ask while it
	// runs.
	checks singleflight.Group
	// cache is the watch cache transactions read (cache.go); nil when
	// Options.NoCache.
	cache *watchCache
	// lastKeys holds, by bucket, the greatest key a direct Last read
	// found (an audit chain's head, when the cache does not serve it):
	// the next one reads only from there on (cursor.hinted).
	lastKeys sync.Map
}

var (
	_ store.Store   = (*DB)(nil)
	_ store.Batcher = (*DB)(nil)
)

// Open connects to etcd (or uses opts.Client) and checks that the cluster
// answers within the request timeout.
func Open(ctx context.Context, opts Options) (*DB, error) {
	db := &DB{
		prefix:    opts.Prefix,
		timeout:   opts.RequestTimeout,
		health:    opts.HealthTimeout,
		attempts:  opts.MaxAttempts,
		maxTxnOps: opts.MaxTxnOps,
		now:       opts.Now,
		node:      opts.Node,
	}
	if db.node != "" {
		if err := store.CheckAuditChain(db.node); err != nil {
			return nil, fmt.Errorf("etcd: node name: %w", err)
		}
	}
	if db.prefix == "" {
		db.prefix = DefaultPrefix
	}
	if err := checkPrefix(db.prefix); err != nil {
		return nil, err
	}
	if db.timeout <= 0 {
		db.timeout = DefaultRequestTimeout
	}
	if db.health <= 0 {
		db.health = DefaultHealthTimeout
	}
	db.health = min(db.health, db.timeout)
	if db.attempts <= 0 {
		db.attempts = DefaultMaxAttempts
	}
	db.batch.Max = opts.MaxBatch
	if db.batch.Max <= 0 {
		db.batch.Max = DefaultMaxBatch
	}
	if db.maxTxnOps <= 0 {
		db.maxTxnOps = DefaultMaxTxnOps
	}
	if db.now == nil {
		db.now = time.Now
	}
	db.client = opts.Client
	if db.client == nil {
		if len(opts.Endpoints) == 0 {
			return nil, fmt.Errorf("%w: etcd: no endpoints", store.ErrInvalid)
		}
		dial := opts.DialTimeout
		if dial <= 0 {
			dial = DefaultDialTimeout
		}
		c, err := clientv3.New(clientv3.Config{
			Endpoints:   opts.Endpoints,
			TLS:         opts.TLS,
			DialTimeout: dial,
			// A member that stops answering (its host is gone, the
			// network dropped it) is found by its silence, not by TCP.
			DialKeepAliveTime:    KeepAliveTime,
			DialKeepAliveTimeout: db.health,
			MaxCallSendMsgSize:   MaxRequestBytes,
			MaxCallRecvMsgSize:   MaxRequestBytes,
			Context:              context.WithoutCancel(ctx),
			Logger:               zapLogger(opts.Logger),
		})
		if err != nil {
			return nil, fmt.Errorf("%w: etcd: %v", store.ErrUnavailable, err)
		}
		db.client, db.ownsClient = c, true
	}
	db.kv = &attemptKV{KV: clientv3.NewKV(db.client), attempt: db.health}
	if err := db.check(db.timeout); err != nil {
		db.closeClient()
		return nil, err
	}
	if !opts.NoCache {
		db.cache = newWatchCache(db)
		db.cache.start()
	}
	return db, nil
}

// Client returns the etcd client (for elections and leases beside the
// store).
func (db *DB) Client() *clientv3.Client { return db.client }

// Prefix returns the key prefix of the store.
func (db *DB) Prefix() string { return db.prefix }

// recordKey is the etcd key of key in bucket: prefix "r/" bucket "/" key.
func (db *DB) recordKey(bucket, key string) string {
	return db.prefix + "r/" + bucket + "/" + key
}

// versionKey is the key every commit that writes bucket puts: its
// ModRevision is the revision of the bucket's last change.
func (db *DB) versionKey(bucket string) string { return db.prefix + "v/" + bucket }

// requestContext bounds one etcd request, all its attempts (attemptKV)
// together, and makes a member without a leader refuse it at once
// (rpctypes.ErrNoLeader) instead of holding it until the deadline.
func (db *DB) requestContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(clientv3.WithRequireLeader(ctx), db.timeout)
}

// unavailable maps a failed etcd request: the caller's own cancellation
// stays ctx.Err(), anything else (no quorum, timeout, connection refused)
// is store.ErrUnavailable wrapping the cause.
func (db *DB) unavailable(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("%w: etcd: %w", store.ErrUnavailable, err)
}

// lost maps a failed commit (attemptKV's Txn): refused with
// rpctypes.ErrNoLeader, every attempt was refused before it was proposed
// and nothing applied (db.unavailable); any other failure came after the
// Txn was sent, and its outcome is unknown: store.ErrOutcomeUnknown
// wrapping the cause, or the caller's ctx.Err() when its context ended
// (errors.Is holds for both), so that store.MayHaveCommitted need not
// guess from a context error.
func (db *DB) lost(ctx context.Context, err error) error {
	if errors.Is(err, rpctypes.ErrNoLeader) {
		return db.unavailable(ctx, err)
	}
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("%w: %w", store.ErrOutcomeUnknown, cerr)
	}
	return fmt.Errorf("%w: etcd: %w", store.ErrOutcomeUnknown, err)
}

// Health reports whether the cluster serves a linearizable read (which
// needs a quorum, and a leader) within the health timeout: it returns
// within that time whatever etcd does. The callers that ask while a check
// runs (a probe that arrives before the last one was answered, a metrics
// scrape) share it and its verdict, so that probes do not pile up
// goroutines waiting on etcd.
func (db *DB) Health() error {
	_, err, _ := db.checks.Do("", func() (any, error) { return nil, db.check(db.health) })
	return err
}

// check reads the health key linearizably within d.
func (db *DB) check(d time.Duration) error {
	ctx, cancel := context.WithTimeout(clientv3.WithRequireLeader(context.Background()), d)
	defer cancel()
	if _, err := db.kv.Get(ctx, db.versionKey("health")); err != nil {
		return db.unavailable(context.Background(), err)
	}
	return nil
}

// View runs fn in a read-only transaction: every read at the revision of
// the first one.
func (db *DB) View(ctx context.Context, fn func(store.Tx) error) error {
	return db.gate.Run(ctx, ErrClosed, func() error {
		t := newTxn(ctx, db, false)
		defer func() { t.done = true }()
		err := fn(kv.NewTx(t, db.now))
		if t.err != nil {
			return t.err
		}
		return err
	})
}

// Update runs fn in one write transaction; see store.Store. fn runs again
// (on a fresh snapshot) when the commit finds that another writer changed
// what it read, up to Options.MaxAttempts times: like Batch, fn must have
// no effects outside the transaction.
func (db *DB) Update(ctx context.Context, fn func(store.Tx) error) error {
	return db.update(ctx, false, fn)
}

// Fence runs fn in a write transaction that puts the fence key (prefix
// "v/fence") whatever fn writes; see store.Store. Every commit's guard
// holds only while the fence key is not newer than the transaction's
// snapshot (txn.commit), so once the fence committed, a Txn that began
// before it — one whose answer was lost and that is still in flight, on
// its way to a member or in the log of a leader that died — fails its
// guard if it ever arrives: either it applied before the fence, and fn,
// whose reads the fence's own guard checks, saw it, or it never applies.
func (db *DB) Fence(ctx context.Context, fn func(store.Tx) error) error {
	return db.update(ctx, true, fn)
}

// fenceBucket names the fence key, a version key of no bucket's.
const fenceBucket = "fence"

func (db *DB) update(ctx context.Context, fence bool, fn func(store.Tx) error) error {
	return db.gate.Run(ctx, ErrClosed, func() error {
		db.writer.Lock()
		defer db.writer.Unlock()
		for attempt := range db.attempts {
			if attempt > 0 {
				if err := backoff(ctx, attempt); err != nil {
					return err
				}
			}
			ok, err := db.attempt(ctx, fence, fn)
			if err != nil || ok {
				return err
			}
		}
		return fmt.Errorf("%w: %w (%d attempts)", store.ErrUnavailable, ErrConflict, db.attempts)
	})
}

// attempt runs fn once and commits; false means the guard failed.
func (db *DB) attempt(ctx context.Context, fence bool, fn func(store.Tx) error) (bool, error) {
	t := newTxn(ctx, db, true)
	t.fence = fence
	defer func() { t.done = true }() // also when fn panics: the overlay is dropped
	err := fn(kv.NewTx(t, db.now))
	if t.err != nil {
		return false, t.err
	}
	if err != nil {
		return false, err
	}
	return t.commit()
}

// backoff waits a random time that grows with attempt (capped at 50 ms),
// so that nodes that conflicted do not retry in lockstep.
func backoff(ctx context.Context, attempt int) error {
	return sleep(ctx, time.Duration(rand.Int64N(int64(min(attempt, 50))*int64(time.Millisecond))))
}

// Stats are counters of a DB's transactions since Open: how much the
// nodes contend (Conflicts per Commits), how much group commit shares
// (BatchCalls per Commits) and what reading costs (Barriers and Reads:
// etcd requests besides the commits).
type Stats struct {
	// Commits counts the etcd Txns sent (Update, Batch, Secret), the
	// conflicting ones included.
	Commits uint64
	// Conflicts counts the Txns whose guard failed: another writer
	// changed what the transaction read; it ran again.
	Conflicts uint64
	// BatchCalls counts the Batch calls answered by a committed shared
	// transaction, and BatchRuns the runs of their functions (a conflict
	// runs them all again).
	BatchCalls, BatchRuns uint64
	// Barriers counts the reads that started transactions on the watch
	// cache (shared by the transactions that arrived together), and Reads
	// the reads of records transactions sent to etcd: all of them without
	// the cache (off or reloading), only audit walks with it.
	Barriers, Reads uint64
}

type counters struct {
	commits, conflicts, calls, runs, barriers, reads atomic.Uint64
}

// Stats returns the counters of the DB's write transactions.
func (db *DB) Stats() Stats {
	return Stats{
		Commits: db.stats.commits.Load(), Conflicts: db.stats.conflicts.Load(),
		BatchCalls: db.stats.calls.Load(), BatchRuns: db.stats.runs.Load(),
		Barriers: db.stats.barriers.Load(), Reads: db.stats.reads.Load(),
	}
}

// Close waits for running transactions and closes the client it opened.
// Later calls fail with ErrClosed; closing again does nothing. The data
// stays in etcd.
func (db *DB) Close() error {
	if !db.gate.Close() {
		return nil
	}
	if db.cache != nil {
		db.cache.close()
	}
	return db.closeClient()
}

func (db *DB) closeClient() error {
	if !db.ownsClient {
		return nil
	}
	return db.client.Close()
}

// Secret returns the random key stored under name (kv.Tx.Secret),
// creating it with size bytes from crypto/rand on first use (the first node
// to commit wins; the others read its key). Every node reads the same key.
// A stored key of another size is an error.
func (db *DB) Secret(ctx context.Context, name string, size int) ([]byte, error) {
	return kv.Secret(ctx, db, name, size)
}

// checkPrefix refuses a prefix that would make keys ambiguous.
func checkPrefix(p string) error {
	if strings.ContainsRune(p, 0) {
		return fmt.Errorf("%w: etcd prefix holds 0x00", store.ErrInvalid)
	}
	return nil
}
