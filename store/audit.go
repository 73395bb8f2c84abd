package store

import (
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"
)

// AuditKind is what an audit entry records.
type AuditKind string

// Audit entry kinds.
const (
	// AuditSignHash is one signatures/signHash request of an authenticated
	// caller: granted (SAD consumed, signing asked of the HSM), refused
	// (with the reason), failed (the HSM failed after a grant; Ref names
	// the granted entry) or restored (as failed, and the SAD was given
	// back because no signature was made).
	AuditSignHash AuditKind = "signHash"
	// AuditCredentialEnrolled is a key pair generated for a user (outcome
	// "pending") or a certificate chain attached to it (outcome "enabled").
	AuditCredentialEnrolled AuditKind = "credential_enrolled"
	// AuditCredentialEnabled and AuditCredentialDisabled are an admin
	// switching a credential on or off.
	AuditCredentialEnabled  AuditKind = "credential_enabled"
	AuditCredentialDisabled AuditKind = "credential_disabled"
	// AuditCredentialRemoved is an admin removing a credential: its key
	// pair destroyed in the HSM, what was bound to it revoked, its record
	// deleted.
	AuditCredentialRemoved AuditKind = "credential_removed"
	// AuditTimestamp is a time-stamp token issued by signatures/timestamp
	// (outcome granted): Hashes holds the digest it covers, Reason its
	// serial number in hex.
	AuditTimestamp AuditKind = "timestamp"
	// AuditCredentialAuth is an admin changing a credential's multisign or
	// authMode (which revokes what was authorized under the old values).
	AuditCredentialAuth AuditKind = "credential_auth"
	// AuditAuthorize is one credentials/authorize (CSC v1 §11.6) or
	// credentials/extendTransaction (§11.7) request: granted (a SAD issued
	// for the hashes listed) or refused (with the reason).
	AuditAuthorize AuditKind = "authorize"

	// Administration (package admin). Every operation of the admin
	// service appends one entry naming its Actor and Target; Fields lists
	// what changed, never a secret ("password": "changed"). A refused
	// attempt (by role or by validation) is recorded with outcome refused
	// and the Reason.
	AuditUserAdded          AuditKind = "user_added"
	AuditUserEnabled        AuditKind = "user_enabled"
	AuditUserDisabled       AuditKind = "user_disabled"
	AuditUserUnlocked       AuditKind = "user_unlocked"
	AuditUserPasswordSet    AuditKind = "user_password_set"
	AuditUserPINSet         AuditKind = "user_pin_set"
	AuditUserTOTPEnrolled   AuditKind = "user_totp_enrolled"
	AuditUserTOTPRemoved    AuditKind = "user_totp_removed"
	AuditUserProofAdded     AuditKind = "user_proof_added"
	AuditUserRemoved        AuditKind = "user_removed"
	AuditClientAdded        AuditKind = "client_added"
	AuditClientRemoved      AuditKind = "client_removed"
	AuditCredentialImported AuditKind = "credential_certificate_imported"
	AuditOIDCKeyCreated     AuditKind = "oidc_key_created"
	AuditOIDCKeysRotated    AuditKind = "oidc_keys_rotated"
	AuditTSAEnrolled        AuditKind = "tsa_enrolled"
	AuditTSAImported        AuditKind = "tsa_certificate_imported"
	AuditAuditKeyCreated    AuditKind = "audit_key_created"
	AuditCheckpoint         AuditKind = "audit_checkpoint"
	AuditAdminRead          AuditKind = "admin_read" // a read-only admin operation; Fields["op"] names it
	AuditPendingRequested   AuditKind = "pending_requested"
	AuditPendingApproved    AuditKind = "pending_approved"
	AuditPendingRejected    AuditKind = "pending_rejected"
	AuditPendingExpired     AuditKind = "pending_expired"
	AuditStoreBackup        AuditKind = "store_backup"
	AuditConfigLoaded       AuditKind = "config_loaded"
	AuditAdminRefused       AuditKind = "admin_refused" // an admin operation refused before it could be named by its kind (unknown method, no role)

	// Security events of end users (packages oauth, csc): User is the
	// account, Client the OAuth client where there is one, IP the remote
	// address; never a password, PIN or code.
	AuditLogin     AuditKind = "login"       // outcome ok, failed or refused (locked); Fields["method"]: password, totp, auth_login
	AuditLoginLock AuditKind = "user_locked" // password login locked by too many failures
	AuditPINLock   AuditKind = "pin_locked"  // signing PIN locked by too many failures
	AuditLogout    AuditKind = "logout"
	AuditAccount   AuditKind = "account_action" // the account page: Fields["action"] names it
)

