// Package checkpoint signs and checks checkpoints of signd's audit log:
// signed statements "this log had N entries, and entry N's digest was H",
// which make a log that was cut off, rewritten or forked after them
// visible to anyone who kept one.
//
// # Format
//
// A checkpoint is a C2SP tlog-checkpoint (https://c2sp.org/tlog-checkpoint)
// signed as a C2SP signed note (https://c2sp.org/signed-note):
//
//	sign.example.org/audit
//	1207
//	q7b2…base64…=
//	time 2026-11-27T21:00:00Z
//
//	— sign.example.org/audit Az3g…base64 of key ID and signature…
//
// The lines are the origin (audit.checkpoint_origin), the tree size (the
// number of entries, 1..N), the base64 hash and one extension line with
// the time it was signed. The signature's name is the origin.
//
// The hash is NOT a Merkle tree root, as tlog-checkpoint's "root hash"
// is: the audit log is a hash chain (store.AuditEntry: each digest covers
// the entry and the digest before it), and the hash is the Digest of
// entry N, the chain's head. What follows: there are no inclusion or
// consistency proofs. Whether a log extends a checkpoint is checked by
// walking the chain from entry 1 (Verify): entry N must exist and have
// that digest, and the chain must hold; whether two checkpoints are
// consistent is whether the log extends both. Tools that check Merkle
// proofs (a tlog witness that asks a log for consistency proofs) cannot
// be used as they are; tools that check the signature (sumdb/note, or
// openssl for ECDSA) can.
//
// # Several chains
//
// On a cluster whose nodes are named (store.etcd.node) the audit log is
// one hash chain per node (store.AuditTx). A checkpoint then covers every
// chain with entries: one extension line per chain, by chain name, giving
// its bucket ("audit" for chain "", "audit.<node>"), its size and the
// base64 digest of its last entry:
//
//	sign.example.org/audit
//	1207
//	Jm1f…base64…=
//	time 2026-11-27T21:00:00Z
//	chain audit.signd-1 700 q7b2…base64…=
//	chain audit.signd-2 507 d0Zy…base64…=
//
// The size is the chains' sizes added up, and the hash is
// store.AuditHeadsDigest of the chains: SHA-256 of one line per chain,
// "<bucket> <size> <lowercase hex digest>\n", in the same order, so that
// the signature covers every chain's head through the hash as well as
// through the lines (Open refuses a checkpoint whose lines do not add up
// to its size and hash). A log extends it when every chain listed has at
// least its size and its entry of that number has that digest: cutting
// off the tail of one chain, or deleting a whole chain with its registry
// entry, no longer extends it (ErrTruncated), although each remaining
// chain verifies on its own. A chain that is not listed is newer than
// the checkpoint. A log of chain "" alone (bbolt's, or a cluster whose
// nodes are not named) has the checkpoint of the format above, without
// chain lines, exactly as before there were several chains; the history
// file of a checkpoint is named by its size (all chains together).
//
// # Keys
//
// The audit key lives in the token (hsm; found by its label,
// audit.key_label): Ed25519 (signature type 0x01, pure Ed25519 over the
// note text, CKM_EDDSA) where the token has CKM_EC_EDWARDS_KEY_PAIR_GEN
// and CKM_EDDSA, so golang.org/x/mod/sumdb/note verifies it with the
// verifier key "<origin>+<key ID>+<base64 key>"; otherwise ECDSA P-256
// (signature type 0x02 of signed-note, as github.com/transparency-dev
// implements it: the key ID is the first four bytes of SHA-256 of the DER
// SubjectPublicKeyInfo, the signature is DER ECDSA over SHA-256 of the
// note text; NewVerifier reads its verifier key
// "<origin>+<key ID>+<base64 of 0x02 and the SPKI>").
//
// # Making them
//
// Maker signs a checkpoint of every entry (of every chain), writes it to a directory
// (Write: "checkpoint.<N>" once and for all, "checkpoint" for the latest,
// each through a temporary file renamed into place) and appends an
// audit_checkpoint entry (in the chain of the node that made it), which
// is covered by the next checkpoint, not by its own. It reads only the
// entries added since the latest checkpoint in the directory, and refuses
// to sign when the log no longer extends that one.
//
// The package has no HTTP and no command line: the daemon serves the
// directory's latest checkpoint, and signd audit verify --checkpoint
// calls Open and Verify.
package checkpoint
