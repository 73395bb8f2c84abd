// Package bolt is the embedded store backend: a single bbolt file that
// implements store.Store.
//
// It owns the file and nothing else: validation, hashing and the record
// types belong to package store; the stored records, their indexes and the
// record code are store/kv's, shared with store/etcd (a transaction is a
// kv.Tx over the bbolt transaction, kvtx.go); callers see only store.Tx.
// What is bbolt's own stays here: the file (open, permissions, judging a
// damaged one), the schema and its migrations, Check and the page walk,
// Backup, group commit (Batch) and the bbolt options.
//
// # File layout
//
// One bucket per kind of record, all created by Open (see bucketNames):
//
//	meta                  "schema_version" → decimal ASCII (schemaVersion);
//	                      "write_probe" → RFC 3339 time of the last write
//	                      probe of DB.Health;
//	                      "revocations" → 8 bytes big-endian, the
//	                      revocation generation (store.RevocationReader)
//	users                 username → JSON userRecord
//	proofs                username 0x00 proof ID → raw proof content
//	clients               client ID → JSON clientRecord
//	credentials           credential ID → JSON credentialRecord
//	credentials_by_owner  owner 0x00 credential ID → empty (owner index)
//	oidc_keys             JWK key ID (kid) → JSON signingKeyRecord
//	admin_requests        admin request ID → JSON adminRequestRecord (dual control)
//	tokens                token fingerprint → binary tokenRecord (store/kv;
//	                      JSON in files written before schema 3)
//	audit                 sequence number (8 bytes big-endian) → canonical
//	                      JSON of the audit entry (store.SealAudit), hash-chained
//	secrets               name → random key bytes (DB.Secret), e.g. the CSC
//	                      page-token MAC key
//
// Tokens, codes, pending requests and sessions (store/kv) each
// have an expiry index for the sweeper and a party index for revocation
// (store/kv's revoke.go): *_by_party, party ‖ fingerprint → empty, where the party is
// a tag ('u' user, 's' the user's signing approvals, 'c' client, 'k'
// credential), a name and 0x00. Revoking a user, client or credential is a
// cursor range per bucket, so it costs what it removes.
//
// DB.Batch is Update with group commit: concurrent calls share one write
// transaction (one pair of fsyncs) and a failing function is rerun alone,
// so its function may run more than once (batch.go).
//
// Records are JSON so the file can be inspected with `bbolt get`, except
// tokens (access tokens and SADs, the records of the signing and token hot
// paths): they are written in a compact binary form that starts with a
// format byte (store/kv's codec.go), about a third of the JSON's size and a quarter of
// its decoding time, and a JSON token written by an older build still
// reads. Their on-disk shape is the unexported *Record types of store/kv,
// decoupled from the store types so that changing
// a Go field never silently changes the file format (a token field the
// binary form does not carry fails a test). Proof content is stored raw (up to 10 MiB; base64 in JSON would add
// a third). Usernames and IDs cannot contain 0x00 (validation refuses it), so
// composite keys are unambiguous, and listing one owner's credentials is a
// cursor Seek to "owner 0x00 after" followed by Next while the prefix
// matches: its cost depends on the page size, not on how many credentials
// other users hold.
//
// # Schema
//
// meta/schema_version is the version of this layout. Open creates missing
// buckets, upgrades an older file to schemaVersion in the same write
// transaction, and refuses a newer file with store.ErrSchemaTooNew instead of
// misreading it. A change to the layout that old code would misread bumps
// schemaVersion and adds a migration. Version 2 added the party indexes;
// opening a version 1 file builds them once from the stored records.
// Version 3 added the binary token form: the upgrade rewrites nothing (JSON
// tokens stay readable until they expire), it only makes older builds
// refuse the file (store.ErrSchemaTooNew) instead of failing on each
// binary token.
//
// # Damaged files and failing disks
//
// Open never re-initialises an existing file and never hands bbolt a file
// it has not judged (file.go): an empty, truncated or foreign file, or one
// with a damaged meta page, freelist or root page, fails with
// store.ErrCorrupt (a *DamageError naming the file and the recovery), and a
// panic or fault of bbolt while opening becomes that error too. Later, a
// fault on the mapped file or a panic raised inside bbolt while reading is
// store.ErrCorrupt as well, and DB.Health reports it. DB.Check (and
// Options.VerifyOnOpen) walks every page's structure before bbolt's own
// consistency check reads them (walk.go), then decodes every record and
// verifies the audit chain. DB.Backup writes a consistent snapshot (one read
// transaction); SaveBackup stores it atomically and checks the copy.
//
// A commit that cannot write (ENOSPC, EIO, ...) fails with
// store.ErrUnavailable wrapping the cause and commits nothing; reads go on,
// DB.Health reports the store not writable until its own probe (free space,
// then a small write) succeeds, and a handle bbolt left unusable is reopened by the next transaction
// (handle.go says why that is the only case that needs it).
//
// # Caveats
//
// bbolt's byte slices are valid only for the life of a transaction; every
// record handed out is decoded (JSON or binary) or copied, never aliased. bbolt holds
// an exclusive flock on the file, so a second Open (by another process, or by
// this one) waits Options.Timeout and then fails with store.ErrLocked. Only
// one write transaction runs at a time; a View or Update must not call
// Update on the same DB (it would deadlock).
package bolt