// auditKinds is every kind AppendAudit accepts.
var auditKinds = map[AuditKind]bool{
	AuditSignHash: true, AuditCredentialEnrolled: true, AuditCredentialEnabled: true, AuditCredentialDisabled: true,
	AuditCredentialRemoved: true, AuditTimestamp: true, AuditCredentialAuth: true, AuditAuthorize: true,
	AuditUserAdded: true, AuditUserEnabled: true, AuditUserDisabled: true, AuditUserUnlocked: true,
	AuditUserPasswordSet: true, AuditUserPINSet: true, AuditUserTOTPEnrolled: true, AuditUserTOTPRemoved: true,
	AuditUserProofAdded: true, AuditUserRemoved: true, AuditClientAdded: true, AuditClientRemoved: true,
	AuditCredentialImported: true, AuditOIDCKeyCreated: true, AuditOIDCKeysRotated: true, AuditTSAEnrolled: true,
	AuditTSAImported: true, AuditAuditKeyCreated: true, AuditCheckpoint: true, AuditAdminRead: true,
	AuditPendingRequested: true, AuditPendingApproved: true, AuditPendingRejected: true, AuditPendingExpired: true,
	AuditStoreBackup: true, AuditConfigLoaded: true, AuditAdminRefused: true,
	AuditLogin: true, AuditLoginLock: true, AuditPINLock: true, AuditLogout: true, AuditAccount: true,
}

// KnownAuditKind reports whether k is a kind AppendAudit accepts.
func KnownAuditKind(k AuditKind) bool { return auditKinds[k] }

// AuditKinds lists every kind AppendAudit accepts, sorted.
func AuditKinds() []string {
	ks := make([]string, 0, len(auditKinds))
	for k := range auditKinds {
		ks = append(ks, string(k))
	}
	slices.Sort(ks)
	return ks
}

// Audit outcomes. Credential entries may also use the credential status
// they leave behind ("pending", "enabled", "disabled").
const (
	AuditGranted = "granted" // signHash: SAD consumed, signature requested from the HSM
	AuditRefused = "refused" // signHash: refused; Reason says why
	AuditFailed  = "failed"  // signHash: the HSM failed after the grant Ref
	// AuditRestored: signHash: the HSM failed after the grant Ref before
	// making any signature, and the SAD that grant consumed was stored
	// again, unchanged (a compensating entry; the grant is not edited).
	AuditRestored = "restored"
	AuditOK       = "ok"
)

// AuditEntry is one entry of the tamper-evident audit log. The entries form
// a hash chain: Digest = SHA-256(Prev ‖ canonical content), where Prev is
// the Digest of the entry before (32 zero bytes for the first) and the
// canonical content is the JSON encoding of every field except Prev and
// Digest. Changing, removing or reordering a stored entry breaks the chain
// at that entry (VerifyAudit); removing entries at the end is only visible
// against a head digest kept elsewhere (signd audit verify prints it).
//
// An entry never holds a secret: no token, SAD, code, PIN or password, only
// names, IDs and the digests that were (to be) signed.
type AuditEntry struct {
	Seq        uint64    // 1, 2, 3, ... set by AppendAudit
	Time       time.Time // when it happened; the store's clock when zero
	Kind       AuditKind
	User       string   // username the entry concerns (the bearer's user for signHash)
	Client     string   // OAuth client ID, "" for admin operations
	Credential string   // credential ID, "" when the request named none
	Hashes     []string // signHash granted or failed: the digests, lowercase hex, in request order
	// HashCount and HashesSHA256 stand in for Hashes on a refused signHash,
	// so that a refusal's size does not grow with the request: how many
	// entries of the request's hash array were read (the parser stops one
	// past its limit), and the lowercase hex SHA-256 of that array exactly
	// as it appeared in the request body ("" when there was none).
	HashCount    int
	HashesSHA256 string
	// SignAlgo and HashAlgo are the algorithm of a signHash (granted,
	// refused, failed or restored): the signAlgo OID of the request and
	// the hashAlgo OID where the request gave one (CSC v1 §11.9), each in
	// dotted-decimal form, "" when the request had none (or something
	// that is not an OID).
	SignAlgo string
	HashAlgo string
	Outcome  string
	Reason   string // why (refusals, failures) or what (admin operations)
	Ref      uint64 // Seq of an earlier entry this one follows up, 0 for none
	// Actor is who acted: "uid:1001 (alice)" on the admin socket, a client
	// certificate's subject and fingerprint, "user:alice" on the account
	// page, "signd" for the daemon itself; "" on entries written before
	// actors were recorded and on protocol entries, whose User and Client
	// say who asked.
	Actor string
	// Target names what an administrative act or security event concerns
	// ("user:alice", "client:app", "credential:<id>", "oidc-key:<kid>").
	Target string
	// IP is the remote address of a login or account-page request.
	IP string
	// Fields lists what an act changed or chose, never a secret: a
	// password change records "password": "changed".
	Fields map[string]string
	Prev   []byte // Digest of the previous entry; set by AppendAudit
	Digest []byte // set by AppendAudit
}

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

