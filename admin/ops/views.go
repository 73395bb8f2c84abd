package ops

import (
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/signd/signd/admin/input"
	"github.com/signd/signd/hsm"
	"github.com/signd/signd/store"
)

// AuditExportRequest selects the audit entries to export: an entry is
// exported when it matches every filter given. No filter exports all.
type AuditExportRequest struct {
	Since time.Time `json:"since"`           // only entries at or after Since; zero = from the first
	Until time.Time `json:"until,omitzero"`  // only entries before Until; zero = to the last
	Kinds []string  `json:"kinds,omitempty"` // only entries of one of these kinds (store.KnownAuditKind)
	// Actor selects the entries whose actor contains it: "uid:1001"
	// matches "uid:1001 (alice)"; "uid:1001 (" matches only that uid.
	Actor string `json:"actor,omitempty"`
	// Target selects the entries about one thing, named as audit
	// targets are ("user:alice", "client:rp", "credential:<id>",
	// "oidc-key:<kid>", "tsa-key:<hex id>"): entries whose Target is
	// exactly it, and for "user:", "client:" and "credential:" also every
	// entry whose User, Client or Credential field is that name (the
	// protocol's entries, which name no target: signHash, authorize; and
	// for a user, the acts on the user's credentials).
	Target string `json:"target,omitempty"`
}

// maxExportFilter bounds the export filter's strings and kinds.
const maxExportFilter = 256

// Check refuses a filter that can select nothing by mistake.
func (r AuditExportRequest) Check() error {
	if !r.Until.IsZero() && !r.Until.After(r.Since) {
		return errorf(KindInvalid, "until (%s) must be after since (%s)", r.Until.UTC().Format(time.RFC3339Nano), r.Since.UTC().Format(time.RFC3339Nano))
	}
	if len(r.Kinds) > maxExportFilter {
		return errorf(KindInvalid, "at most %d kinds", maxExportFilter)
	}
	for _, k := range r.Kinds {
		if !store.KnownAuditKind(store.AuditKind(k)) {
			return errorf(KindInvalid, "unknown audit kind %.64q (kinds: %s)", k, strings.Join(store.AuditKinds(), ", "))
		}
	}
	for name, v := range map[string]string{"actor": r.Actor, "target": r.Target} {
		if len(v) > maxExportFilter || !input.Printable(v) {
			return errorf(KindInvalid, "%s must be at most %d printable characters", name, maxExportFilter)
		}
	}
	return nil
}

// Fields names the filter in the export's admin_read entry.
func (r AuditExportRequest) Fields() map[string]string {
	f := map[string]string{}
	if !r.Since.IsZero() {
		f["since"] = r.Since.UTC().Format(time.RFC3339Nano)
	}
	if !r.Until.IsZero() {
		f["until"] = r.Until.UTC().Format(time.RFC3339Nano)
	}
	if len(r.Kinds) > 0 {
		f["kinds"] = strings.Join(r.Kinds, ",")
	}
	if r.Actor != "" {
		f["actor"] = r.Actor
	}
	if r.Target != "" {
		f["target"] = r.Target
	}
	return f
}

// Selects reports whether e matches every filter of r.
func (r AuditExportRequest) Selects(e *store.AuditEntry) bool {
	if e.Time.Before(r.Since) || (!r.Until.IsZero() && !e.Time.Before(r.Until)) {
		return false
	}
	if len(r.Kinds) > 0 && !slices.Contains(r.Kinds, string(e.Kind)) {
		return false
	}
	if r.Actor != "" && !strings.Contains(e.Actor, r.Actor) {
		return false
	}
	if r.Target != "" && e.Target != r.Target {
		kind, name, _ := strings.Cut(r.Target, ":")
		switch {
		case name == "":
			return false
		case kind == "user" && e.User == name, kind == "client" && e.Client == name, kind == "credential" && e.Credential == name:
		default:
			return false
		}
	}
	return true
}

