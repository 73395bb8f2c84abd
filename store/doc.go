// Package store owns signd's persistence: the typed records (users, OAuth
// clients, signing credentials, identity proofs), the transaction-shaped
// [Store] and [Tx] contract every backend implements, the sentinel errors,
// record validation, and the hashing of stored secrets (argon2id for
// passwords and signing PINs, SHA-256 for high-entropy client secrets).
//
// It knows nothing of HTTP, OAuth, OIDC, CSC or PKCS#11, and imports no other
// signd package but two of its own, below it: store/auditlog, the audit
// log's file format (entry, canonical encoding, hash chain, verification),
// which [AuditEntry], [SealAudit], [VerifyAudit] and their kin alias and
// wrap, and store/storeerr, where the sentinel errors are defined
// ([ErrInvalid] and the others here are the same values). Backends live in subpackages (store/bolt is the embedded
// default, store/etcd the clustered one, store/memory the one for unit
// tests), all three over one implementation of Tx, store/kv;
// store/storetest is the conformance suite every backend must pass.
//
// [Tx] is composed of small role interfaces ([UserTx], [ClientTx],
// [CredentialTx], [OAuthTx], [AuditTx], [OIDCTx] and their read-only parts).
// A consumer declares the transaction interface it uses, composed of those
// roles, and sees a backend through [Scope], typed on that interface.
//
// # Contract
//
//   - All reads and writes happen inside [Store.View] or [Store.Update]. An
//     Update is one atomic, serialized write transaction: either every write
//     made by its function is committed, or (on error or panic) none is. That
//     is what later consumers rely on to consume single-use values (auth
//     codes, SAD) exactly once. An Update that fails has committed nothing,
//     with one exception: [ErrOutcomeUnknown] (it wraps [ErrUnavailable]),
//     which store/etcd returns for a commit it sent whose answer was lost;
//     it may have applied. [MayHaveCommitted] reports it; a failed read, a
//     commit never sent or refused before it was proposed, the conflict
//     retry limit, a failed bbolt write or fsync and a bare context error
//     are definite: nothing committed.
//   - [Store.Fence] is an Update that commits even when it writes nothing,
//     after which no write transaction that began before it can commit.
//     An Update that failed with [ErrOutcomeUnknown] has therefore either
//     committed before a later fence, and the fence's function reads its
//     writes, or never commits: what the fence read is final, where a View
//     could read before a commit still in flight applies (store/etcd: a
//     Txn queued at a member, or in the log of a leader that died).
//     [Settle] learns through a fence whether such a write committed; a
//     caller that made something outside the store for the write (a key
//     in the HSM) keeps it when it did, destroys it when it did not, and
//     keeps and names it when the fence fails.
//   - Records returned by a [Tx] are copies owned by the caller; they stay
//     valid after the transaction ends and mutating them changes nothing
//     stored.
//   - Create* fails with [ErrAlreadyExists] for an existing key; Put* and
//     Delete* fail with [ErrNotFound] for a missing one; every write inside
//     View fails with [ErrReadOnly]; records that fail validation are refused
//     with an error wrapping [ErrInvalid].
//   - The store sets CreatedAt (on create) and UpdatedAt (on every write) from
//     its injected clock; values the caller puts there are ignored.
//   - Revocation ([RevokeTx]) removes, inside the caller's transaction,
//     every token, SAD, unredeemed code, pending request and session that
//     hangs on a user, client or credential, at a cost that follows what it
//     removes; admin actions call it in the transaction of the action.
//   - A user's secret generation ([User].SecretGeneration) is the store's:
//     PutUser keeps the stored value and raises it by one when the password
//     or PIN hash changes, and RevokeUser and RevokeUserSigning raise it for
//     an existing user, in the caller's transaction. It never goes down. A
//     SAD ([Token].SecretGeneration) keeps the value it was issued under.
//     Records written before the field existed read as 0, on both sides.
//   - Secrets are never stored in the clear: only argon2id PHC strings
//     ([HashPassword], [Hasher]) and SHA-256 fingerprints ([HashSecret]).
package store