// auditContent is the canonical content of an entry, what its digest
// covers. Field order and names are part of the file format.
type auditContent struct {
	Seq        uint64   `json:"seq"`
	Time       string   `json:"time"` // RFC 3339, UTC, nanoseconds without trailing zeros
	Kind       string   `json:"kind"`
	User       string   `json:"user"`
	Client     string   `json:"client"`
	Credential string   `json:"credential"`
	Hashes     []string `json:"hashes"`
	// Added later, left out when zero so that earlier entries keep their
	// encoding and digest.
	HashCount    int    `json:"hash_count,omitempty"`
	HashesSHA256 string `json:"hashes_sha256,omitempty"`
	SignAlgo     string `json:"sign_algo,omitempty"`
	HashAlgo     string `json:"hash_algo,omitempty"`
	Outcome      string `json:"outcome"`
	Reason       string `json:"reason"`
	Ref          uint64 `json:"ref"`
	// Added with accountable administration, also left out when zero.
	Actor  string            `json:"actor,omitempty"`
	Target string            `json:"target,omitempty"`
	IP     string            `json:"ip,omitempty"`
	Fields map[string]string `json:"fields,omitempty"`
}

// auditRecord is the stored encoding: the content plus the chain.
type auditRecord struct {
	auditContent
	Prev   string `json:"prev"`   // hex
	Digest string `json:"digest"` // hex
}

// AuditGenesis returns the Prev of the first entry: 32 zero bytes.
func AuditGenesis() []byte { return make([]byte, sha256.Size) }

func (e *AuditEntry) content() auditContent {
	hashes := e.Hashes
	if hashes == nil {
		hashes = []string{}
	}
	return auditContent{
		Seq: e.Seq, Time: e.Time.UTC().Format(time.RFC3339Nano), Kind: string(e.Kind),
		User: e.User, Client: e.Client, Credential: e.Credential, Hashes: hashes,
		HashCount: e.HashCount, HashesSHA256: e.HashesSHA256, SignAlgo: e.SignAlgo, HashAlgo: e.HashAlgo,
		Outcome: e.Outcome, Reason: e.Reason, Ref: e.Ref,
		Actor: e.Actor, Target: e.Target, IP: e.IP, Fields: e.Fields,
	}
}

// Validate checks what AppendAudit requires of an entry before sealing.
func (e *AuditEntry) Validate() error {
	if !auditKinds[e.Kind] {
		return fmt.Errorf("%w: audit kind %q", ErrInvalid, e.Kind)
	}
	if e.Outcome == "" {
		return fmt.Errorf("%w: audit entry without an outcome", ErrInvalid)
	}
	if e.Time.IsZero() {
		return fmt.Errorf("%w: audit entry without a time", ErrInvalid)
	}
	if e.HashCount < 0 {
		return fmt.Errorf("%w: audit entry with a negative hash count", ErrInvalid)
	}
	// JSON would store invalid UTF-8 as U+FFFD: the entry would no longer
	// decode to what was sealed, and verification would call it tampered.
	texts := append([]string{e.User, e.Client, e.Credential, e.Outcome, e.Reason, e.Actor, e.Target, e.IP}, e.Hashes...)
	for k, v := range e.Fields {
		texts = append(texts, k, v)
	}
	for _, s := range texts {
		if !utf8.ValidString(s) {
			return fmt.Errorf("%w: audit entry text is not valid UTF-8", ErrInvalid)
		}
	}
	if len(e.Fields) > maxAuditFields {
		return fmt.Errorf("%w: audit entry with more than %d fields", ErrInvalid, maxAuditFields)
	}
	if d, err := hex.DecodeString(e.HashesSHA256); e.HashesSHA256 != "" && (err != nil || len(d) != sha256.Size || hex.EncodeToString(d) != e.HashesSHA256) {
		return fmt.Errorf("%w: audit entry hashes_sha256 is not a lowercase hex SHA-256", ErrInvalid)
	}
	for _, oid := range []string{e.SignAlgo, e.HashAlgo} {
		if oid != "" && !IsAuditOID(oid) {
			return fmt.Errorf("%w: audit entry algorithm %q is not a dotted-decimal OID", ErrInvalid, oid)
		}
	}
	return nil
}

