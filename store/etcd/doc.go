// Package etcd is the distributed store backend: it implements store.Store
// on an etcd cluster (go.etcd.io/etcd/client/v3), with the same contract as
// store/bolt and store/memory, certified by the same conformance suite
// (store/storetest) against a real embedded etcd server (etcdtest). Several
// signd nodes open the same prefix of one cluster and see one store: a code,
// a refresh token and a SAD are consumed once across all of them, lockout
// counters are exact, and the audit log is one hash chain per node, all
// verified together.
//
// It owns the key layout and the transaction protocol and nothing else:
// validation, hashing, the audit encoding and chain (store.SealAudit) and
// the record types belong to package store; the stored records, indexes and
// the record code are store/kv's, the same code store/bolt runs: a
// transaction is a kv.Tx over txn (kv.go), a kv.Backend whose buckets read
// the snapshot (the node's watch cache, or etcd) through the write overlay.
//
// # Key layout
//
// Every key starts with Options.Prefix (default "/signd/"):
//
//	prefix "r/" bucket "/" key   a record or an index entry
//	prefix "v/" bucket           the bucket's version key (below)
//	prefix "v/fence"             the fence key (DB.Fence, below)
//	prefix "e/sweeper"           the sweeper election (cmd/signd)
//
// The buckets, their keys and the records are store/kv's (see its doc.go;
// tokens in its binary form): users, proofs, clients, credentials, credentials_by_owner,
// tokens with tokens_by_code, tokens_by_expiry and tokens_by_party,
// auth_requests, codes and sessions each with *_by_expiry and *_by_party,
// oidc_keys, admin_requests, audit and audit.<node> (one per node's chain:
// 8-byte big-endian sequence number → canonical entry), audit_chains (the
// registry of chains), secrets. Keys are bytes: fingerprints and big-endian numbers sort as in
// bbolt, so cursors, sweeps and revocation walk the same ranges.
//
// # Transactions: optimistic, guarded by mod revisions
//
// A transaction reads the store at one revision, the snapshot (rev): the
// watch cache's state once it has applied the store's last commit (below),
// so every read but the walks of the audit log is answered from memory.
// Without the cache (Options.NoCache, or while it reloads), every read is
// an etcd request: the first is linearizable and fixes rev, every later
// read asks for rev, serializable (any member that has applied rev answers
// it exactly, with no quorum round; a member behind answers ErrFutureRev
// and the read is made linearizable); the walks of the audit log are
// such reads in both cases. So a View sees one consistent state however
// long it runs, and never blocks a writer. An Update buffers its writes in an overlay (one sorted tree per
// bucket) that its own reads and cursors see, and commits them as ONE etcd
// Txn whose guard is:
//
//   - for every key it read: ModRevision(key) is the one it read (0 for a
//     key read as absent), so nobody wrote, deleted or created it since the
//     snapshot (a "≤ rev" comparison would miss deletions: a deleted key
//     compares as 0);
//   - for every bucket it read as a range (a cursor or ForEach: listings,
//     index scans, sweeps, revocation, the audit head):
//     ModRevision(prefix "v/" bucket) ≤ rev. Every commit that writes a
//     bucket also puts its version key, so a range read is invalidated by
//     any write to its bucket, including inserts and deletes of keys it did
//     not return;
//   - ModRevision(prefix "v/fence") ≤ rev: no fence committed since the
//     snapshot. A fence (DB.Fence, store.Store's) is a write transaction
//     that puts that key whatever else it writes: once it committed, no
//     Txn of a transaction that began before it can apply — one whose
//     answer was lost (store.ErrOutcomeUnknown) and that is still in
//     flight, queued at a member or in the log of a leader that died,
//     fails its guard if it ever arrives. store.Settle reads through a
//     fence to learn whether such a commit applied: a View could read
//     before it applies.
//
// If the guard holds, every write and the version bumps apply atomically;
// if not, the function runs again on a fresh snapshot (with a short random
// backoff), up to Options.MaxAttempts times, then Update fails with
// store.ErrUnavailable wrapping ErrConflict. This is serializable: a
// committed transaction read exactly the state it writes over. Two nodes
// consuming the same SAD both read its key; the first commit deletes it,
// the second's guard fails and its rerun finds the SAD gone. Two wrong
// PINs on two nodes both read the user; the second rerun counts from the
// first's result. Appends to the audit log read the head of the node's
// own chain with a cursor (audit.go: the bucket "audit.<Options.Node>",
// registered in "audit_chains" with its first entry), so an append is a
// compare-and-swap on that head only: nodes with distinct names never
// contend on the audit log, each chain stays one line of sequence
// numbers, and every entry seals its chain and the snapshot revision
// (the cluster order in which verification and export interleave the
// chains; signd audit verify checks every chain from any node). Nodes
// without a name (Options.Node "") share chain "" (the bucket audit) and
// compare-and-swap its head across the cluster, as before there were
// per-node chains.
//
// Within one node, Update takes a mutex, so local writers never conflict
// with each other (they queue, as with bbolt); the guard only has to
// arbitrate between nodes. The version keys make range readers conflict
// with any writer of the bucket — coarse, but bounded: a transaction's
// guard has one comparison per key read plus one per bucket ranged (and
// one for the fence key), and only transactions that scan a bucket pay
// for it. A fence makes every transaction in flight with an older
// snapshot conflict once; fences are rare (only a commit whose answer
// was lost is settled through one). Update's function may
// run more than once, so it must not have effects outside the transaction.
//
// # The watch cache
//
// Each DB keeps a copy of the store (cache.go), as the Kubernetes API
// server's watch cache does: at Open it reads the records of the prefix
// at one revision (pages of one linearizable read's revision; every
// record but the proof documents and the audit chains below), then
// follows an etcd watch of the prefix from the next revision, applying
// each revision whole (etcd sends a revision's events in one response).
// The records sit in a copy-on-write B-tree (google/btree's Clone is
// lazy): a transaction takes an immutable snapshot of it, consistent at
// one revision however long it runs, and the watch never waits for it.
// Each record keeps its ModRevision, what the guard compares. The audit
// chains (bucket audit and audit.<node>) grow forever and are read whole
// only by export and verify: the cache keeps each chain's head (its
// greatest key, all an append reads), and a cursor over a chain reads
// etcd at rev, as without the cache. A deleted head (only tampering
// deletes one) is unknown until a greater key is put: Last then reads
// etcd.
//
// A transaction must not start from a state older than the cluster's when
// it began: a SAD created on another node, a token revoked there, must be
// seen by a transaction that starts after that node answered. So the
// first read of a transaction is a barrier: one linearizable etcd read of
// the greatest ModRevision among the version keys — every commit puts
// one, so it is the revision of the store's last commit — after which the
// transaction waits until the watch has applied that revision, and reads
// the snapshot (rev is the later of the cache's revision and the
// barrier's: the store did not change between them). Barriers are shared
// (barrier.go): a transaction waits for a barrier read that started after
// it arrived, and those that arrive while one is in flight share the
// next, so a node under load sends about one per round trip, not one per
// transaction. Writes need the barrier too: their guard catches a stale
// read only if they write, and a transaction that refuses without
// writing (a SAD not found) must not refuse on a stale state. A signHash
// costs one barrier and one commit, whatever it reads. A failed barrier is
// store.ErrUnavailable, as a failed read.
//
// Correctness never depends on the cache: what a transaction read from it
// is guarded at commit exactly as what it read from etcd (the
// ModRevisions it read), so a cache that missed a write makes the commit
// conflict, never commit over it. When the watch breaks (closed,
// canceled, compacted, its member lost the leader) or lags more than a
// second behind a barrier, the cache reloads in the background and
// transactions read etcd directly meanwhile. Memory: every record but the
// audit log and the proof documents (up to store.MaxProofSize each, read
// one at a time by administrators: read from etcd at rev). Stats counts
// the barriers and the direct reads.
//
// Without the cache (store.etcd.cache false, one-shot commands, a
// reload), an append finds its chain's head with a descending read of
// one key, which etcd answers by reading and sorting the whole range: the
// DB remembers the greatest key it found by bucket (DB.lastKeys) and
// reads only from there to the end of the chain, the few entries
// appended since; when nothing is left from there (entries deleted behind
// the store's back) it reads the whole chain again.
//
// # Group commit
//
// Batch (batch.go) is the node's group commit, shaped like store/bolt's:
// no timer; the first caller commits at once, and the calls that queue
// while a commit is in flight go, in order, into the next transaction —
// one snapshot, one guarded etcd Txn, one raft commit. Every signHash
// appends to the node's audit chain, whose head each commit guards:
// shared, the calls of a node pay one read and one guard of the head
// between them instead of one each, and their entries follow each other in
// the chain in the order the functions ran, all sealed with the one
// snapshot revision. Each function runs after a savepoint (the
// overlay's undo journal): a function that fails or panics is rolled back
// to it alone — its writes dropped, its error or panic returned to its
// caller — and the others commit. A conflict reruns every function of the
// transaction on a fresh snapshot (with backoff, up to MaxAttempts, then
// ErrConflict to every caller); a failed read or a commit whose outcome is
// unknown reaches every caller as store.ErrOutcomeUnknown (a failed
// read, before anything was sent, as plain store.ErrUnavailable). A shared
// transaction holds at most Options.MaxBatch calls and stays within
// Options.MaxTxnOps operations and comparisons (etcd's default
// --max-txn-ops, 128) and 1 MiB: a function that would exceed them is
// rolled back and leads the next transaction. Stats counts commits,
// conflicts and batched calls (cmd/signd publishes them as metrics).
//
// As with bbolt, a View or Update must not call Update on the same DB
// (the node's mutex would deadlock), and a Tx must not be used after its
// function returned (writes then fail with ErrTxDone).
//
// A read that fails (no quorum, timeout) poisons the transaction: it reads
// as absent, and View or Update returns store.ErrUnavailable wrapping the
// cause instead of the function's result; no Txn is sent and nothing
// commits, as with the conflict retry limit (ErrConflict) and a commit
// refused for want of a leader. A commit that was sent and failed the
// same way (its answer lost) is store.ErrOutcomeUnknown, which wraps
// store.ErrUnavailable: the daemon answers 503 to both, and only a caller
// that would undo an effect outside the store tells them apart
// (store.MayHaveCommitted). The caller's context ending before the Txn is
// sent is its ctx.Err() (nothing sent); ending after, ctx.Err() wrapped in
// store.ErrOutcomeUnknown.
//
// # Timeouts and failover
//
// When the leader crashes, its followers learn it only when they miss its
// heartbeats for an election timeout (etcd's --election-timeout, 1 s by
// default; an election takes up to twice that). Until then a follower
// still takes requests: a linearizable read waits for the leader, and a
// commit is forwarded to the dead leader, lost there, and held until the
// client's deadline. So:
//
//   - Every request requires a leader (clientv3.WithRequireLeader): a
//     member that knows it has none (electing, or cut off from the quorum)
//     refuses it at once with rpctypes.ErrNoLeader, before it handles it.
//   - Each read and each commit is tried in attempts (attempt.go) of at
//     most Options.HealthTimeout (1 s), all of them within
//     Options.RequestTimeout (5 s). A read whose attempt timed out or
//     found the member unavailable is sent again (the client takes the
//     next member); a read has no effect. A commit is sent again only
//     when it was refused with ErrNoLeader: it was never proposed, so it
//     cannot have applied, and during an election it goes through as soon
//     as the new leader is elected.
//   - A commit whose attempt timed out, or whose connection dropped, has an
//     unknown outcome: the member may have forwarded it to a leader that
//     replicated it before it died, and the next leader may apply it. It
//     is never sent again. The guard would not make a resend safe in
//     general: it catches a resend only if the transaction wrote a key it
//     read or a bucket it ranged, and a resend it catches is a conflict,
//     whose rerun could not tell its own applied commit from another
//     node's (a consumed SAD would read as spent by someone else). The
//     commit fails with store.ErrOutcomeUnknown (store.ErrUnavailable
//     too): nothing is treated as committed — csc releases no
//     signature, and the SAD may be spent, never twice.
//   - Health (the daemon's /readyz and its metrics) is one linearizable
//     read, one attempt: it answers within the health timeout whatever
//     etcd does. Callers that ask while a check runs share it (a
//     singleflight): probes that come faster than etcd answers do not pile
//     up goroutines, and nothing is cached beyond the check in flight.
//   - The client pings a connection that has a request or a stream waiting
//     after KeepAliveTime (10 s) of silence and closes it when the ping
//     goes unanswered for the health timeout: a member whose host is gone
//     (no TCP reset) is dropped within seconds, not after the kernel's
//     minutes (until then each attempt sent to it costs one health
//     timeout). 10 s is grpc-go's least interval (it raises a shorter
//     one); etcd's members close the connection of a client that pings
//     more often than their --grpc-keepalive-min-time (5 s) with
//     "too_many_pings", and refuse pings on a connection with no stream,
//     so the client sends none there.
//
// A request waiting on a dead leader thus moves on after one attempt, and
// rides out an election within the request timeout; without a quorum a
// request fails after the request timeout and Health after the health
// timeout.
//
// # Limits of the cluster
//
// One transaction is one etcd request: the etcd server must accept
// requests of MaxRequestBytes (--max-request-bytes; a proof document is up
// to store.MaxProofSize) and transactions of many operations
// (--max-txn-ops: revoking a user deletes each of their tokens, codes and
// sessions with every index entry in one transaction). Compaction of old
// revisions must leave a transaction's snapshot alive while it runs (the
// default hourly compaction does).
//
// # Expiry
//
// Expired tokens, codes, requests and sessions are removed by the sweeper
// (store.SweepExpired through the expiry indexes), as with bbolt. Records
// carry no etcd leases: expiry is decided by the store's clock and the
// records must stay readable until swept (a redeemed code stays a
// tombstone until its expiry, so reuse is detected). Running the sweeper
// on every node is correct — a sweep is an ordinary transaction, and
// concurrent sweeps of the same records conflict and rerun — but wasteful;
// cmd/signd runs it on one node at a time (an etcd election).
package etcd
