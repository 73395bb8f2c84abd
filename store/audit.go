package store

import "github.com/signd/signd/store/auditlog"

// The tamper-evident audit log's entries, their encoding and the hash
// chain are package auditlog's; the names below are the same types,
// values and functions under the names callers have always used.

// AuditKind is what an audit entry records (auditlog.Kind).
type AuditKind = auditlog.Kind

// AuditEntry is one entry of the tamper-evident audit log (auditlog.Entry:
// the chain, the canonical encoding, what an entry may hold).
type AuditEntry = auditlog.Entry

// AuditBrokenError names the first entry at which the chain does not hold.
type AuditBrokenError = auditlog.BrokenError

// AuditVerifier checks the entries of one chain one by one, in order,
// from the first.
type AuditVerifier = auditlog.Verifier

// AuditChainInfo is one chain of the audit log as the store knows it
// (auditlog.ChainInfo).
type AuditChainInfo = auditlog.ChainInfo

// AuditChainHead is one chain's size and head (auditlog.ChainHead).
type AuditChainHead = auditlog.ChainHead

// Audit entry kinds, documented in package auditlog.
const (
	AuditSignHash           = auditlog.SignHash
	AuditCredentialEnrolled = auditlog.CredentialEnrolled
	AuditCredentialEnabled  = auditlog.CredentialEnabled
	AuditCredentialDisabled = auditlog.CredentialDisabled
	AuditCredentialRemoved  = auditlog.CredentialRemoved
	AuditTimestamp          = auditlog.Timestamp
	AuditCredentialAuth     = auditlog.CredentialAuth
	AuditAuthorize          = auditlog.Authorize
	AuditUserAdded          = auditlog.UserAdded
	AuditUserEnabled        = auditlog.UserEnabled
	AuditUserDisabled       = auditlog.UserDisabled
	AuditUserUnlocked       = auditlog.UserUnlocked
	AuditUserPasswordSet    = auditlog.UserPasswordSet
	AuditUserPINSet         = auditlog.UserPINSet
	AuditUserTOTPEnrolled   = auditlog.UserTOTPEnrolled
	AuditUserTOTPRemoved    = auditlog.UserTOTPRemoved
	AuditUserProofAdded     = auditlog.UserProofAdded
	AuditUserRemoved        = auditlog.UserRemoved
	AuditClientAdded        = auditlog.ClientAdded
	AuditClientRemoved      = auditlog.ClientRemoved
	AuditCredentialImported = auditlog.CredentialImported
	AuditOIDCKeyCreated     = auditlog.OIDCKeyCreated
	AuditOIDCKeysRotated    = auditlog.OIDCKeysRotated
	AuditTSAEnrolled        = auditlog.TSAEnrolled
	AuditTSAImported        = auditlog.TSAImported
	AuditAuditKeyCreated    = auditlog.AuditKeyCreated
	AuditCheckpoint         = auditlog.Checkpoint
	AuditAdminRead          = auditlog.AdminRead
	AuditPendingRequested   = auditlog.PendingRequested
	AuditPendingApproved    = auditlog.PendingApproved
	AuditPendingRejected    = auditlog.PendingRejected
	AuditPendingExpired     = auditlog.PendingExpired
	AuditStoreBackup        = auditlog.StoreBackup
	AuditConfigLoaded       = auditlog.ConfigLoaded
	AuditAdminRefused       = auditlog.AdminRefused
	AuditLogin              = auditlog.Login
	AuditLoginLock          = auditlog.LoginLock
	AuditPINLock            = auditlog.PINLock
	AuditLogout             = auditlog.Logout
	AuditAccount            = auditlog.Account
)

// Audit outcomes (auditlog.Granted, ...). Credential entries may also use
// the credential status they leave behind ("pending", "enabled",
// "disabled").
const (
	AuditGranted  = auditlog.Granted
	AuditRefused  = auditlog.Refused
	AuditFailed   = auditlog.Failed
	AuditRestored = auditlog.Restored
	AuditOK       = auditlog.OK
)

// AuditAppender appends to the audit log; see AuditTx for where to call it.
type AuditAppender interface {
	// AppendAudit appends e: it sets e.Seq to one more than the last
	// entry, e.Time to the store clock when zero, e.Prev and e.Digest. The
	// entry must have a known Kind and an Outcome (ErrInvalid otherwise).
	// Inside View it returns ErrReadOnly.
	AppendAudit(e *AuditEntry) error
}

// AuditTx is the part of Tx that holds the tamper-evident audit log. Append
// inside the transaction that does what the entry records (for signHash,
// the one that consumes the SAD), so either both or neither are committed.
//
// The log is one or more hash chains: chain "" (bbolt's only one, and that
// of a cluster whose nodes share one), and on a cluster one chain per node
// (store/etcd, Options.Node), so that nodes do not contend on one head.
// The backend decides which chain a transaction appends to. Every entry
// seals its chain's name and the cluster order (auditlog.Entry.Chain,
// Rev); the chains are verified each from its first entry and read
// together in cluster order (AuditRecords, AuditEntries).
type AuditTx interface {
	AuditAppender
	// AuditChains lists the chains of the log: "" first, then every
	// registered or stored chain by name (auditlog.ChainInfo).
	AuditChains() ([]AuditChainInfo, error)
	// AuditChainRecords calls fn with the sequence number under which each
	// entry of chain from Seq from on is stored, in order, and its stored
	// encoding (see EncodeAuditEntry). raw is valid only during the call.
	// An error from fn stops the walk and is returned.
	AuditChainRecords(chain string, from uint64, fn func(seq uint64, raw []byte) error) error
	// AuditChainSize returns the sequence number of the chain's last
	// entry, the number of entries of an intact chain (0 when empty).
	AuditChainSize(chain string) (uint64, error)
	// AuditRecords is AuditChainRecords over every chain, the entries in
	// cluster order (auditlog.Merge; seq is the entry's in its chain):
	// with one chain, that chain in order.
	AuditRecords(from uint64, fn func(seq uint64, raw []byte) error) error
	// AuditSize returns the number of entries of an intact log, all chains
	// together (0 when empty), reading only each chain's last entry:
	// monitoring reads it.
	AuditSize() (uint64, error)
}