// maxAuditFields bounds Fields; an admin act changes a handful.
const maxAuditFields = 32

// maxAuditOID bounds an algorithm OID in an audit entry; the longest one
// signd knows has 22 characters.
const maxAuditOID = 64

// IsAuditOID reports whether s may stand as an algorithm in an audit
// entry: an object identifier in its dotted-decimal form (x509.ParseOID),
// at most 64 characters, spelt canonically (no leading zeros), so that
// what the entry records is exactly the OID that was sent.
func IsAuditOID(s string) bool {
	if len(s) > maxAuditOID {
		return false
	}
	oid, err := x509.ParseOID(s)
	return err == nil && oid.String() == s
}

// SealAudit sets e.Seq, e.Prev and e.Digest for an entry that follows an
// entry with sequence number seq-1 and digest prev (AuditGenesis for the
// first), and returns the encoding to store. Backends call it from
// AppendAudit; e.Time must be set.
func SealAudit(e *AuditEntry, seq uint64, prev []byte) ([]byte, error) {
	if err := e.Validate(); err != nil {
		return nil, err
	}
	if len(prev) != sha256.Size {
		return nil, fmt.Errorf("%w: previous audit digest must be %d bytes", ErrInvalid, sha256.Size)
	}
	e.Seq = seq
	e.Time = e.Time.UTC().Round(0)
	c := e.content()
	digest, err := auditDigest(prev, c)
	if err != nil {
		return nil, err
	}
	e.Prev = bytes.Clone(prev)
	e.Digest = digest
	return encodeAudit(c, e.Prev, e.Digest)
}

func auditDigest(prev []byte, c auditContent) ([]byte, error) {
	data, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("store: encode audit entry: %w", err)
	}
	h := sha256.New()
	h.Write(prev)
	h.Write(data)
	return h.Sum(nil), nil
}

func encodeAudit(c auditContent, prev, digest []byte) ([]byte, error) {
	data, err := json.Marshal(auditRecord{auditContent: c, Prev: hex.EncodeToString(prev), Digest: hex.EncodeToString(digest)})
	if err != nil {
		return nil, fmt.Errorf("store: encode audit entry: %w", err)
	}
	return data, nil
}

// EncodeAuditEntry returns the stored encoding of a sealed entry: compact
// JSON with the fields seq, time, kind, user, client, credential, hashes,
// hash_count, hashes_sha256, sign_algo and hash_algo (each only when set),
// outcome, reason, ref, actor, target, ip and fields (each only when set;
// fields with its keys sorted), prev and digest in that order. Export writes it as one JSON line.
func EncodeAuditEntry(e *AuditEntry) ([]byte, error) {
	return encodeAudit(e.content(), e.Prev, e.Digest)
}

// DecodeAuditEntry parses a stored entry. It refuses anything that is not
// exactly the canonical encoding of some entry (unknown or missing fields,
// other spellings of the same values), so that every change to the stored
// bytes is either refused here or changes the entry's digest. It does not
// check the digest; VerifyAudit does.
func DecodeAuditEntry(raw []byte) (*AuditEntry, error) {
	var r auditRecord
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("undecodable: %v", err)
	}
	t, err := time.Parse(time.RFC3339Nano, r.Time)
	if err != nil {
		return nil, fmt.Errorf("bad time %q", r.Time)
	}
	prev, err1 := hex.DecodeString(r.Prev)
	digest, err2 := hex.DecodeString(r.Digest)
	if err1 != nil || err2 != nil || len(prev) != sha256.Size || len(digest) != sha256.Size {
		return nil, errors.New("bad prev or digest")
	}
	e := &AuditEntry{
		Seq: r.Seq, Time: t, Kind: AuditKind(r.Kind), User: r.User, Client: r.Client,
		Credential: r.Credential, Hashes: r.Hashes, HashCount: r.HashCount, HashesSHA256: r.HashesSHA256,
		SignAlgo: r.SignAlgo, HashAlgo: r.HashAlgo, Outcome: r.Outcome, Reason: r.Reason,
		Ref: r.Ref, Actor: r.Actor, Target: r.Target, IP: r.IP, Fields: r.Fields,
		Prev: prev, Digest: digest,
	}
	again, err := EncodeAuditEntry(e)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(again, raw) {
		return nil, errors.New("not in canonical form")
	}
	return e, nil
}

