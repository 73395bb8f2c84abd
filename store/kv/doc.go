// Package kv is the record layer the key-value backends share: one
// implementation of store.Tx (records, indexes, the OAuth flow, revocation,
// OIDC keys, the audit chain) over a small interface of named buckets of
// byte keys in byte order — Backend, Bucket and Cursor, the methods bbolt
// has — and three optional ones for the audit log: AuditChainer (the chain
// a transaction appends to), Reviser (the cluster order sealed into each
// entry) and AuditBucketLister (the chains a backend holds). store/bolt adapts a *bbolt.Tx to it, store/etcd its snapshot read
// plus write overlay, store/memory a snapshot of B-trees; each backend
// keeps only what is its own (the file, schema and migrations; the etcd
// client and guarded commit; the in-memory snapshots).
//
// # Records and buckets
//
// One bucket per kind of record (BucketNames). Records are JSON
// (records.go, authflow.go, oidc.go) except tokens, which are a compact
// binary form (codec.go: the fields; store/kv/binrec: format 1, its
// encoder and decoder) that still reads the JSON of older bbolt files.
// Field names and the binary layout are part of the stored format:
// changing one needs a migration of the stored records. A field added to
// a record reads as its default from records written before it existed.
//
//	users                 username → JSON userRecord
//	proofs                username 0x00 proof ID → raw proof content
//	clients               client ID → JSON clientRecord
//	credentials           credential ID → JSON credentialRecord
//	credentials_by_owner  owner 0x00 credential ID → empty (owner index)
//	oidc_keys             JWK key ID (kid) → JSON signingKeyRecord
//	admin_requests        admin request ID → JSON adminRequestRecord (dual control)
//	tokens                token fingerprint → binary tokenRecord
//	audit                 chain "": sequence number (8 bytes big-endian) →
//	                      canonical JSON of the audit entry (store.SealAudit)
//	audit.<chain>         a node's chain (store/etcd, Options.Node), as audit
//	audit_chains          chain name → JSON {"created": time}: the registry,
//	                      written with a chain's first entry (empty on bbolt)
//	secrets               name → random key bytes (the backend's Secret)
//	meta                  "revocations" → 8 bytes big-endian, the
//	                      revocation generation; the backend's own values
//
// Tokens, codes, pending requests and sessions each have an expiry index
// (the sweeper, store.SweepExpired) and a party index (revocation by user,
// client or credential, revoke.go); every write of a record maintains its
// index entries in the same transaction.
//
// # Transactions
//
// A Tx lives for one backend transaction (NewTx) and is not safe for
// concurrent use. It keeps the token record it decoded last, so reading a
// SAD and then deleting it (signHash) decodes it once; any write to the
// tokens bucket forgets it. Values a Bucket returns are only valid until
// the transaction ends: every record is decoded (copied) out of them, and
// a value put must not change before the commit.
//
// The group commit behind both backends' Batch is package
// store/kv/groupcommit's.
package kv
