// Package signhash serves signatures/signHash (CSC v1 §11.9): the SAD
// checks, the audit entry of every request, the signing through a Signer
// (*hsm.Token satisfies it; signhash does not import hsm) and the return
// of a SAD when no signature was made. Package csc mounts it (Handler);
// the request reading, the credential rules and the store view are
// csc/protocol's.
//
// A request walks signhash.go (signHash: parseSignHash into a
// signHashRequest, then signHashes, the phases without HTTP, and one
// observer, observeSignHash, for the metrics), algo.go (signAlgo,
// hashAlgo, signAlgoParams), restore.go (the preflight, what a Signer
// error means, the SAD given back), signing.go (the signing that overlaps
// the commit) and trace.go (the request's trace task).
//
// # signHash
//
// A request is parsed strictly (csc/protocol: Content-Type
// application/json, at most 64 KiB, no duplicate keys, typed parameters)
// and then decided in one store write transaction, grouped with
// concurrent ones (Store.Batch): the credential must be the caller's,
// enabled, with a certificate valid now; the SAD must exist, and once it
// does it is deleted in that same transaction whatever follows — it must
// belong to the Bearer's user and client, be bound to this credential, be
// unexpired, and cover exactly the request's hashes. The audit entry of
// the decision is appended in the same transaction, so a SAD is never
// consumed without its entry and no crash can let it be used twice. As
// soon as the transaction has granted, the HSM signs while it commits
// (signing.go); the signatures leave only when the commit succeeded with
// that grant, and are dropped otherwise.
//
// # Signer errors
//
// A Signer error answers its own meaning through methods that signhash
// asks with errors.As and interfaces of its own (restore.go; package
// hsm's errors implement them): one that answers Unavailable (a busy or
// reconnecting HSM) is 503 temporarily_unavailable with Retry-After,
// Unsupported is 400 naming signAlgo, and KeyUnusable (the credential's
// key is gone from a working HSM) is 400 "The credential identified by
// credentialID is disabled". On a node of a cluster (Handler.Clustered),
// a key that is missing from this node's HSM only (KeyMissing) is this
// node's fault, not the client's: 503 temporarily_unavailable "The
// signing key is not available on this node, try again later" with
// Retry-After, the SAD untouched.
//
// # No SAD burned by a request that could not sign
//
// Before that transaction the Signer is asked whether the credential's key
// could sign now (Signer.CheckKey: HSM available, a session free, the key
// known); if not, the request is refused (and audited) with its SAD
// untouched. If signing then fails and the error proves (NotSigned) that no
// signature was made, a compensating transaction stores the SAD again,
// unchanged, with its original expiry, and appends a new audit entry
// "restored" referring to the grant. A failure whose outcome is unknown,
// or one after an earlier hash of the request was signed, leaves the SAD
// spent: never a second signature for one SAD.
package signhash
