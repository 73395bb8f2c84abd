package ops

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// Service is the set of administrative operations. Each takes the acting
// principal: Local checks its role (Operations) and names it in the audit
// entry of the act. The admin socket's client implements Service too, so
// the CLI behaves the same whether or not the daemon runs; there the
// daemon establishes the principal from the socket peer, whatever the
// client passes.
type Service interface {
	AddUser(ctx context.Context, by Principal, req AddUserRequest) (*UserView, error)
	ListUsers(ctx context.Context, by Principal) ([]UserView, error)
	ShowUser(ctx context.Context, by Principal, username string) (*UserView, error)
	SetUserStatus(ctx context.Context, by Principal, username string, enabled bool) (*UserView, error)
	UnlockUser(ctx context.Context, by Principal, username string) (*UserView, error)
	UnlockPIN(ctx context.Context, by Principal, username string) (*UserView, error)
	SetPassword(ctx context.Context, by Principal, req SetSecretRequest) (*UserView, error)
	SetPIN(ctx context.Context, by Principal, req SetSecretRequest) (*UserView, error)
	EnrollTOTP(ctx context.Context, by Principal, req EnrollTOTPRequest) (*TOTPEnrollment, error)
	RemoveTOTP(ctx context.Context, by Principal, username string) (*UserView, error)
	AddProof(ctx context.Context, by Principal, req AddProofRequest) (*UserView, error)
	RemoveUser(ctx context.Context, by Principal, username string) (*RemoveResult, error)
	// IssueEnrollment answers a new one-time enrollment link for a user
	// without password and PIN (enroll.go).
	IssueEnrollment(ctx context.Context, by Principal, username string) (*UserView, error)

	AddClient(ctx context.Context, by Principal, req AddClientRequest) (*AddClientResult, error)
	ListClients(ctx context.Context, by Principal) ([]ClientView, error)
	ShowClient(ctx context.Context, by Principal, id string) (*ClientView, error)
	RemoveClient(ctx context.Context, by Principal, id string) (*RemoveResult, error)

	CreateCredential(ctx context.Context, by Principal, req CreateCredentialRequest) (*CreateCredentialResult, error)
	ImportCertificate(ctx context.Context, by Principal, req ImportCertificateRequest) (*CredentialView, error)
	ListCredentials(ctx context.Context, by Principal, owner string) ([]CredentialView, error)
	ShowCredential(ctx context.Context, by Principal, id string) (*CredentialView, error)
	SetCredentialStatus(ctx context.Context, by Principal, id string, enabled bool) (*CredentialView, error)
	SetCredentialAuth(ctx context.Context, by Principal, req SetCredentialAuthRequest) (*CredentialView, error)
	RemoveCredential(ctx context.Context, by Principal, id string) (*RemoveCredentialResult, error)

	CreateOIDCKey(ctx context.Context, by Principal, req CreateOIDCKeyRequest) (*OIDCKeyView, error)
	ListOIDCKeys(ctx context.Context, by Principal) ([]OIDCKeyView, error)
	RotateOIDCKeys(ctx context.Context, by Principal, req RotateOIDCKeysRequest) (*RotateOIDCKeysResult, error)

	HSMInfo(ctx context.Context, by Principal) (*HSMInfoView, error)

	EnrollTSA(ctx context.Context, by Principal, req EnrollTSARequest) (*EnrollTSAResult, error)
	ImportTSACertificate(ctx context.Context, by Principal, req ImportTSACertificateRequest) (*TSACertificateView, error)

	AuditVerify(ctx context.Context, by Principal) (*AuditReport, error)
	AuditExport(ctx context.Context, by Principal, req AuditExportRequest, w io.Writer) error

	ListPending(ctx context.Context, by Principal) ([]PendingView, error)
	ApprovePending(ctx context.Context, by Principal, id string) (*ApprovalResult, error)
	RejectPending(ctx context.Context, by Principal, id string) (*PendingView, error)
	// The audit key and signed checkpoints (admin/audit).
	CreateAuditKey(ctx context.Context, by Principal, req CreateAuditKeyRequest) (*AuditKeyView, error)
	ShowAuditKey(ctx context.Context, by Principal) (*AuditKeyView, error)
	AuditCheckpoint(ctx context.Context, by Principal) (*CheckpointView, error)
	AuditVerifyCheckpoint(ctx context.Context, by Principal, req AuditVerifyCheckpointRequest) (*CheckpointReport, error)
}

// Kind classifies an Error; it is what crosses the admin socket.
type Kind string

// Error kinds.
const (
	KindInvalid     Kind = "invalid"        // the request is wrong; fix it and retry
	KindNotFound    Kind = "not_found"      // the named record does not exist
	KindExists      Kind = "already_exists" // the record exists already
	KindConflict    Kind = "conflict"       // the record is in a state that forbids the operation
	KindUnavailable Kind = "unavailable"    // the HSM or store cannot be reached now
	KindForbidden   Kind = "forbidden"      // the principal lacks the role the operation requires
	KindInternal    Kind = "internal"       // a fault of signd; details are in the daemon log
	// KindPending: the operation is under dual control and was not
	// performed; it waits as the pending request Error.ID for a second
	// operator (admin/pending).
	KindPending Kind = "pending"
)

