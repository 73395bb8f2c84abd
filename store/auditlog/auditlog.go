package auditlog

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

	"github.com/signd/signd/store/storeerr"
)

// Kind is what an audit entry records.
type Kind string

// Audit entry kinds.
const (
	// SignHash is one signatures/signHash request of an authenticated
	// caller: granted (SAD consumed, signing asked of the HSM), refused
	// (with the reason), failed (the HSM failed after a grant; Ref names
	// the granted entry) or restored (as failed, and the SAD was given
	// back because no signature was made).
	SignHash Kind = "signHash"
	// CredentialEnrolled is a key pair generated for a user (outcome
	// "pending") or a certificate chain attached to it (outcome "enabled").
	CredentialEnrolled Kind = "credential_enrolled"
	// CredentialEnabled and CredentialDisabled are an admin
	// switching a credential on or off.
	CredentialEnabled  Kind = "credential_enabled"
	CredentialDisabled Kind = "credential_disabled"
	// CredentialRemoved is an admin removing a credential: its key
	// pair destroyed in the HSM, what was bound to it revoked, its record
	// deleted.
	CredentialRemoved Kind = "credential_removed"
	// Timestamp is a time-stamp token issued by signatures/timestamp
	// (outcome granted): Hashes holds the digest it covers, Reason its
	// serial number in hex.
	Timestamp Kind = "timestamp"
	// CredentialAuth is an admin changing a credential's multisign or
	// authMode (which revokes what was authorized under the old values).
	CredentialAuth Kind = "credential_auth"
	// Authorize is one credentials/authorize (CSC v1 §11.6) or
	// credentials/extendTransaction (§11.7) request: granted (a SAD issued
	// for the hashes listed) or refused (with the reason).
	Authorize Kind = "authorize"

	// Administration (package admin). Every operation of the admin
	// service appends one entry naming its Actor and Target; Fields lists
	// what changed, never a secret ("password": "changed"). A refused
	// attempt (by role or by validation) is recorded with outcome refused
	// and the Reason.
	UserAdded          Kind = "user_added"
	UserEnabled        Kind = "user_enabled"
	UserDisabled       Kind = "user_disabled"
	UserUnlocked       Kind = "user_unlocked"
	UserPasswordSet    Kind = "user_password_set"
	UserPINSet         Kind = "user_pin_set"
	UserTOTPEnrolled   Kind = "user_totp_enrolled"
	UserTOTPRemoved    Kind = "user_totp_removed"
	UserProofAdded     Kind = "user_proof_added"
	UserRemoved        Kind = "user_removed"
	ClientAdded        Kind = "client_added"
	ClientRemoved      Kind = "client_removed"
	CredentialImported Kind = "credential_certificate_imported"
	OIDCKeyCreated     Kind = "oidc_key_created"
	OIDCKeysRotated    Kind = "oidc_keys_rotated"
	TSAEnrolled        Kind = "tsa_enrolled"
	TSAImported        Kind = "tsa_certificate_imported"
	AuditKeyCreated    Kind = "audit_key_created"
	Checkpoint         Kind = "audit_checkpoint"
	AdminRead          Kind = "admin_read" // a read-only admin operation; Fields["op"] names it
	PendingRequested   Kind = "pending_requested"
	PendingApproved    Kind = "pending_approved"
	PendingRejected    Kind = "pending_rejected"
	PendingExpired     Kind = "pending_expired"
	StoreBackup        Kind = "store_backup"
	ConfigLoaded       Kind = "config_loaded"
	AdminRefused       Kind = "admin_refused" // an admin operation refused before it could be named by its kind (unknown method, no role)

	// Security events of end users (packages oauth, csc): User is the
	// account, Client the OAuth client where there is one, IP the remote
	// address; never a password, PIN or code.
	Login     Kind = "login"       // outcome ok, failed or refused (locked); Fields["method"]: password, totp, auth_login
	LoginLock Kind = "user_locked" // password login locked by too many failures
	PINLock   Kind = "pin_locked"  // signing PIN locked by too many failures
	Logout    Kind = "logout"
	Account   Kind = "account_action" // the account page: Fields["action"] names it
)

// kinds is every kind AppendAudit accepts.
var kinds = map[Kind]bool{
	SignHash: true, CredentialEnrolled: true, CredentialEnabled: true, CredentialDisabled: true,
	CredentialRemoved: true, Timestamp: true, CredentialAuth: true, Authorize: true,
	UserAdded: true, UserEnabled: true, UserDisabled: true, UserUnlocked: true,
	UserPasswordSet: true, UserPINSet: true, UserTOTPEnrolled: true, UserTOTPRemoved: true,
	UserProofAdded: true, UserRemoved: true, ClientAdded: true, ClientRemoved: true,
	CredentialImported: true, OIDCKeyCreated: true, OIDCKeysRotated: true, TSAEnrolled: true,
	TSAImported: true, AuditKeyCreated: true, Checkpoint: true, AdminRead: true,
	PendingRequested: true, PendingApproved: true, PendingRejected: true, PendingExpired: true,
	StoreBackup: true, ConfigLoaded: true, AdminRefused: true,
	Login: true, LoginLock: true, PINLock: true, Logout: true, Account: true,
}

