package auditlog

import (
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
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
	// Chain is the name of the chain the entry was appended to: "" for
	// the log's first chain (bbolt's only one), a node's name on a
	// cluster whose nodes each append to a chain of their own (store/etcd,
	// Options.Node). Set by AppendAudit and sealed: an entry copied into
	// another chain does not verify there.
	Chain string
	// Rev is the cluster order of the entry: the etcd revision of the
	// snapshot its transaction read (0 on bbolt, which has one chain).
	// Set by AppendAudit and sealed; it never decreases along a chain, and
	// entries of several chains interleave by (Rev, Chain, Seq) (Merge).
	Rev    int64
	Prev   []byte // Digest of the previous entry; set by AppendAudit
	Digest []byte // set by AppendAudit
}

// Records is what Verify, Entries and Merge read: store.AuditTx's
// AuditChains and AuditChainRecords. AuditChainRecords calls fn with the
// sequence number under which each entry of chain from Seq from on is
// stored, in order, and its stored encoding (see Encode). raw is valid
// only during the call. An error from fn stops the walk and is returned.
type Records interface {
	AuditChains() ([]ChainInfo, error)
	AuditChainRecords(chain string, from uint64, fn func(seq uint64, raw []byte) error) error
}

// ChainInfo is one chain of the log as the store knows it: chain ""
// always (the log's first chain, which needs no registration), and every
// other chain that is registered (the registry records a chain in the
// transaction of its first entry) or stored (its bucket holds entries).
// A chain other than "" that is not both is reported by Verify.
type ChainInfo struct {
	Name       string
	Registered bool
	Stored     bool
}

// MaxChainName bounds the name of a chain.
const MaxChainName = 63

// CheckChain reports whether name may name a node's chain: 1 to 63
// characters of a-z, 0-9, '.', '_' and '-', the first a letter or a
// digit (so it is a key, a bucket name and a word of a checkpoint line
// as it is). "" is the log's first chain and is not checked here.
func CheckChain(name string) error {
	if name == "" || len(name) > MaxChainName {
		return fmt.Errorf("%w: audit chain name %q: 1 to %d characters", storeerr.ErrInvalid, name, MaxChainName)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case i > 0 && (c == '.' || c == '_' || c == '-'):
		default:
			return fmt.Errorf("%w: audit chain name %q: only a-z, 0-9, '.', '_' and '-', starting with a letter or a digit", storeerr.ErrInvalid, name)
		}
	}
	return nil
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
	// Added with one chain per node, left out when zero: bbolt's entries
	// and those of earlier logs keep their encoding and digest.
	Chain string `json:"chain,omitempty"`
	Rev   int64  `json:"rev,omitempty"`
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
		Chain: e.Chain, Rev: e.Rev,
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
	if e.Rev < 0 {
		return fmt.Errorf("%w: audit entry with a negative revision", storeerr.ErrInvalid)
	}
	if e.Chain != "" {
		if err := CheckChain(e.Chain); err != nil {
			return err
		}
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
// AppendAudit; e.Time must be set, and e.Chain and e.Rev be those of the
// chain and transaction it is appended in.
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
// fields with its keys sorted), chain and rev (each only when set), prev
// and digest in that order. Export writes it as one JSON line.
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
		Chain: r.Chain, Rev: r.Rev, Prev: prev, Digest: digest,
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
	Chain  string // the chain ("" for the log's first one)
	Seq    uint64 // sequence number (storage key) of the broken entry; 0 for the chain as a whole
	Reason string
}

func (e *BrokenError) Error() string {
	switch {
	case e.Chain == "":
		return fmt.Sprintf("audit log broken at entry %d: %s", e.Seq, e.Reason)
	case e.Seq == 0:
		return fmt.Sprintf("audit log broken at chain %s: %s", e.Chain, e.Reason)
	}
	return fmt.Sprintf("audit log broken at entry %d of chain %s: %s", e.Seq, e.Chain, e.Reason)
}

// Verifier checks the entries of one chain one by one, in order, from the
// first. The zero value expects entry 1 of chain "" (NewVerifier names
// another).
type Verifier struct {
	chain string
	n     uint64 // entries checked
	prev  []byte // digest of the last entry checked
	rev   int64  // Rev of the last entry checked
}

// NewVerifier returns a Verifier of the chain named chain, expecting its
// entry 1.
func NewVerifier(chain string) *Verifier { return &Verifier{chain: chain} }