// Error is an operator-facing error. Message never holds a secret.
type Error struct {
	Kind    Kind   `json:"kind"`
	Message string `json:"message"`
	// ID is the pending request's ID with KindPending.
	ID string `json:"id,omitempty"`
}

func (e *Error) Error() string { return e.Message }

func errorf(kind Kind, format string, args ...any) *Error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

// KindOf returns the kind of err, KindInternal when err is not an *Error.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return KindInternal
}

// AddUserRequest creates a user. Password and PIN are plain text here and
// hashed with argon2id before they are stored.
type AddUserRequest struct {
	Username      string            `json:"username"`
	Password      string            `json:"password"`
	PIN           string            `json:"pin,omitempty"`
	Email         string            `json:"email,omitempty"`
	EmailVerified bool              `json:"email_verified,omitempty"`
	Claims        map[string]string `json:"claims,omitempty"`
	// Enroll creates the user without password and PIN and returns a
	// one-time link (UserView.Enrollment) where the user sets them
	// (enroll.go); Password and PIN must then be empty.
	Enroll bool `json:"enroll,omitempty"`
}

// SetSecretRequest replaces a user's password or signing PIN.
type SetSecretRequest struct {
	Username string `json:"username"`
	Secret   string `json:"secret"`
}

// UserView is what operators see of a user: never a hash or a secret.
// PasswordLocked says that password login is locked now: for a while, until
// LockedUntil, or until an admin unlocks it when LockedUntil is nil.
type UserView struct {
	Username        string            `json:"username"`
	ID              string            `json:"id"`
	Status          string            `json:"status"`
	Email           string            `json:"email,omitempty"`
	EmailVerified   bool              `json:"email_verified"`
	HasPIN          bool              `json:"has_pin"`
	HasTOTP         bool              `json:"has_totp"`
	PasswordLocked  bool              `json:"password_locked"`
	LockedUntil     *time.Time        `json:"password_locked_until,omitempty"`
	FailedPasswords int               `json:"failed_passwords"`
	PINLocked       bool              `json:"pin_locked"`
	FailedPINs      int               `json:"failed_pins"`
	Claims          map[string]string `json:"claims,omitempty"`
	Proofs          []string          `json:"proofs,omitempty"`
	CreatedAt       time.Time         `json:"created_at"`
	UpdatedAt       time.Time         `json:"updated_at"`
	// Revoked is what the operation revoked (disable, set-password,
	// set-pin); nil when it revokes nothing.
	Revoked *RevokedView `json:"revoked,omitempty"`
	// EnrollmentExpires is when the user's open enrollment link ends; nil
	// when none is open.
	EnrollmentExpires *time.Time `json:"enrollment_expires,omitempty"`
	// Enrollment is the link itself, returned once by AddUser with
	// Enroll: signd keeps only its hash.
	Enrollment *EnrollmentView `json:"enrollment,omitempty"`
}

// AddClientRequest registers an OAuth client. When Secret is empty a secret
// is generated and returned once in AddClientResult.
type AddClientRequest struct {
	ID               string   `json:"id"`
	Name             string   `json:"name,omitempty"`
	Secret           string   `json:"secret,omitempty"`
	RedirectURIs     []string `json:"redirect_uris"`
	Scopes           []string `json:"scopes,omitempty"`
	SectorIdentifier string   `json:"sector_identifier,omitempty"`
	RequirePKCE      bool     `json:"require_pkce,omitempty"`
	// IDTokenAlg is the client's id_token_signed_response_alg (OpenID
	// Connect Dynamic Client Registration §2): RS256, PS256 or ES256; ""
	// is oidc.signing_alg.
	IDTokenAlg string `json:"id_token_signed_response_alg,omitempty"`
}

// AddClientResult carries the generated secret, shown once.
type AddClientResult struct {
	Client          ClientView `json:"client"`
	GeneratedSecret string     `json:"generated_secret,omitempty"`
}

// ClientView is what operators see of a client: never the secret hash.
type ClientView struct {
	ID               string    `json:"id"`
	Name             string    `json:"name"`
	RedirectURIs     []string  `json:"redirect_uris"`
	Scopes           []string  `json:"scopes"`
	SectorIdentifier string    `json:"sector_identifier,omitempty"`
	RequirePKCE      bool      `json:"require_pkce"`
	IDTokenAlg       string    `json:"id_token_signed_response_alg,omitempty"`
	CreatedAt        time.Time `json:"created_at"`
	UpdatedAt        time.Time `json:"updated_at"`
}

