package admin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/signd/signd/admin/tokenkeys"
	"github.com/signd/signd/checkpoint"
	"github.com/signd/signd/hsm"
	"github.com/signd/signd/oidc"
	"github.com/signd/signd/store"
)

// Local performs the operations directly on a store and a token: users.go,
// clients.go, credentials.go, oidc.go (OIDC keys and proofs), revoke.go
// (removals) and audit.go hold them by subject; this file holds what they
// share. The audit operations need only Store.
type Local struct {
	Store  store.Store
	Keys   KeyStore // nil: credential operations answer KindUnavailable
	Hasher *store.Hasher
	Now    func() time.Time // nil = time.Now
	Logger *slog.Logger     // nil = discard
	// OIDCKeys manages the OIDC signing keys (see oidc.go); nil: the
	// OIDC key operations answer KindUnavailable.
	OIDCKeys *oidc.KeyRing
	// TSALabel is the token label of the time-stamping certificate
	// (csc.timestamp.label); "" = tsa.DefaultLabel.
	TSALabel string
	// DualControl names the operations (Operations) a second operator
	// must approve (admin.dual_control; pending.go): each must be
	// Holdable. Empty: every operation is performed at once.
	DualControl []string
	// PendingTTL is how long such a request waits for its approval
	// (admin.pending_ttl); 0 = DefaultPendingTTL.
	PendingTTL time.Duration
	// AuditKeyLabel is the audit key's label (audit.key_label) and
	// Checkpoints signs the audit checkpoints (checkpoint.go); nil: the
	// audit key and checkpoint operations answer KindUnavailable.
	AuditKeyLabel string
	Checkpoints   *checkpoint.Maker
	// EnrollBaseURL is server.base_url, which the enrollment links of
	// AddUser start with (enroll.go); "": AddUser with Enroll answers
	// KindUnavailable. EnrollmentTTL is how long a link stays open
	// (admin.enrollment_ttl); 0 = DefaultEnrollmentTTL.
	EnrollBaseURL string
	EnrollmentTTL time.Duration
}

var _ Service = (*Local)(nil)

func (l *Local) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

func (l *Local) logger() *slog.Logger {
	if l.Logger != nil {
		return l.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// fail turns store and hsm errors into operator errors. Unknown errors are
// logged and become KindInternal without detail.
func (l *Local) fail(op string, err error) error {
	var ae *Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ae):
		return ae
	case errors.Is(err, store.ErrInvalid):
		return errorf(KindInvalid, "%s", strings.TrimPrefix(err.Error(), "store: "))
	case errors.Is(err, store.ErrNotFound):
		return errorf(KindNotFound, "%s: not found", op)
	case errors.Is(err, store.ErrAlreadyExists):
		return errorf(KindExists, "%s: already exists", op)
	case errors.Is(err, hsm.ErrTokenUnavailable), errors.Is(err, hsm.ErrBusy):
		return errorf(KindUnavailable, "%s: the HSM is unavailable, try again: %v", op, err)
	case errors.Is(err, hsm.ErrLabelExists):
		return errorf(KindExists, "%s: %v", op, err)
	case errors.Is(err, hsm.ErrUnsupportedAlgorithm):
		// The token lacks the mechanism or size, or refused the request:
		// the message names what is missing and what it can do.
		return errorf(KindInvalid, "%s: %s", op, strings.TrimPrefix(err.Error(), "hsm: "))
	case errors.Is(err, hsm.ErrKeyNotFrozen):
		return errorf(KindConflict, "%s: %v", op, err)
	case errors.Is(err, store.ErrUnavailable):
		return errorf(KindUnavailable, "%s: the store cannot write now (disk full or failing?), try again: %v", op, err)
	case errors.Is(err, store.ErrCorrupt):
		return errorf(KindInternal, "%s: %v", op, err)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return errorf(KindUnavailable, "%s: %v", op, err)
	}
	l.logger().Error("admin operation failed", "op", op, "err", err)
	return errorf(KindInternal, "%s: internal error (see the signd log)", op)
}

// allow checks that by holds one of the roles of the operation named op
// (Operations). A refusal is recorded in the audit log (admin_refused,
// outcome refused, with the operation and the roles it needs) and
// returned as KindForbidden.
func (l *Local) allow(ctx context.Context, by Principal, op string) error {
	o, ok := Lookup(op)
	if !ok {
		return errorf(KindInternal, "%s: operation without a declared role", op)
	}
	return l.Authorize(ctx, by, op, o.Roles)
}

// Authorize checks that by holds one of roles for the operation named op,
// for what a transport serves outside Operations (the store's backup and
// check on the admin socket): the same refusal, audit entry and log line
// as every operation of Operations gets.
func (l *Local) Authorize(ctx context.Context, by Principal, op string, roles []Role) error {
	for _, r := range roles {
		if by.Has(r) {
			return nil
		}
	}
	need := make([]string, len(roles))
	for i, r := range roles {
		need[i] = string(r)
	}
	reason := fmt.Sprintf("%s requires the role %s", op, strings.Join(need, " or "))
	l.refused(ctx, by, op, reason, nil)
	return errorf(KindForbidden, "%s; %s holds %s", reason, by.Actor, rolesText(by.Roles))
}

// refused records the refusal of the operation named op to by, for
// reason, in the audit log (admin_refused, outcome refused; fields beside
// the operation) and the log.
func (l *Local) refused(ctx context.Context, by Principal, op, reason string, fields map[string]string) {
	f := map[string]string{"op": op}
	for k, v := range fields {
		f[k] = v
	}
	err := l.Store.Update(ctx, func(tx store.Tx) error {
		return tx.AppendAudit(&store.AuditEntry{Time: l.now(), Kind: store.AuditAdminRefused, Actor: by.Actor,
			Outcome: store.AuditRefused, Reason: reason, Fields: f})
	})
	if err != nil {
		l.logger().Error("admin refusal not audited", "op", op, "actor", by.Actor, "err", err)
	}
	l.logger().Warn("admin operation refused", "op", op, "actor", by.Actor, "reason", reason)
}

// rolesText lists roles for a message.
func rolesText(roles []Role) string {
	if len(roles) == 0 {
		return "no role"
	}
	names := make([]string, len(roles))
	for i, r := range roles {
		names[i] = string(r)
	}
	return "the role " + strings.Join(names, ", ")
}

// Refused records, for a transport, a caller it refused before any
// operation could be asked (a client certificate the provisioning API
// does not accept): one admin_refused entry, outcome refused, naming by
// (as far as the transport knows it), op (what was attempted, e.g.
// "tls_handshake") and reason, and a log line. It needs no role.
func (l *Local) Refused(ctx context.Context, by Principal, op, reason string, fields map[string]string) {
	l.refused(ctx, by, op, reason, fields)
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
