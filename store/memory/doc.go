// Package memory is an in-memory store backend: it implements store.Store
// with the same contract as store/bolt, certified by the same conformance
// suite (store/storetest), and keeps nothing on disk. It is meant for unit
// tests of the packages that use the store, and it is the shape a networked
// backend (etcd) follows: ordered keys, an expiry index and a party index per
// kind of expiring record, the same transaction guarantees.
//
// It owns the in-memory layout and nothing else: validation, the audit
// encoding and hash chain (store.SealAudit) and the record types belong to
// package store, exactly as for bolt.
//
// # Transactions: snapshots of copy-on-write B-trees
//
// Every kind of record and every index is an ordered map on a B-tree
// (github.com/google/btree) whose Clone is lazy copy-on-write: a clone costs
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
// Records are stored as deep copies, normalized the way bolt's JSON
// records read back (times in UTC without a monotonic reading, empty slices
// and maps as nil), and every record handed out is another deep copy, so
// neither the caller's values nor the ones returned alias the store.
//
// # Indexes
//
// The index keys are bolt's (see store/bolt's doc.go), so both backends
// order, sweep and revoke alike:
//
//	credentials by owner   owner 0x00 credential ID
//	tokens by code         code fingerprint ‖ token fingerprint
//	expiry indexes         expiry (8-byte big-endian Unix ns, clamped at 0) ‖ fingerprint
//	party indexes          tag, name, 0x00 ‖ fingerprint (tags 'u', 's', 'c', 'k')
//
// Sweeping (Delete*Expired, SweepExpired) walks the expiry index up to now
// (SweepExpired stops at its limit) and revocation walks one party range,
// so each costs what it removes, not what is stored.
//
// # Beyond store.Store
//
// DB also has the two methods the CSC service and its wiring ask of a store:
// Batch (here plain Update: there is no commit to share) and Secret (named
// random keys, kept for the life of the DB).
//
// # Caveats
//
// Everything is lost on Close or when the process ends. A Tx must not be
// used after its function returned (writes then fail with ErrTxDone); an
// Update must not call Update on the same DB (it would deadlock, as with
// bolt). Values are kept byte for byte, where bolt's JSON would replace
// invalid UTF-8 in fields that validation does not check.
package memory
