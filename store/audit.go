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

// AuditVerifier checks entries one by one, in order, from the first.
type AuditVerifier = auditlog.Verifier

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
type AuditTx interface {
	AuditAppender
	// AuditRecords calls fn with the sequence number under which each
	// entry from Seq from on is stored, in order, and its stored encoding
	// (see EncodeAuditEntry). raw is valid only during the call. An error
	// from fn stops the walk and is returned.
	AuditRecords(from uint64, fn func(seq uint64, raw []byte) error) error
	// AuditSize returns the sequence number of the last entry, the number
	// of entries of an intact log (0 when empty), without reading the
	// others: monitoring reads it.
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

// ResumeAuditVerifier returns an AuditVerifier that expects entry n+1,
// following an entry n whose digest is head (auditlog.ResumeVerifier).
func ResumeAuditVerifier(n uint64, head []byte) *AuditVerifier {
	return auditlog.ResumeVerifier(n, head)
}

// VerifyAudit checks the whole chain in tx. It returns the number of
// entries and the digest of the last one, or an *AuditBrokenError naming
// the first broken entry.
func VerifyAudit(tx AuditTx) (count uint64, head []byte, err error) { return auditlog.Verify(tx) }

// AuditEntries calls fn with every entry from Seq from on, decoded. It
// stops at an entry that does not decode (an *AuditBrokenError); it does not
// check the chain (use VerifyAudit).
func AuditEntries(tx AuditTx, from uint64, fn func(*AuditEntry) error) error {
	return auditlog.Entries(tx, from, fn)
}