// KnownAuditKind reports whether k is a kind AppendAudit accepts.
func KnownAuditKind(k AuditKind) bool { return auditlog.KnownKind(k) }

// AuditKinds lists every kind AppendAudit accepts, sorted.
func AuditKinds() []string { return auditlog.Kinds() }

// AuditGenesis returns the Prev of the first entry: 32 zero bytes.
func AuditGenesis() []byte { return auditlog.Genesis() }

// IsAuditOID reports whether s may stand as an algorithm in an audit entry
// (auditlog.IsOID).
func IsAuditOID(s string) bool { return auditlog.IsOID(s) }

// SealAudit sets e.Seq, e.Prev and e.Digest and returns the encoding to
// store (auditlog.Seal). Backends call it from AppendAudit.
func SealAudit(e *AuditEntry, seq uint64, prev []byte) ([]byte, error) {
	return auditlog.Seal(e, seq, prev)
}

// EncodeAuditEntry returns the stored encoding of a sealed entry
// (auditlog.Encode).
func EncodeAuditEntry(e *AuditEntry) ([]byte, error) { return auditlog.Encode(e) }

// DecodeAuditEntry parses a stored entry, refusing anything that is not
// exactly a canonical encoding (auditlog.Decode).
func DecodeAuditEntry(raw []byte) (*AuditEntry, error) { return auditlog.Decode(raw) }

// ResumeAuditVerifier returns an AuditVerifier of chain "" that expects
// entry n+1, following an entry n whose digest is head
// (auditlog.ResumeVerifier).
func ResumeAuditVerifier(n uint64, head []byte) *AuditVerifier {
	return auditlog.ResumeVerifier(n, head)
}

// ResumeAuditChainVerifier is ResumeAuditVerifier for the chain named
// chain (auditlog.ResumeChainVerifier).
func ResumeAuditChainVerifier(chain string, n uint64, head []byte) *AuditVerifier {
	return auditlog.ResumeChainVerifier(chain, n, head)
}

// CheckAuditChain reports whether name may name a node's audit chain
// (auditlog.CheckChain): store.ErrInvalid otherwise.
func CheckAuditChain(name string) error { return auditlog.CheckChain(name) }

// VerifyAudit checks every chain in tx from its first entry and that the
// registry of chains agrees with the stored chains. It returns the number
// of entries and the log's head (auditlog.LogHead: the digest of the last
// entry for a log of chain "" alone), or an *AuditBrokenError naming the
// first broken entry.
func VerifyAudit(tx AuditTx) (count uint64, head []byte, err error) { return auditlog.Verify(tx) }

// VerifyAuditChains is VerifyAudit chain by chain (auditlog.VerifyChains).
func VerifyAuditChains(tx AuditTx) ([]AuditChainHead, error) { return auditlog.VerifyChains(tx) }

// AuditRawEntries is AuditEntries that also hands fn each entry's stored
// encoding, valid only during the call (auditlog.Merge).
func AuditRawEntries(tx AuditTx, from uint64, fn func(e *AuditEntry, raw []byte) error) error {
	return auditlog.Merge(tx, from, fn)
}

// AuditHeadsDigest is the digest of several chains' heads, what the head of
// a log of several chains is (auditlog.HeadsDigest).
func AuditHeadsDigest(heads []AuditChainHead) []byte { return auditlog.HeadsDigest(heads) }

// AuditLogHead is what the heads of a log's chains add up to: the entries
// of all and the log's head (auditlog.LogHead).
func AuditLogHead(heads []AuditChainHead) (size uint64, head []byte) { return auditlog.LogHead(heads) }

// CheckAuditRegistry reports a chain other than "" that is not both
// registered and stored (auditlog.CheckRegistry).
func CheckAuditRegistry(c AuditChainInfo, count uint64) error {
	return auditlog.CheckRegistry(c, count)
}

// AuditChainBucket is the name of the bucket of the chain named chain:
// "audit" for chain "", "audit.<chain>" for a node's (auditlog.ChainBucket).
func AuditChainBucket(chain string) string { return auditlog.ChainBucket(chain) }

// AuditEntries calls fn with every entry from Seq from on of every chain,
// decoded, in cluster order (auditlog.Merge). It stops at an entry that
// does not decode (an *AuditBrokenError); it does not check the chains
// (use VerifyAudit).
func AuditEntries(tx AuditTx, from uint64, fn func(*AuditEntry) error) error {
	return auditlog.Entries(tx, from, fn)
}

// LastAuditEntry returns the last entry in cluster order for which match
// is true, nil when none is, reading the chains backwards from their ends
// (auditlog.Last): a start's look-up of its last configuration reads the
// entries after it, not the whole log.
func LastAuditEntry(tx AuditTx, match func(*AuditEntry) bool) (*AuditEntry, error) {
	return auditlog.Last(tx, match)
}
