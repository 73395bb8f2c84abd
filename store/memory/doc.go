// Package memory is the in-memory store backend, for the unit tests of the
// packages that use the store: it implements store.Store (and Batch and
// Secret, as store/bolt) and keeps nothing on disk.
//
// It is a kv.Backend like store/bolt and store/etcd: the records, their
// encoding, the indexes, validation, revocation and the audit chain are
// store/kv's, so a test on it exercises the record code the daemon runs.
// What is its own is the named buckets of byte keys in memory and the
// transactions over them; store/storetest certifies it as it does the
// others.
//
// # Transactions: snapshots of copy-on-write B-trees
//
// Every bucket is a B-tree of keys in byte order (github.com/google/btree,
// already etcd's overlay) whose Clone is lazy copy-on-write: a clone costs
// O(1), and a write to it copies only the nodes on its path. The store keeps
// one committed snapshot, a set of such trees that is never written again.
//
//   - View reads the committed snapshot as it was when View began, without a
//     lock: it never waits for a writer, never sees a write that is not
//     committed, and reads the same values however long it runs (like
//     bbolt's read transactions).
//   - Update takes the write mutex (one writer at a time, as in bbolt),
//     clones every tree of the snapshot and runs fn on the clones. If fn
//     returns nil, the clones become the committed snapshot in one atomic
//     pointer store; if fn fails or panics, they are dropped, so nothing
//     needs undoing and a panic propagates unchanged after the mutex is
//     released.
//
// A stored key or value is a copy made by Put and never written again, so
// a snapshot may share it with the transactions that read it.
//
// # Beyond store.Store
//
// Batch is plain Update: with no fsync to amortize there is no commit to
// share, so its function runs exactly once. Secret keeps its named random
// keys for the life of the DB.
//
// # Caveats
//
// Everything is lost on Close or when the process ends. A Tx must not be
// used after its function returned (writes then fail with ErrTxDone); an
// Update must not call Update on the same DB (it would deadlock, as with
// bolt).
package memory
