package admin

import (
	"context"
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

// Config is what Local is built from (New).
type Config struct {
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
	// RolesNow looks up the roles a pending request's requester holds
	// when it is approved (the transports' resolvers: the admin socket's
	// groups, the provisioning API's certificates); nil: no pending
	// request can be approved.
	RolesNow RolesNow
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

// Local performs the operations directly on a store and a token: the one
// façade the CLI, the admin socket and the provisioning API call. Each
// operation is a method of its subject (admin/users, admin/clients,
// admin/hsmkeys, admin/pending, admin/audit), promoted through Local; the
// subjects share one act core (admin/act). The audit log's verification
// and export need only Config.Store.
type Local struct {
	*users.Users
	*hsmkeys.HSM
	*clients.Clients
	*pending.Pending
	*audit.Audit
	core *act.Core
	cfg  Config
}

var _ Service = (*Local)(nil)

// New builds Local's subjects over c.
func New(c Config) *Local {
	core := &act.Core{Store: c.Store, Now: c.Now, Logger: c.Logger, DualControl: c.DualControl, PendingTTL: c.PendingTTL}
	u := &users.Users{Core: core, Hasher: c.Hasher, EnrollBaseURL: c.EnrollBaseURL, EnrollmentTTL: c.EnrollmentTTL}
	h := &hsmkeys.HSM{Core: core, Keys: c.Keys, OIDCKeys: c.OIDCKeys, TSALabel: c.TSALabel, Users: u}
	l := &Local{
		Users:   u,
		HSM:     h,
		Clients: &clients.Clients{Core: core, Hasher: c.Hasher, HSM: h},
		Audit:   &audit.Audit{Core: core, HSM: h, AuditKeyLabel: c.AuditKeyLabel, Checkpoints: c.Checkpoints},
		core:    core,
		cfg:     c,
	}
	l.Pending = &pending.Pending{Core: core, Service: l, RolesNow: c.RolesNow}
	return l
}

// Authorize checks that by holds one of roles for the operation named op,
// for what a transport serves outside Operations (the store's backup and
// check on the admin socket): the same refusal, audit entry and log line
// as every operation of Operations gets (act.Core.Authorize).
func (l *Local) Authorize(ctx context.Context, by Principal, op string, roles []Role) error {
	return l.core.Authorize(ctx, by, op, roles)
}

// Refused records, for a transport, a caller it refused before any
// operation could be asked (a client certificate the provisioning API
// does not accept): one admin_refused entry, outcome refused, naming by
// (as far as the transport knows it), op (what was attempted, e.g.
// "tls_handshake") and reason, and a log line. It needs no role.
func (l *Local) Refused(ctx context.Context, by Principal, op, reason string, fields map[string]string) {
	l.core.Refused(ctx, by, op, reason, fields)
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
	// request waits for its approval when Config.PendingTTL is 0.
	DefaultPendingTTL = act.DefaultPendingTTL
	// DefaultEnrollmentTTL is users.DefaultEnrollmentTTL: how long an
	// enrollment link stays open when Config.EnrollmentTTL is 0.
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
