package admin

import (
	"context"
	"io"
	"log/slog"
	"time"

	"github.com/signd/signd/admin/act"
	"github.com/signd/signd/admin/audit"
	"github.com/signd/signd/admin/clients"
	"github.com/signd/signd/admin/enrollment"
	"github.com/signd/signd/admin/hsmkeys"
	"github.com/signd/signd/admin/pending"
	"github.com/signd/signd/admin/tokenkeys"
	"github.com/signd/signd/admin/users"
	"github.com/signd/signd/checkpoint"
	"github.com/signd/signd/oidc"
	"github.com/signd/signd/store"
)

// Local performs the operations directly on a store and a token: the one
// façade the CLI, the admin socket and the provisioning API call. Each
// operation is its subject's (admin/users, admin/clients, admin/hsmkeys,
// admin/pending, admin/audit), built per call over Local's fields around
// the act core (admin/act). The audit log's verification and export need
// only Store.
type Local struct {
	Store  store.Store
	Keys   KeyStore // nil: credential operations answer KindUnavailable
	Hasher *store.Hasher
	Now    func() time.Time // nil = time.Now
	Logger *slog.Logger     // nil = discard
	// OIDCKeys manages the OIDC signing keys (admin/hsmkeys); nil: the
	// OIDC key operations answer KindUnavailable.
	OIDCKeys *oidc.KeyRing
	// TSALabel is the token label of the time-stamping certificate
	// (csc.timestamp.label); "" = tsa.DefaultLabel.
	TSALabel string
	// DualControl names the operations (Operations) a second operator
	// must approve (admin.dual_control; admin/pending): each must be
	// Holdable. Empty: every operation is performed at once.
	DualControl []string
	// PendingTTL is how long such a request waits for its approval
	// (admin.pending_ttl); 0 = DefaultPendingTTL.
	PendingTTL time.Duration
	// AuditKeyLabel is the audit key's label (audit.key_label) and
	// Checkpoints signs the audit checkpoints (admin/audit); nil: the
	// audit key and checkpoint operations answer KindUnavailable.
	AuditKeyLabel string
	Checkpoints   *checkpoint.Maker
	// EnrollBaseURL is server.base_url, which the enrollment links of
	// AddUser start with (admin/users); "": AddUser with Enroll answers
	// KindUnavailable. EnrollmentTTL is how long a link stays open
	// (admin.enrollment_ttl); 0 = DefaultEnrollmentTTL.
	EnrollBaseURL string
	EnrollmentTTL time.Duration
}

var _ Service = (*Local)(nil)

// core is the act core over l's store, clock, log and dual control.
func (l *Local) core() *act.Core {
	return &act.Core{Store: l.Store, Now: l.Now, Logger: l.Logger, DualControl: l.DualControl, PendingTTL: l.PendingTTL}
}

func (l *Local) users() *users.Users {
	return &users.Users{Core: l.core(), Hasher: l.Hasher, EnrollBaseURL: l.EnrollBaseURL, EnrollmentTTL: l.EnrollmentTTL}
}

func (l *Local) hsm() *hsmkeys.HSM {
	return &hsmkeys.HSM{Core: l.core(), Keys: l.Keys, OIDCKeys: l.OIDCKeys, TSALabel: l.TSALabel, Users: l.users()}
}

func (l *Local) clients() *clients.Clients {
	return &clients.Clients{Core: l.core(), Hasher: l.Hasher, HSM: l.hsm()}
}

func (l *Local) pending() *pending.Pending {
	return &pending.Pending{Core: l.core(), Service: l}
}

func (l *Local) audit() *audit.Audit {
	return &audit.Audit{Core: l.core(), HSM: l.hsm(), AuditKeyLabel: l.AuditKeyLabel, Checkpoints: l.Checkpoints}
}

// Authorize checks that by holds one of roles for the operation named op,
// for what a transport serves outside Operations (the store's backup and
// check on the admin socket): the same refusal, audit entry and log line
// as every operation of Operations gets (act.Core.Authorize).
func (l *Local) Authorize(ctx context.Context, by Principal, op string, roles []Role) error {
	return l.core().Authorize(ctx, by, op, roles)
}