// KnownKind reports whether k is a kind AppendAudit accepts.
func KnownKind(k Kind) bool { return kinds[k] }

// Kinds lists every kind AppendAudit accepts, sorted.
func Kinds() []string {
	ks := make([]string, 0, len(kinds))
	for k := range kinds {
		ks = append(ks, string(k))
	}
	slices.Sort(ks)
	return ks
}

// Audit outcomes. Credential entries may also use the credential status
// they leave behind ("pending", "enabled", "disabled").
const (
	Granted = "granted" // signHash: SAD consumed, signature requested from the HSM
	Refused = "refused" // signHash: refused; Reason says why
	Failed  = "failed"  // signHash: the HSM failed after the grant Ref
	// Restored: signHash: the HSM failed after the grant Ref before
	// making any signature, and the SAD that grant consumed was stored
	// again, unchanged (a compensating entry; the grant is not edited).
	Restored = "restored"
	OK       = "ok"
)

// Entry is one entry of the tamper-evident audit log. The entries form
// a hash chain: Digest = SHA-256(Prev ‖ canonical content), where Prev is
// the Digest of the entry before (32 zero bytes for the first) and the
// canonical content is the JSON encoding of every field except Prev and
// Digest. Changing, removing or reordering a stored entry breaks the chain
// at that entry (Verify); removing entries at the end is only visible
// against a head digest kept elsewhere (signd audit verify prints it).
//
// An entry never holds a secret: no token, SAD, code, PIN or password, only
// names, IDs and the digests that were (to be) signed.
type Entry struct {
	Seq        uint64    // 1, 2, 3, ... set by AppendAudit
	Time       time.Time // when it happened; the store's clock when zero
	Kind       Kind
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

// Records is what Verify and Entries read: store.AuditTx's AuditRecords,
// which calls fn with the sequence number under which each entry from Seq
// from on is stored, in order, and its stored encoding (see Encode). raw
// is valid only during the call. An error from fn stops the walk and is
// returned.
type Records interface {
	AuditRecords(from uint64, fn func(seq uint64, raw []byte) error) error
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

// Genesis returns the Prev of the first entry: 32 zero bytes.
func Genesis() []byte { return make([]byte, sha256.Size) }

func (e *Entry) content() auditContent {
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
func (e *Entry) Validate() error {
	if !kinds[e.Kind] {
		return fmt.Errorf("%w: audit kind %q", storeerr.ErrInvalid, e.Kind)
	}
	if e.Outcome == "" {
		return fmt.Errorf("%w: audit entry without an outcome", storeerr.ErrInvalid)
	}
	if e.Time.IsZero() {
		return fmt.Errorf("%w: audit entry without a time", storeerr.ErrInvalid)
	}
	if e.HashCount < 0 {
		return fmt.Errorf("%w: audit entry with a negative hash count", storeerr.ErrInvalid)
	}
	// JSON would store invalid UTF-8 as U+FFFD: the entry would no longer
	// decode to what was sealed, and verification would call it tampered.
	texts := append([]string{e.User, e.Client, e.Credential, e.Outcome, e.Reason, e.Actor, e.Target, e.IP}, e.Hashes...)
	for k, v := range e.Fields {
		texts = append(texts, k, v)
	}
	for _, s := range texts {
		if !utf8.ValidString(s) {
			return fmt.Errorf("%w: audit entry text is not valid UTF-8", storeerr.ErrInvalid)
		}
	}
	if len(e.Fields) > maxAuditFields {
		return fmt.Errorf("%w: audit entry with more than %d fields", storeerr.ErrInvalid, maxAuditFields)
	}
	if d, err := hex.DecodeString(e.HashesSHA256); e.HashesSHA256 != "" && (err != nil || len(d) != sha256.Size || hex.EncodeToString(d) != e.HashesSHA256) {
		return fmt.Errorf("%w: audit entry hashes_sha256 is not a lowercase hex SHA-256", storeerr.ErrInvalid)
	}
	for _, oid := range []string{e.SignAlgo, e.HashAlgo} {
		if oid != "" && !IsOID(oid) {
			return fmt.Errorf("%w: audit entry algorithm %q is not a dotted-decimal OID", storeerr.ErrInvalid, oid)
		}
	}
	return nil
}

// maxAuditFields bounds Fields; an admin act changes a handful.
const maxAuditFields = 32

// maxAuditOID bounds an algorithm OID in an audit entry; the longest one
// signd knows has 22 characters.
const maxAuditOID = 64

// IsOID reports whether s may stand as an algorithm in an audit
// entry: an object identifier in its dotted-decimal form (x509.ParseOID),
// at most 64 characters, spelt canonically (no leading zeros), so that
// what the entry records is exactly the OID that was sent.
func IsOID(s string) bool {
	if len(s) > maxAuditOID {
		return false
	}
	oid, err := x509.ParseOID(s)
	return err == nil && oid.String() == s
}

// Seal sets e.Seq, e.Prev and e.Digest for an entry that follows an
// entry with sequence number seq-1 and digest prev (Genesis for the
// first), and returns the encoding to store. Backends call it from
// AppendAudit; e.Time must be set.
func Seal(e *Entry, seq uint64, prev []byte) ([]byte, error) {
	if err := e.Validate(); err != nil {
		return nil, err
	}
	if len(prev) != sha256.Size {
		return nil, fmt.Errorf("%w: previous audit digest must be %d bytes", storeerr.ErrInvalid, sha256.Size)
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

// Encode returns the stored encoding of a sealed entry: compact
// JSON with the fields seq, time, kind, user, client, credential, hashes,
// hash_count, hashes_sha256, sign_algo and hash_algo (each only when set),
// outcome, reason, ref, actor, target, ip and fields (each only when set;
// fields with its keys sorted), prev and digest in that order. Export writes it as one JSON line.
func Encode(e *Entry) ([]byte, error) {
	return encodeAudit(e.content(), e.Prev, e.Digest)
}

// Decode parses a stored entry. It refuses anything that is not
// exactly the canonical encoding of some entry (unknown or missing fields,
// other spellings of the same values), so that every change to the stored
// bytes is either refused here or changes the entry's digest. It does not
// check the digest; Verify does.
func Decode(raw []byte) (*Entry, error) {
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
	e := &Entry{
		Seq: r.Seq, Time: t, Kind: Kind(r.Kind), User: r.User, Client: r.Client,
		Credential: r.Credential, Hashes: r.Hashes, HashCount: r.HashCount, HashesSHA256: r.HashesSHA256,
		SignAlgo: r.SignAlgo, HashAlgo: r.HashAlgo, Outcome: r.Outcome, Reason: r.Reason,
		Ref: r.Ref, Actor: r.Actor, Target: r.Target, IP: r.IP, Fields: r.Fields,
		Prev: prev, Digest: digest,
	}
	again, err := Encode(e)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(again, raw) {
		return nil, errors.New("not in canonical form")
	}
	return e, nil
}

// BrokenError names the first entry at which the chain does not hold.
type BrokenError struct {
	Seq    uint64 // sequence number (storage key) of the broken entry
	Reason string
}

func (e *BrokenError) Error() string {
	return fmt.Sprintf("audit log broken at entry %d: %s", e.Seq, e.Reason)
}

// Verifier checks entries one by one, in order, from the first. The
// zero value expects entry 1.
type Verifier struct {
	n    uint64 // entries checked
	prev []byte // digest of the last entry checked
}

// Check verifies the entry stored under seq with encoding raw: the key is
// the next sequence number, the encoding is canonical, Seq matches the key,
// Prev is the previous entry's digest and Digest is right. It returns the
// decoded entry, or a *BrokenError.
func (v *Verifier) Check(seq uint64, raw []byte) (*Entry, error) {
	broken := func(format string, a ...any) error {
		return &BrokenError{Seq: seq, Reason: fmt.Sprintf(format, a...)}
	}
	prev := v.prev
	if prev == nil {
		prev = Genesis()
	}
	if seq != v.n+1 {
		return nil, &BrokenError{Seq: v.n + 1, Reason: fmt.Sprintf("missing (next stored entry is %d)", seq)}
	}
	e, err := Decode(raw)
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

// ResumeVerifier returns an Verifier that expects entry n+1,
// following an entry n whose digest is head (as an audit checkpoint
// records them): it checks the entries appended since, and that they
// extend that head. n 0 is the zero value (head ignored).
func ResumeVerifier(n uint64, head []byte) *Verifier {
	if n == 0 {
		return &Verifier{}
	}
	return &Verifier{n: n, prev: bytes.Clone(head)}
}

// Count returns how many entries have been checked.
func (v *Verifier) Count() uint64 { return v.n }

// Head returns the digest of the last entry checked (Genesis if none).
func (v *Verifier) Head() []byte {
	if v.prev == nil {
		return Genesis()
	}
	return bytes.Clone(v.prev)
}

// Verify checks the whole chain in tx. It returns the number of
// entries and the digest of the last one, or a *BrokenError naming
// the first broken entry.
func Verify(tx Records) (count uint64, head []byte, err error) {
	var v Verifier
	err = tx.AuditRecords(1, func(seq uint64, raw []byte) error {
		_, err := v.Check(seq, raw)
		return err
	})
	if err != nil {
		return v.Count(), v.Head(), err
	}
	return v.Count(), v.Head(), nil
}

// Entries calls fn with every entry from Seq from on, decoded. It
// stops at an entry that does not decode (a *BrokenError); it does not
// check the chain (use Verify).
func Entries(tx Records, from uint64, fn func(*Entry) error) error {
	return tx.AuditRecords(from, func(seq uint64, raw []byte) error {
		e, err := Decode(raw)
		if err != nil {
			return &BrokenError{Seq: seq, Reason: err.Error()}
		}
		return fn(e)
	})
}