// CreateCredentialRequest generates a key pair in the token for a user.
type CreateCredentialRequest struct {
	User    string `json:"user"`
	Algo    string `json:"algo,omitempty"`    // rsa-2048 (default), rsa-3072, rsa-4096, ec-p256, ec-p384, ec-p521
	Label   string `json:"label,omitempty"`   // HSM label; default "signd-<credential ID>"
	Subject string `json:"subject,omitempty"` // CSR subject DN; default "CN=<username>"
	// Multisign caps numSignatures of one authorization (CSC v1 §11.5),
	// 1–1000; 0 means 1.
	Multisign int `json:"multisign,omitempty"`
	// AuthMode is oauth2code (default) or explicit (credentials/authorize).
	AuthMode string `json:"auth_mode,omitempty"`
	// Description names the credential to its owner on the signing
	// consent and account pages: at most MaxCredentialDescription
	// printable characters; "" = the certificate's CN.
	Description string `json:"description,omitempty"`
}

// MaxCredentialDescription caps a credential's description, in characters.
const MaxCredentialDescription = 200

// SetCredentialAuthRequest changes how a credential's signatures are
// authorized; a zero field keeps the current value. The change revokes
// the credential's outstanding SADs, codes and pending requests, which
// were issued under the old rules.
type SetCredentialAuthRequest struct {
	ID        string `json:"id"`
	Multisign int    `json:"multisign,omitempty"`
	AuthMode  string `json:"auth_mode,omitempty"`
}

// CreateCredentialResult is the new, still pending credential and its CSR.
type CreateCredentialResult struct {
	Credential CredentialView `json:"credential"`
	CSRPEM     string         `json:"csr_pem"`
}

// ImportCertificateRequest attaches a certificate chain (PEM, leaf first,
// ending with the self-signed root) to a credential and enables it.
type ImportCertificateRequest struct {
	ID       string `json:"id"`
	ChainPEM string `json:"chain_pem"`
}

// CredentialView is what operators see of a credential.
type CredentialView struct {
	ID          string     `json:"id"`
	Owner       string     `json:"owner"`
	Label       string     `json:"label"`
	Description string     `json:"description,omitempty"`
	Algorithm   string     `json:"algorithm"`
	KeyBits     int        `json:"key_bits"`
	KeyID       string     `json:"key_id"` // hex CKA_ID
	Status      string     `json:"status"`
	Subject     string     `json:"subject,omitempty"`
	Issuer      string     `json:"issuer,omitempty"`
	Serial      string     `json:"serial,omitempty"` // hex
	NotBefore   *time.Time `json:"not_before,omitempty"`
	NotAfter    *time.Time `json:"not_after,omitempty"`
	ChainLength int        `json:"chain_length"`
	Multisign   int        `json:"multisign"`
	AuthMode    string     `json:"auth_mode"`
	CreatedAt   time.Time  `json:"created_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
	// Revoked is what the operation revoked (disable); nil when it revokes
	// nothing.
	Revoked *RevokedView `json:"revoked,omitempty"`
	// DisabledBy says who disabled a disabled credential: "admin" (signd
	// credential disable, or a credential disabled before the store kept
	// who) or "owner" (the account page); "" when not disabled.
	DisabledBy string `json:"disabled_by,omitempty"`
}

// AddProofRequest stores a proof document of a user (a scan of the identity
// document), released as <ns>.proof. Content is at most 10 MiB and must be
// of ContentType (image/jpeg, image/png or application/pdf), judged by its
// first bytes.
type AddProofRequest struct {
	Username    string `json:"username"`
	ID          string `json:"id"`
	ContentType string `json:"content_type"`
	Content     []byte `json:"content"`
}

// OIDCKeyView is what operators see of an OIDC ID-token signing key.
type OIDCKeyView struct {
	KID         string     `json:"kid"`
	State       string     `json:"state"` // next, active or retired
	Label       string     `json:"label"`
	KeyID       string     `json:"key_id"` // hex CKA_ID
	Algorithm   string     `json:"alg"`
	CreatedAt   time.Time  `json:"created_at"`
	ActivatedAt *time.Time `json:"activated_at,omitempty"`
	RetiredAt   *time.Time `json:"retired_at,omitempty"`
	// PublishedUntil is when a retired key leaves the JWKS (and the HSM):
	// every ID token it signed has expired by then.
	PublishedUntil *time.Time `json:"published_until,omitempty"`
}

// RotateOIDCKeysRequest promotes the next signing key. Force skips the wait
// until relying parties have seen the next key in the JWKS.
type RotateOIDCKeysRequest struct {
	// Alg is the algorithm whose keys rotate; "" is oidc.signing_alg.
	Alg   string `json:"alg,omitempty"`
	Force bool   `json:"force,omitempty"`
}

// CreateOIDCKeyRequest publishes a next key of Alg; "" is
// oidc.signing_alg.
type CreateOIDCKeyRequest struct {
	Alg string `json:"alg,omitempty"`
}

// RotateOIDCKeysResult reports a rotation.
type RotateOIDCKeysResult struct {
	Active  OIDCKeyView  `json:"active"`
	Retired *OIDCKeyView `json:"retired,omitempty"`
	Purged  []string     `json:"purged,omitempty"` // kids of expired retired keys removed
}