// AuditReport is the outcome of an audit log verification: every chain
// of the log (one per node of a cluster whose nodes are named, else chain
// "" alone), each from its first entry.
type AuditReport struct {
	OK      bool   `json:"ok"`
	Entries uint64 `json:"entries"` // entries verified, of all chains
	// Head is the log's head, hex: for a log of chain "" alone the digest
	// of its last verified entry, else the digest of the chains' heads
	// (store.AuditHeadsDigest), which a checkpoint signs.
	Head     string `json:"head"`
	BrokenAt uint64 `json:"broken_at,omitempty"` // first broken entry (0 with a reason: the chain as a whole)
	// BrokenChain is the chain of the first broken entry ("" for chain "").
	BrokenChain string `json:"broken_chain,omitempty"`
	Reason      string `json:"reason,omitempty"`
	// Chains lists every chain, when the log has more than chain "".
	Chains []AuditChainView `json:"chains,omitempty"`
}

// AuditChainView is one chain of the audit log as verified.
type AuditChainView struct {
	Chain   string `json:"chain"`   // "" for the log's first chain, else a node's name
	Entries uint64 `json:"entries"` // entries that verify from its first
	Head    string `json:"head"`    // hex digest of the last of them
}

// Broken says where a report's log is broken: "entry N", "entry N of
// chain X" or "chain X".
func Broken(chain string, seq uint64) string {
	switch {
	case chain == "":
		return fmt.Sprintf("entry %d", seq)
	case seq == 0:
		return "chain " + chain
	}
	return fmt.Sprintf("entry %d of chain %s", seq, chain)
}

// CreateAuditKeyRequest makes the audit signing key. Algorithm "" is
// Ed25519 where the token has CKM_EC_EDWARDS_KEY_PAIR_GEN and CKM_EDDSA,
// else ECDSA P-256.
type CreateAuditKeyRequest struct {
	Algorithm string `json:"algorithm,omitempty"`
}

// AuditKeyView is the audit key: what a witness or an auditor needs to
// check checkpoints.
type AuditKeyView struct {
	Label     string `json:"label"`
	ID        string `json:"id"`        // hex CKA_ID
	Algorithm string `json:"algorithm"` // "Ed25519", "ECDSA P-256"
	Origin    string `json:"origin"`    // audit.checkpoint_origin: the checkpoints' first line and signature name
	// VerifierKey is "<origin>+<key ID>+<base64 key>", as
	// golang.org/x/mod/sumdb/note reads it (Ed25519).
	VerifierKey string `json:"verifier_key"`
}

// CheckpointView is one signed checkpoint.
type CheckpointView struct {
	Origin string    `json:"origin"`
	Size   uint64    `json:"size"` // entries 1..Size are covered
	Hash   string    `json:"hash"` // base64 digest of entry Size
	Time   time.Time `json:"time"`
	File   string    `json:"file"`
	Note   string    `json:"note"` // the signed note, as written to File
	// Unchanged: nothing was added since the latest checkpoint, which is
	// returned as it was.
	Unchanged bool `json:"unchanged,omitempty"`
}

// AuditVerifyCheckpointRequest checks the audit log against a saved
// checkpoint, a signed note as written to audit.checkpoint_dir. Key is
// the verifier key to check its signature with; "" is the audit key in
// the token.
type AuditVerifyCheckpointRequest struct {
	Checkpoint string `json:"checkpoint"`
	Key        string `json:"key,omitempty"`
}

// CheckpointReport is the outcome of AuditVerifyCheckpoint: the
// checkpoint's signature held (else the operation fails), and whether the
// log extends it.
type CheckpointReport struct {
	OK      bool   `json:"ok"` // the chain holds and extends the checkpoint
	Origin  string `json:"origin"`
	Size    uint64 `json:"size"`
	Hash    string `json:"hash"`
	Key     string `json:"key"`     // the verifier key the signature was checked with
	Entries uint64 `json:"entries"` // entries that verify as a chain from the first
	Head    string `json:"head"`    // hex digest of the last of them
	Extends bool   `json:"extends"` // entry Size exists and has the checkpoint's hash
	// Problem says why the log does not extend the checkpoint: cut off
	// (truncated) or changed up to entry Size (rewritten or forked).
	Problem     string `json:"problem,omitempty"`
	BrokenAt    uint64 `json:"broken_at,omitempty"`    // first broken entry of the chain
	BrokenChain string `json:"broken_chain,omitempty"` // the chain it is in
	Reason      string `json:"reason,omitempty"`
}