// Refused records, for a transport, a caller it refused before any
// operation could be asked (a client certificate the provisioning API
// does not accept): one admin_refused entry, outcome refused, naming by
// (as far as the transport knows it), op (what was attempted, e.g.
// "tls_handshake") and reason, and a log line. It needs no role.
func (l *Local) Refused(ctx context.Context, by Principal, op, reason string, fields map[string]string) {
	l.core().Refused(ctx, by, op, reason, fields)
}

// EnrollmentUser returns the user whose open link token is, for the
// enrollment page (oauth/enroll's Backend; admin/users).
func (l *Local) EnrollmentUser(ctx context.Context, token string) (string, error) {
	return l.users().EnrollmentUser(ctx, token)
}

// Enroll sets the password and signing PIN of the user whose open link
// req.Token is, and closes the link (oauth/enroll's Backend; admin/users).
func (l *Local) Enroll(ctx context.Context, req EnrollRequest) (string, error) {
	return l.users().Enroll(ctx, req)
}

// IssueEnrollment implements Service (admin/users).
func (l *Local) IssueEnrollment(ctx context.Context, by Principal, username string) (*UserView, error) {
	return l.users().IssueEnrollment(ctx, by, username)
}

// AddProof implements Service (admin/users).
func (l *Local) AddProof(ctx context.Context, by Principal, req AddProofRequest) (*UserView, error) {
	return l.users().AddProof(ctx, by, req)
}

// RemoveUser implements Service (admin/users).
func (l *Local) RemoveUser(ctx context.Context, by Principal, username string) (*RemoveResult, error) {
	return l.users().RemoveUser(ctx, by, username)
}

// EnrollTOTP implements Service (admin/users).
func (l *Local) EnrollTOTP(ctx context.Context, by Principal, req EnrollTOTPRequest) (*TOTPEnrollment, error) {
	return l.users().EnrollTOTP(ctx, by, req)
}

// RemoveTOTP implements Service (admin/users).
func (l *Local) RemoveTOTP(ctx context.Context, by Principal, username string) (*UserView, error) {
	return l.users().RemoveTOTP(ctx, by, username)
}

// AddUser implements Service (admin/users).
func (l *Local) AddUser(ctx context.Context, by Principal, req AddUserRequest) (*UserView, error) {
	return l.users().AddUser(ctx, by, req)
}

// ListUsers implements Service (admin/users).
func (l *Local) ListUsers(ctx context.Context, by Principal) ([]UserView, error) {
	return l.users().ListUsers(ctx, by)
}

// ShowUser implements Service (admin/users).
func (l *Local) ShowUser(ctx context.Context, by Principal, username string) (*UserView, error) {
	return l.users().ShowUser(ctx, by, username)
}

// SetUserStatus implements Service (admin/users).
func (l *Local) SetUserStatus(ctx context.Context, by Principal, username string, enabled bool) (*UserView, error) {
	return l.users().SetUserStatus(ctx, by, username, enabled)
}

// UnlockUser implements Service (admin/users).
func (l *Local) UnlockUser(ctx context.Context, by Principal, username string) (*UserView, error) {
	return l.users().UnlockUser(ctx, by, username)
}

// UnlockPIN implements Service (admin/users).
func (l *Local) UnlockPIN(ctx context.Context, by Principal, username string) (*UserView, error) {
	return l.users().UnlockPIN(ctx, by, username)
}

// SetPassword implements Service (admin/users).
func (l *Local) SetPassword(ctx context.Context, by Principal, req SetSecretRequest) (*UserView, error) {
	return l.users().SetPassword(ctx, by, req)
}

// SetPIN implements Service (admin/users).
func (l *Local) SetPIN(ctx context.Context, by Principal, req SetSecretRequest) (*UserView, error) {
	return l.users().SetPIN(ctx, by, req)
}

// AddClient implements Service (admin/clients).
func (l *Local) AddClient(ctx context.Context, by Principal, req AddClientRequest) (*AddClientResult, error) {
	return l.clients().AddClient(ctx, by, req)
}

// ListClients implements Service (admin/clients).
func (l *Local) ListClients(ctx context.Context, by Principal) ([]ClientView, error) {
	return l.clients().ListClients(ctx, by)
}

// ShowClient implements Service (admin/clients).
func (l *Local) ShowClient(ctx context.Context, by Principal, id string) (*ClientView, error) {
	return l.clients().ShowClient(ctx, by, id)
}

