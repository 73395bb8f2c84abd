// Package auditlog is the format of signd's tamper-evident audit log: the
// entry ([Entry], its [Kind]s and outcomes), its canonical encoding, the
// hash chain that seals it ([Seal]: Digest = SHA-256(Prev ‖ canonical
// content)) and its verification ([Verifier], [Verify]). The canonical
// encoding and the digests are a file format: an entry written by any
// earlier signd decodes and verifies unchanged.
//
// A log is one or more chains ([Records]): chain "" (bbolt's only one), and
// on a cluster one per node, so that nodes do not contend on one head. An
// entry of a node's chain seals the chain's name and the cluster order, the
// etcd revision of its transaction's snapshot (Entry.Chain, Entry.Rev; both
// left out of the encoding when zero, so a log of chain "" reads as it
// always has). [Verify] checks every chain from its first entry, that each
// entry is stored in the chain it sealed and that the revision never
// decreases along a chain, and that the registry of chains agrees with the
// chains stored ([CheckRegistry]); [Merge] reads the chains together in
// cluster order, by (Rev, chain, Seq); [LogHead] and [HeadsDigest] are what
// the heads of several chains add up to (what a checkpoint signs).
//
// It knows nothing of where entries are stored. Package store re-exports
// all of it under its earlier names (store.AuditEntry is [Entry],
// store.SealAudit is [Seal], ...) and owns the AuditTx role through which
// a backend appends to and walks the log (store/kv keeps the log in a
// bucket, the sequence number as key and [Seal]'s encoding as value); the
// one error it returns besides [BrokenError] is storeerr.ErrInvalid, which
// is store.ErrInvalid.
package auditlog