// EnrollmentView is the link AddUser returns once: it is stored only as a
// hash.
type EnrollmentView struct {
	Link      string    `json:"link"`
	ExpiresAt time.Time `json:"expires_at"`
}

// EnrollRequest is what the user posts on the enrollment page: the token
// of the link, their new password and signing PIN, and the address they
// post from (for the audit entry).
type EnrollRequest struct {
	Token, Password, PIN, IP string
	// TOTPSecret, when set, is the base32 TOTP secret (RFC 6238) the page
	// showed and the user's authenticator app confirmed with a code of
	// time step TOTPStep (the page checks the code): stored with the
	// password and PIN, the step as accepted.
	TOTPSecret string
	TOTPStep   int64
}

// HSMInfoView is `signd hsm info`: the token's capabilities and its keys,
// each with the freeze defects the token shows.
type HSMInfoView struct {
	Capabilities *hsm.Capabilities `json:"capabilities"`
	Keys         []HSMKeyView      `json:"keys"`
	// Unfrozen counts the keys with defects.
	Unfrozen int `json:"unfrozen_keys"`
}

// HSMKeyView is one key on the token.
type HSMKeyView struct {
	ID      string   `json:"id"` // hex CKA_ID
	Label   string   `json:"label"`
	Type    string   `json:"type"` // "RSA-2048", "EC P-256", "Ed25519"
	Defects []string `json:"defects,omitempty"`
}

// PendingView is what operators see of a pending request. Request is the
// held operation's request: it never carries a secret (Holdable).
type PendingView struct {
	ID          string          `json:"id"`
	Op          string          `json:"op"`
	Request     json.RawMessage `json:"request"`
	RequestedBy string          `json:"requested_by"`
	CreatedAt   time.Time       `json:"created_at"`
	ExpiresAt   time.Time       `json:"expires_at"`
	// Expired: it can no longer be approved; the sweeper removes it.
	Expired bool `json:"expired,omitempty"`
}

// ApprovalResult is an approved request and the answer of the operation
// it performed.
type ApprovalResult struct {
	Pending    PendingView     `json:"pending"`
	ApprovedBy string          `json:"approved_by"`
	Result     json.RawMessage `json:"result"`
}

// RevokedView counts what an operation revoked.
type RevokedView struct {
	AccessTokens    int `json:"access_tokens"`
	SADs            int `json:"sads"`
	Codes           int `json:"codes"`
	PendingRequests int `json:"pending_requests"`
	Sessions        int `json:"sessions"`
}

// String is the CLI's line: "2 access tokens, 1 SAD, 0 codes, ...".
func (r *RevokedView) String() string {
	return strings.Join([]string{
		plural(r.AccessTokens, "access token", "access tokens"),
		plural(r.SADs, "SAD", "SADs"),
		plural(r.Codes, "authorization code", "authorization codes"),
		plural(r.PendingRequests, "pending authorization request", "pending authorization requests"),
		plural(r.Sessions, "login session", "login sessions"),
	}, ", ")
}