// Check verifies the entry stored under seq with encoding raw: the key is
// the next sequence number, the encoding is canonical, Seq matches the key,
// the entry names the chain it is stored in, its Rev is not below the one
// before, Prev is the previous entry's digest and Digest is right. It
// returns the decoded entry, or a *BrokenError.
func (v *Verifier) Check(seq uint64, raw []byte) (*Entry, error) {
	broken := func(format string, a ...any) error {
		return &BrokenError{Chain: v.chain, Seq: seq, Reason: fmt.Sprintf(format, a...)}
	}
	prev := v.prev
	if prev == nil {
		prev = Genesis()
	}
	if seq != v.n+1 {
		return nil, &BrokenError{Chain: v.chain, Seq: v.n + 1, Reason: fmt.Sprintf("missing (next stored entry is %d)", seq)}
	}
	e, err := Decode(raw)
	if err != nil {
		return nil, broken("%v", err)
	}
	if e.Seq != seq {
		return nil, broken("stored under %d but says seq %d", seq, e.Seq)
	}
	if e.Chain != v.chain {
		return nil, broken("stored in chain %q but sealed in chain %q", v.chain, e.Chain)
	}
	if e.Rev < v.rev {
		return nil, broken("revision %d is below the previous entry's %d: entries out of cluster order", e.Rev, v.rev)
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
	v.n, v.prev, v.rev = seq, e.Digest, e.Rev
	return e, nil
}

// ResumeVerifier returns an Verifier of chain "" that expects entry n+1,
// following an entry n whose digest is head (as an audit checkpoint
// records them): it checks the entries appended since, and that they
// extend that head. n 0 is the zero value (head ignored).
func ResumeVerifier(n uint64, head []byte) *Verifier {
	return ResumeChainVerifier("", n, head)
}

// ResumeChainVerifier is ResumeVerifier for the chain named chain.
func ResumeChainVerifier(chain string, n uint64, head []byte) *Verifier {
	if n == 0 {
		return &Verifier{chain: chain}
	}
	return &Verifier{chain: chain, n: n, prev: bytes.Clone(head)}
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

// ChainHead is one chain's size and the digest of its last entry.
type ChainHead struct {
	Chain string
	Size  uint64
	Head  []byte
}

// LogHead is what the heads of a log's chains add up to: the number of
// entries and one digest that covers every chain. A log whose only chain
// with entries is "" (every bbolt log) has that chain's size and head,
// exactly as before there were several chains; an empty log has 0 and
// Genesis; otherwise the digest is HeadsDigest of the chains with
// entries. heads must be in chain order (Verify's).
func LogHead(heads []ChainHead) (size uint64, head []byte) {
	var used []ChainHead
	for _, h := range heads {
		if h.Size > 0 {
			used = append(used, h)
			size += h.Size
		}
	}
	switch {
	case len(used) == 0:
		return 0, Genesis()
	case len(used) == 1 && used[0].Chain == "":
		return size, bytes.Clone(used[0].Head)
	}
	return size, HeadsDigest(used)
}

// HeadsDigest is the digest of several chains' heads: SHA-256 of one
// line per chain, in the order given (by chain name, "" first),
// "<bucket> <size> <lowercase hex head>\n", where bucket is the chain's
// bucket name (ChainBucket: "audit" for chain "", "audit.<name>" for the
// others). An audit checkpoint of several chains signs it (package
// checkpoint).
func HeadsDigest(heads []ChainHead) []byte {
	h := sha256.New()
	for _, c := range heads {
		fmt.Fprintf(h, "%s %d %s\n", ChainBucket(c.Chain), c.Size, hex.EncodeToString(c.Head))
	}
	return h.Sum(nil)
}

// ChainBucket is the name of the bucket that holds the chain named chain:
// "audit" for chain "", "audit.<chain>" for a node's.
func ChainBucket(chain string) string {
	if chain == "" {
		return "audit"
	}
	return "audit." + chain
}

// Verify checks every chain in tx from its first entry, and that every
// chain but "" is both registered and stored. It returns the number of
// entries of all chains and the log's head (LogHead: for a log of chain
// "" alone, the digest of its last entry), or a *BrokenError naming the
// first broken entry (in chain order).
func Verify(tx Records) (count uint64, head []byte, err error) {
	heads, err := VerifyChains(tx)
	count, head = LogHead(heads)
	return count, head, err
}

// VerifyChains is Verify chain by chain: the chains in the order
// AuditChains gives them ("" first, then by name) with their sizes and
// heads, as far as they verified.
func VerifyChains(tx Records) ([]ChainHead, error) {
	chains, err := tx.AuditChains()
	if err != nil {
		return nil, err
	}
	var heads []ChainHead
	var first error
	for _, c := range chains {
		v := NewVerifier(c.Name)
		err := tx.AuditChainRecords(c.Name, 1, func(seq uint64, raw []byte) error {
			_, err := v.Check(seq, raw)
			return err
		})
		heads = append(heads, ChainHead{Chain: c.Name, Size: v.Count(), Head: v.Head()})
		var be *BrokenError
		switch {
		case err != nil && !errors.As(err, &be):
			return heads, err
		case err == nil:
			err = CheckRegistry(c, v.Count())
		}
		if first == nil {
			first = err
		}
	}
	return heads, first
}

// CheckRegistry reports, as a *BrokenError of the chain as a whole, a
// chain other than "" that holds count entries (as verified) and is not
// both registered and stored, or whose name is not one a chain may have.
func CheckRegistry(c ChainInfo, count uint64) error {
	broken := func(reason string) error { return &BrokenError{Chain: c.Name, Reason: reason} }
	switch {
	case c.Name == "":
		return nil
	case !c.Registered:
		return broken("the chain is stored but not in the registry of chains")
	case !c.Stored || count == 0:
		return broken("the chain is in the registry of chains but has no entries: it was deleted")
	}
	if err := CheckChain(c.Name); err != nil {
		return broken(err.Error())
	}
	return nil
}

// Entries calls fn with every entry from Seq from on of every chain,
// decoded, in cluster order (Merge). It stops at an entry that does not
// decode (a *BrokenError); it does not check the chains (use Verify).
func Entries(tx Records, from uint64, fn func(*Entry) error) error {
	return Merge(tx, from, func(e *Entry, _ []byte) error { return fn(e) })
}

// Merge calls fn with every entry from Seq from on of every chain,
// decoded, and its stored encoding (valid only during the call), in
// cluster order: by Rev, then by chain name, then by Seq. Along one
// chain that is its order (Rev never decreases along a chain, which
// Verify checks); across chains an entry whose transaction read what
// another entry's transaction wrote has the greater Rev (its snapshot
// includes that commit), and entries of one Rev on two chains are of
// concurrent transactions, ordered by chain name. A log of one chain is
// walked in Seq order. It stops at an entry that does not decode (a
// *BrokenError); it does not check the chains (use Verify).
func Merge(tx Records, from uint64, fn func(e *Entry, raw []byte) error) error {
	chains, err := tx.AuditChains()
	if err != nil {
		return err
	}
	walk := func(chain string, yield func(*Entry, []byte) error) error {
		return tx.AuditChainRecords(chain, from, func(seq uint64, raw []byte) error {
			e, err := Decode(raw)
			if err != nil {
				return &BrokenError{Chain: chain, Seq: seq, Reason: err.Error()}
			}
			return yield(e, raw)
		})
	}
	if len(chains) == 1 {
		return walk(chains[0].Name, fn)
	}
	return mergeChains(chains, walk, fn)
}

// head is the next entry of one chain in a merge.
type head struct {
	e    *Entry
	raw  []byte
	next func() (*Entry, []byte, error, bool)
	stop func()
}

// mergeChains walks every chain at once (each a pull iterator over its
// walk, which runs in the same transaction, one step at a time) and calls
// fn with the least (Rev, chain, Seq) of their next entries.
func mergeChains(chains []ChainInfo, walk func(string, func(*Entry, []byte) error) error, fn func(*Entry, []byte) error) error {
	heads := make([]*head, 0, len(chains))
	defer func() {
		for _, h := range heads {
			h.stop()
		}
	}()
	for _, c := range chains {
		next, stop := iter.Pull2(func(yield func(pair, error) bool) {
			err := walk(c.Name, func(e *Entry, raw []byte) error {
				if !yield(pair{e, raw}, nil) {
					return errStopMerge
				}
				return nil
			})
			if err != nil && !errors.Is(err, errStopMerge) {
				yield(pair{}, err)
			}
		})
		h := &head{stop: stop, next: func() (*Entry, []byte, error, bool) {
			p, err, ok := next()
			return p.e, p.raw, err, ok
		}}
		heads = append(heads, h)
	}
	// live are the chains with an entry pending, in chain order.
	var live []*head
	for _, h := range heads {
		e, raw, err, ok := h.next()
		if err != nil {
			return err
		}
		if ok {
			h.e, h.raw = e, raw
			live = append(live, h)
		}
	}
	for len(live) > 0 {
		least := 0
		for i, h := range live[1:] {
			if h.e.Rev < live[least].e.Rev {
				least = i + 1
			}
		}
		h := live[least]
		if err := fn(h.e, h.raw); err != nil {
			return err
		}
		e, raw, err, ok := h.next()
		if err != nil {
			return err
		}
		if !ok {
			live = slices.Delete(live, least, least+1)
			continue
		}
		h.e, h.raw = e, raw
	}
	return nil
}

// pair is one entry of a chain's walk.
type pair struct {
	e   *Entry
	raw []byte
}

var errStopMerge = errors.New("auditlog: merge stopped")