// RemoveClient implements Service (admin/clients).
func (l *Local) RemoveClient(ctx context.Context, by Principal, id string) (*RemoveResult, error) {
	return l.clients().RemoveClient(ctx, by, id)
}

// CreateCredential implements Service (admin/hsmkeys).
func (l *Local) CreateCredential(ctx context.Context, by Principal, req CreateCredentialRequest) (*CreateCredentialResult, error) {
	return l.hsm().CreateCredential(ctx, by, req)
}

// ImportCertificate implements Service (admin/hsmkeys).
func (l *Local) ImportCertificate(ctx context.Context, by Principal, req ImportCertificateRequest) (*CredentialView, error) {
	return l.hsm().ImportCertificate(ctx, by, req)
}

// ListCredentials implements Service (admin/hsmkeys).
func (l *Local) ListCredentials(ctx context.Context, by Principal, owner string) ([]CredentialView, error) {
	return l.hsm().ListCredentials(ctx, by, owner)
}

// ShowCredential implements Service (admin/hsmkeys).
func (l *Local) ShowCredential(ctx context.Context, by Principal, id string) (*CredentialView, error) {
	return l.hsm().ShowCredential(ctx, by, id)
}

// SetCredentialAuth implements Service (admin/hsmkeys).
func (l *Local) SetCredentialAuth(ctx context.Context, by Principal, req SetCredentialAuthRequest) (*CredentialView, error) {
	return l.hsm().SetCredentialAuth(ctx, by, req)
}

// SetCredentialStatus implements Service (admin/hsmkeys).
func (l *Local) SetCredentialStatus(ctx context.Context, by Principal, id string, enabled bool) (*CredentialView, error) {
	return l.hsm().SetCredentialStatus(ctx, by, id, enabled)
}

// HSMInfo implements Service (admin/hsmkeys).
func (l *Local) HSMInfo(ctx context.Context, by Principal) (*HSMInfoView, error) {
	return l.hsm().HSMInfo(ctx, by)
}

// CreateOIDCKey implements Service (admin/hsmkeys).
func (l *Local) CreateOIDCKey(ctx context.Context, by Principal, req CreateOIDCKeyRequest) (*OIDCKeyView, error) {
	return l.hsm().CreateOIDCKey(ctx, by, req)
}

// ListOIDCKeys implements Service (admin/hsmkeys).
func (l *Local) ListOIDCKeys(ctx context.Context, by Principal) ([]OIDCKeyView, error) {
	return l.hsm().ListOIDCKeys(ctx, by)
}

// RotateOIDCKeys implements Service (admin/hsmkeys).
func (l *Local) RotateOIDCKeys(ctx context.Context, by Principal, req RotateOIDCKeysRequest) (*RotateOIDCKeysResult, error) {
	return l.hsm().RotateOIDCKeys(ctx, by, req)
}

// RemoveCredential implements Service (admin/hsmkeys).
func (l *Local) RemoveCredential(ctx context.Context, by Principal, id string) (*RemoveCredentialResult, error) {
	return l.hsm().RemoveCredential(ctx, by, id)
}

// EnrollTSA implements Service (admin/hsmkeys).
func (l *Local) EnrollTSA(ctx context.Context, by Principal, req EnrollTSARequest) (*EnrollTSAResult, error) {
	return l.hsm().EnrollTSA(ctx, by, req)
}

// ImportTSACertificate implements Service (admin/hsmkeys).
func (l *Local) ImportTSACertificate(ctx context.Context, by Principal, req ImportTSACertificateRequest) (*TSACertificateView, error) {
	return l.hsm().ImportTSACertificate(ctx, by, req)
}

// ListPending implements Service (admin/pending).
func (l *Local) ListPending(ctx context.Context, by Principal) ([]PendingView, error) {
	return l.pending().ListPending(ctx, by)
}

// ApprovePending implements Service (admin/pending).
func (l *Local) ApprovePending(ctx context.Context, by Principal, id string) (*ApprovalResult, error) {
	return l.pending().ApprovePending(ctx, by, id)
}

// RejectPending implements Service (admin/pending).
func (l *Local) RejectPending(ctx context.Context, by Principal, id string) (*PendingView, error) {
	return l.pending().RejectPending(ctx, by, id)
}