// AuditBrokenError names the first entry at which the chain does not hold.
type AuditBrokenError struct {
	Seq    uint64 // sequence number (storage key) of the broken entry
	Reason string
}

func (e *AuditBrokenError) Error() string {
	return fmt.Sprintf("audit log broken at entry %d: %s", e.Seq, e.Reason)
}

// AuditVerifier checks entries one by one, in order, from the first. The
// zero value expects entry 1.
type AuditVerifier struct {
	n    uint64 // entries checked
	prev []byte // digest of the last entry checked
}

// Check verifies the entry stored under seq with encoding raw: the key is
// the next sequence number, the encoding is canonical, Seq matches the key,
// Prev is the previous entry's digest and Digest is right. It returns the
// decoded entry, or an *AuditBrokenError.
func (v *AuditVerifier) Check(seq uint64, raw []byte) (*AuditEntry, error) {
	broken := func(format string, a ...any) error {
		return &AuditBrokenError{Seq: seq, Reason: fmt.Sprintf(format, a...)}
	}
	prev := v.prev
	if prev == nil {
		prev = AuditGenesis()
	}
	if seq != v.n+1 {
		return nil, &AuditBrokenError{Seq: v.n + 1, Reason: fmt.Sprintf("missing (next stored entry is %d)", seq)}
	}
	e, err := DecodeAuditEntry(raw)
	if err != nil {
		return nil, broken("%v", err)
	}
	if e.Seq != seq {
		return nil, broken("stored under %d but says seq %d", seq, e.Seq)
	}
	if !bytes.Equal(e.Prev, prev) {
		return nil, broken("prev does not match the digest of entry %d", seq-1)
	}
	want, err := auditDigest(e.Prev, e.content())
	if err != nil {
		return nil, broken("%v", err)
	}
	if !bytes.Equal(want, e.Digest) {
		return nil, broken("digest does not match its content")
	}
	v.n, v.prev = seq, e.Digest
	return e, nil
}

// ResumeAuditVerifier returns an AuditVerifier that expects entry n+1,
// following an entry n whose digest is head (as an audit checkpoint
// records them): it checks the entries appended since, and that they
// extend that head. n 0 is the zero value (head ignored).
func ResumeAuditVerifier(n uint64, head []byte) *AuditVerifier {
	if n == 0 {
		return &AuditVerifier{}
	}
	return &AuditVerifier{n: n, prev: bytes.Clone(head)}
}

// Count returns how many entries have been checked.
func (v *AuditVerifier) Count() uint64 { return v.n }

// Head returns the digest of the last entry checked (AuditGenesis if none).
func (v *AuditVerifier) Head() []byte {
	if v.prev == nil {
		return AuditGenesis()
	}
	return bytes.Clone(v.prev)
}

// VerifyAudit checks the whole chain in tx. It returns the number of
// entries and the digest of the last one, or an *AuditBrokenError naming
// the first broken entry.
func VerifyAudit(tx AuditTx) (count uint64, head []byte, err error) {
	var v AuditVerifier
	err = tx.AuditRecords(1, func(seq uint64, raw []byte) error {
		_, err := v.Check(seq, raw)
		return err
	})
	if err != nil {
		return v.Count(), v.Head(), err
	}
	return v.Count(), v.Head(), nil
}

// AuditEntries calls fn with every entry from Seq from on, decoded. It
// stops at an entry that does not decode (an *AuditBrokenError); it does not
// check the chain (use VerifyAudit).
func AuditEntries(tx AuditTx, from uint64, fn func(*AuditEntry) error) error {
	return tx.AuditRecords(from, func(seq uint64, raw []byte) error {
		e, err := DecodeAuditEntry(raw)
		if err != nil {
			return &AuditBrokenError{Seq: seq, Reason: err.Error()}
		}
		return fn(e)
	})
}
