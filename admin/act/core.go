package act

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/signd/signd/admin/ops"
	"github.com/signd/signd/admin/principal"
	"github.com/signd/signd/hsm"
	"github.com/signd/signd/store"
)

// Core is what every act needs: the store its entries go into, the clock,
// the log, and the operations under dual control. admin.Local builds one
// from its own fields; each subject's struct embeds it.
type Core struct {
	Store  store.Store
	Now    func() time.Time // nil = time.Now
	Logger *slog.Logger     // nil = discard
	// DualControl names the operations (ops.Operations) a second operator
	// must approve (admin.dual_control; Hold): each must be Holdable.
	// Empty: every operation is performed at once.
	DualControl []string
	// PendingTTL is how long such a request waits for its approval
	// (admin.pending_ttl); 0 = DefaultPendingTTL.
	PendingTTL time.Duration
}

// Clock is the time now.
func (c *Core) Clock() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// Log is the logger of the acts.
func (c *Core) Log() *slog.Logger {
	if c.Logger != nil {
		return c.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// Errorf is an operator error of kind.
func Errorf(kind ops.Kind, format string, args ...any) *ops.Error {
	return &ops.Error{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

// Fail turns store and hsm errors into operator errors. Unknown errors are
// logged and become KindInternal without detail.
func (c *Core) Fail(op string, err error) error {
	var ae *ops.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ae):
		return ae
	case errors.Is(err, store.ErrInvalid):
		return Errorf(ops.KindInvalid, "%s", strings.TrimPrefix(err.Error(), "store: "))
	case errors.Is(err, store.ErrNotFound):
		return Errorf(ops.KindNotFound, "%s: not found", op)
	case errors.Is(err, store.ErrAlreadyExists):
		return Errorf(ops.KindExists, "%s: already exists", op)
	case errors.Is(err, hsm.ErrTokenUnavailable), errors.Is(err, hsm.ErrBusy):
		return Errorf(ops.KindUnavailable, "%s: the HSM is unavailable, try again: %v", op, err)
	case errors.Is(err, hsm.ErrLabelExists):
		return Errorf(ops.KindExists, "%s: %v", op, err)
	case errors.Is(err, hsm.ErrUnsupportedAlgorithm):
		// The token lacks the mechanism or size, or refused the request:
		// the message names what is missing and what it can do.
		return Errorf(ops.KindInvalid, "%s: %s", op, strings.TrimPrefix(err.Error(), "hsm: "))
	case errors.Is(err, hsm.ErrKeyNotFrozen):
		return Errorf(ops.KindConflict, "%s: %v", op, err)
	case errors.Is(err, store.ErrOutcomeUnknown):
		// Still store.ErrUnavailable (503), but a retry could do the
		// change twice, or refuse it as done.
		return Errorf(ops.KindUnavailable, "%s: the store's answer was lost: the change may or may not have been applied; check with %s before trying again: %v", op, checkCommand(op), err)
	case errors.Is(err, store.ErrUnavailable):
		return Errorf(ops.KindUnavailable, "%s: the store cannot write now (disk full or failing?), try again: %v", op, err)
	case errors.Is(err, store.ErrCorrupt):
		return Errorf(ops.KindInternal, "%s: %v", op, err)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return Errorf(ops.KindUnavailable, "%s: %v", op, err)
	}
	c.Log().Error("admin operation failed", "op", op, "err", err)
	return Errorf(ops.KindInternal, "%s: internal error (see the signd log)", op)
}

// checkCommand names the command that shows whether a change Fail
// reports under op was applied: `signd user show alice` for op
// `user "alice"` (and client, credential), the listing for the creations
// that have no ID yet, else the matching list or show command.
func checkCommand(op string) string {
	for _, subject := range []string{"user", "client", "credential"} {
		quoted, ok := strings.CutPrefix(op, subject+" ")
		if id, err := strconv.Unquote(quoted); ok && err == nil && id != "" {
			if strings.ContainsFunc(id, notShellWord) {
				id = quoted
			}
			return fmt.Sprintf("`signd %s show %s`", subject, id)
		}
	}
	switch op {
	case "create credential":
		return "`signd credential list`"
	case "enroll TSA key":
		return "`signd audit export --kind tsa_enrolled`"
	case "create OIDC signing key", "rotate OIDC signing keys":
		return "`signd oidc keys list`"
	}
	return "the matching list or show command"
}

// notShellWord reports the runes that a shell word must quote.
func notShellWord(r rune) bool {
	return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune("._-@:/+=", r))
}

// Allow checks that by holds one of the roles of the operation named op
// (Operations). A refusal is recorded in the audit log (admin_refused,
// outcome refused, with the operation and the roles it needs) and
// returned as KindForbidden.
func (c *Core) Allow(ctx context.Context, by principal.Principal, op string) error {
	o, ok := ops.Lookup(op)
	if !ok {
		return Errorf(ops.KindInternal, "%s: operation without a declared role", op)
	}
	return c.Authorize(ctx, by, op, o.Roles)
}

// Authorize checks that by holds one of roles for the operation named op,
// for what a transport serves outside Operations (the store's backup and
// check on the admin socket): the same refusal, audit entry and log line
// as every operation of Operations gets.
func (c *Core) Authorize(ctx context.Context, by principal.Principal, op string, roles []principal.Role) error {
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
	c.Refused(ctx, by, op, reason, nil)
	return Errorf(ops.KindForbidden, "%s; %s holds %s", reason, by.Actor, RolesText(by.Roles))
}

// Refused records the refusal of the operation named op to by, for
// reason, in the audit log (admin_refused, outcome refused; fields beside
// the operation) and the log. A transport calls it (admin.Local.Refused)
// for a caller it refused before any operation could be asked.
func (c *Core) Refused(ctx context.Context, by principal.Principal, op, reason string, fields map[string]string) {
	f := map[string]string{"op": op}
	for k, v := range fields {
		f[k] = v
	}
	err := c.Store.Update(ctx, func(tx store.Tx) error {
		return tx.AppendAudit(&store.AuditEntry{Time: c.Clock(), Kind: store.AuditAdminRefused, Actor: by.Actor,
			Outcome: store.AuditRefused, Reason: reason, Fields: f})
	})
	if err != nil {
		c.Log().Error("admin refusal not audited", "op", op, "actor", by.Actor, "err", err)
	}
	c.Log().Warn("admin operation refused", "op", op, "actor", by.Actor, "reason", reason)
}

// RolesText lists roles for a message.
func RolesText(roles []principal.Role) string {
	if len(roles) == 0 {
		return "no role"
	}
	names := make([]string, len(roles))
	for i, r := range roles {
		names[i] = string(r)
	}
	return "the role " + strings.Join(names, ", ")
}

// DefaultPendingTTL is how long a pending request waits for its approval
// when Core.PendingTTL is 0 (admin.pending_ttl).
const DefaultPendingTTL = 24 * time.Hour

func (c *Core) pendingTTL() time.Duration {
	if c.PendingTTL > 0 {
		return c.PendingTTL
	}
	return DefaultPendingTTL
}

// Hold stores the operation named op, asked by by with request req, as a
// pending request when it is under dual control, and returns the
// KindPending error naming it; nil when op is to be performed now (not
// under dual control, or performed on an approval).
func (c *Core) Hold(ctx context.Context, by principal.Principal, op string, req any) error {
	if by.ApprovedBy() != "" || !slices.Contains(c.DualControl, op) {
		return nil
	}
	if err := ops.Holdable(op); err != nil {
		// Configuration validation refuses this (config.AdminConfig).
		return Errorf(ops.KindInternal, "admin.dual_control: %v", err)
	}
	if by.Party == "" {
		reason := fmt.Sprintf("%s is under dual control and %s cannot be told apart from a second operator", op, by.Actor)
		c.Refused(ctx, by, op, reason, nil)
		return Errorf(ops.KindForbidden, "%s", reason)
	}
	raw, err := json.Marshal(req)
	if err != nil {
		return c.Fail(op, err)
	}
	id, err := store.NewID()
	if err != nil {
		return c.Fail(op, err)
	}
	now := c.Clock()
	roles := make([]string, len(by.Roles))
	for i, r := range by.Roles {
		roles[i] = string(r)
	}
	r := &store.AdminRequest{ID: id, Op: op, Request: raw, Actor: by.Actor, Party: by.Party, Roles: roles,
		Certs: by.Certs, CreatedAt: now, ExpiresAt: now.Add(c.pendingTTL())}
	err = c.Store.Update(ctx, func(tx store.Tx) error {
		if err := tx.CreateAdminRequest(r); err != nil {
			return err
		}
		return tx.AppendAudit(&store.AuditEntry{Time: now, Kind: store.AuditPendingRequested, Actor: by.Actor,
			Outcome: store.AuditOK, Fields: PendingFields(r)})
	})
	if err != nil {
		return c.Fail(op, err)
	}
	c.Log().Info("admin operation held for approval", "op", op, "actor", by.Actor, "pending_id", id,
		"expires", r.ExpiresAt)
	return &ops.Error{Kind: ops.KindPending, ID: id, Message: fmt.Sprintf(
		"pending request %s: %s needs approval by a second operator within %s (signd pending approve %s)",
		id, op, durationText(c.pendingTTL()), id)}
}

// PendingFields are the audit fields of a pending request's entries.
func PendingFields(r *store.AdminRequest) map[string]string {
	return map[string]string{"id": r.ID, "op": r.Op, "request": string(r.Request), "requested_by": r.Actor,
		"expires": r.ExpiresAt.UTC().Format(time.RFC3339)}
}

// durationText writes whole hours and minutes as 24h or 90m.
func durationText(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}
