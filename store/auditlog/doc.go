// Package auditlog is the format of signd's tamper-evident audit log: the
// entry ([Entry], its [Kind]s and outcomes), its canonical encoding, the
// hash chain that seals it ([Seal]: Digest = SHA-256(Prev ‖ canonical
// content)) and its verification ([Verifier], [Verify]). The canonical
// encoding and the digests are a file format: an entry written by any
// earlier signd decodes and verifies unchanged.
//
// It knows nothing of where entries are stored. Package store re-exports
// all of it under its earlier names (store.AuditEntry is [Entry],
// store.SealAudit is [Seal], ...) and owns the AuditTx role through which
// a backend appends to and walks the log (store/kv keeps the log in a
// bucket, the sequence number as key and [Seal]'s encoding as value); the
// one error it returns besides [BrokenError] is storeerr.ErrInvalid, which
// is store.ErrInvalid.
package auditlog