// AuditVerify implements Service (admin/audit).
func (l *Local) AuditVerify(ctx context.Context, by Principal) (*AuditReport, error) {
	return l.audit().AuditVerify(ctx, by)
}

// AuditExport implements Service (admin/audit).
func (l *Local) AuditExport(ctx context.Context, by Principal, req AuditExportRequest, w io.Writer) error {
	return l.audit().AuditExport(ctx, by, req, w)
}

// CreateAuditKey implements Service (admin/audit).
func (l *Local) CreateAuditKey(ctx context.Context, by Principal, req CreateAuditKeyRequest) (*AuditKeyView, error) {
	return l.audit().CreateAuditKey(ctx, by, req)
}

// ShowAuditKey implements Service (admin/audit).
func (l *Local) ShowAuditKey(ctx context.Context, by Principal) (*AuditKeyView, error) {
	return l.audit().ShowAuditKey(ctx, by)
}

// AuditCheckpoint implements Service (admin/audit).
func (l *Local) AuditCheckpoint(ctx context.Context, by Principal) (*CheckpointView, error) {
	return l.audit().AuditCheckpoint(ctx, by)
}

// AuditVerifyCheckpoint implements Service (admin/audit).
func (l *Local) AuditVerifyCheckpoint(ctx context.Context, by Principal, req AuditVerifyCheckpointRequest) (*CheckpointReport, error) {
	return l.audit().AuditVerifyCheckpoint(ctx, by, req)
}

// What admin needs of the token is package admin/tokenkeys's.
type (
	// KeyStore is tokenkeys.KeyStore: what Local needs of the token.
	KeyStore = tokenkeys.KeyStore
	// AuditKeys is tokenkeys.AuditKeys: what the audit key and checkpoint
	// operations need of the token.
	AuditKeys = tokenkeys.AuditKeys
	// TokenReporter is tokenkeys.TokenReporter: what HSMInfo asks of it.
	TokenReporter = tokenkeys.TokenReporter
)

// Audit key algorithms (CreateAuditKeyRequest.Algorithm).
const (
	AuditKeyEd25519   = tokenkeys.AuditKeyEd25519
	AuditKeyECDSAP256 = tokenkeys.AuditKeyECDSAP256
)

// AuditKeyFor is tokenkeys.AuditKeyFor: the checkpoint.Maker's Key
// function for the audit key labelled label in keys.
func AuditKeyFor(keys AuditKeys, label string) func(ctx context.Context, name string) (*checkpoint.Key, error) {
	return tokenkeys.AuditKeyFor(keys, label)
}

// The names of the subjects' packages that admin's callers use.
const (
	// DefaultPendingTTL is act.DefaultPendingTTL: how long a pending
	// request waits for its approval when Local.PendingTTL is 0.
	DefaultPendingTTL = act.DefaultPendingTTL
	// DefaultEnrollmentTTL is users.DefaultEnrollmentTTL: how long an
	// enrollment link stays open when Local.EnrollmentTTL is 0.
	DefaultEnrollmentTTL = users.DefaultEnrollmentTTL
	// EnrollPath is enrollment.Path: the path of the enrollment page below
	// server.base_url.
	EnrollPath = enrollment.Path
)

// Errors of Enroll and EnrollmentUser (users.ErrEnrollmentRefused and its
// siblings: the same values).
var (
	ErrEnrollmentRefused = users.ErrEnrollmentRefused
	ErrEnrollPassword    = users.ErrEnrollPassword
	ErrEnrollPIN         = users.ErrEnrollPIN
	ErrEnrollTOTP        = users.ErrEnrollTOTP
)

// NewClientSecret is clients.NewClientSecret: a generated client secret.
func NewClientSecret() (string, error) { return clients.NewClientSecret() }

// OIDCKeyRecorder is hsmkeys.KeyRecorder: it records, as actor, the
// changes of the OIDC signing keys that are no operation of their own
// (the daemon's at its start), each in the key ring's transaction that
// makes it; occasion ("at start") is their reason.
func OIDCKeyRecorder(actor, occasion string, now func() time.Time) oidc.Recorder {
	return hsmkeys.KeyRecorder(actor, occasion, now)
}