// LogValue logs the counts as a group.
func (r *RevokedView) LogValue() slog.Value {
	return slog.GroupValue(
		slog.Int("access_tokens", r.AccessTokens), slog.Int("sads", r.SADs), slog.Int("codes", r.Codes),
		slog.Int("pending_requests", r.PendingRequests), slog.Int("sessions", r.Sessions),
	)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// RemoveResult reports a removed user or client.
type RemoveResult struct {
	Removed string      `json:"removed"` // username or client ID
	Revoked RevokedView `json:"revoked"`
}

// RemoveCredentialResult reports a removed credential.
type RemoveCredentialResult struct {
	Removed string `json:"removed"` // credential ID
	Owner   string `json:"owner"`
	KeyID   string `json:"key_id"` // hex CKA_ID
	Label   string `json:"label"`
	// Destroyed lists the HSM objects destroyed: "private key", "public
	// key" and, once a certificate was imported, "certificate". Empty when
	// the key pair was already gone (a removal that failed after
	// destroying it, run again).
	Destroyed []string    `json:"destroyed"`
	Revoked   RevokedView `json:"revoked"`
}

// EnrollTOTPRequest enrolls a TOTP second factor (RFC 6238) for a user.
type EnrollTOTPRequest struct {
	Username string `json:"username"`
	// Issuer names the service in the authenticator app; "" = "signd".
	Issuer string `json:"issuer,omitempty"`
}

// TOTPEnrollment is a new TOTP secret, returned once so that the user can
// put it in an authenticator app; it is not shown again.
type TOTPEnrollment struct {
	Username string `json:"username"`
	// Secret is the base32 shared secret (160 bits).
	Secret string `json:"secret"`
	// URI is the otpauth:// key URI authenticator apps read from a QR code.
	URI       string `json:"uri"`
	Period    int    `json:"period"`
	Digits    int    `json:"digits"`
	Algorithm string `json:"algorithm"`
	// Revoked is what the enrollment revoked: everything issued to the
	// user before the second factor existed.
	Revoked *RevokedView `json:"revoked,omitempty"`
}

// EnrollTSARequest generates a time-stamping key pair in the token.
type EnrollTSARequest struct {
	Algo    string `json:"algo,omitempty"`    // rsa-2048, rsa-3072 (default), rsa-4096
	Subject string `json:"subject,omitempty"` // CSR subject DN; default "CN=signd TSA"
}

// EnrollTSAResult is the new key and its CSR; the certificate the CA
// issues for it (with only a critical id-kp-timeStamping extended key
// usage) is imported with ImportTSACertificate.
type EnrollTSAResult struct {
	KeyID  string `json:"key_id"` // CKA_ID, hex
	Label  string `json:"label"`
	CSRPEM string `json:"csr_pem"`
}

// ImportTSACertificateRequest stores the TSA certificate (PEM; the first
// certificate is the TSA's, any others are its chain and are checked, not
// stored) next to the key KeyID.
type ImportTSACertificateRequest struct {
	KeyID   string `json:"key_id"`
	CertPEM string `json:"cert_pem"`
}

// TSACertificateView is the imported TSA certificate.
type TSACertificateView struct {
	KeyID    string `json:"key_id"`
	Subject  string `json:"subject"`
	Serial   string `json:"serial"`
	NotAfter string `json:"not_after"`
}

// ClientViewOf is what operators see of the client c.
func ClientViewOf(c *store.Client) *ClientView {
	return &ClientView{
		ID: c.ID, Name: c.Name, RedirectURIs: c.RedirectURIs, Scopes: c.Scopes,
		SectorIdentifier: c.SectorIdentifier, RequirePKCE: c.RequirePKCE, IDTokenAlg: c.IDTokenSignedResponseAlg,
		CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt,
	}
}

// CredentialViewOf is what operators see of the credential c.
func CredentialViewOf(c *store.Credential) *CredentialView {
	v := &CredentialView{
		ID: c.ID, Owner: c.Owner, Label: c.Label, Description: c.Description, Algorithm: c.Algorithm,
		KeyBits: c.KeyBits, KeyID: hex.EncodeToString(c.KeyID), Status: string(c.Status),
		ChainLength: len(c.Chain), Multisign: c.Multisign, AuthMode: string(c.AuthMode),
		CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt,
	}
	if c.Status == store.CredentialDisabled {
		v.DisabledBy = c.DisabledBy
		if v.DisabledBy == "" {
			v.DisabledBy = store.DisabledByAdmin
		}
	}
	if len(c.Chain) > 0 {
		if leaf, err := x509.ParseCertificate(c.Chain[0]); err == nil {
			v.Subject = leaf.Subject.String()
			v.Issuer = leaf.Issuer.String()
			v.Serial = hex.EncodeToString(leaf.SerialNumber.Bytes())
			nb, na := leaf.NotBefore.UTC(), leaf.NotAfter.UTC()
			v.NotBefore, v.NotAfter = &nb, &na
		}
	}
	return v
}

// RevokedViewOf counts what a removal revoked.
func RevokedViewOf(r store.Revoked) *RevokedView {
	return &RevokedView{
		AccessTokens: r.AccessTokens, SADs: r.SADs, Codes: r.Codes,
		PendingRequests: r.Requests, Sessions: r.Sessions,
	}
}

// PendingViewOf is what operators see of the pending request r at now.
func PendingViewOf(r *store.AdminRequest, now time.Time) PendingView {
	return PendingView{ID: r.ID, Op: r.Op, Request: r.Request, RequestedBy: r.Actor,
		CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt, Expired: !now.Before(r.ExpiresAt)}
}
