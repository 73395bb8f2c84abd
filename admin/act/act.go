package act

import (
	"context"
	"errors"
	"maps"
	"strings"
	"unicode/utf8"

	"github.com/signd/signd/admin/ops"
	"github.com/signd/signd/admin/principal"
	"github.com/signd/signd/store"
)

// Every call of an admin.Local method leaves exactly one audit entry and
// one log line (DESIGN-NOTES.md, "The administration audit"):
//
//   - refused for its role: the admin_refused entry of Core.Allow, nothing
//     more;
//   - a change done: one entry of the operation's kind, outcome ok (or the
//     credential status it leaves, for credential_enrolled), appended in
//     the write transaction of the change (Act.Update, or Act.AppendIn
//     in the transaction another package runs: the OIDC key ring's), so
//     both or neither are committed; an act done outside the store (the
//     token for the TSA) appends it in its own transaction right after
//     (Act.End), and when that fails the operator is told the act stands
//     unaudited;
//   - a read: one admin_read entry (Fields["op"] names the operation),
//     written BEFORE the read in its own transaction (Act.Grant): when the
//     audit log cannot be written the read is refused. AuditVerify appends
//     it after verifying and before answering (it records the head it
//     verified), and not at all into a log it found broken;
//   - refused by validation (KindInvalid, KindNotFound, KindExists,
//     KindConflict): one entry of the operation's kind, outcome refused,
//     Reason the operator's message (which never holds a secret), in its
//     own transaction;
//   - failed (KindUnavailable, KindInternal): the same with outcome failed,
//     when the store can still write; when it cannot, the log line (ERROR)
//     is all that is left.
//
// The log line is INFO for a done act, WARN for a refused or failed one,
// with op, actor, target and kind; never a secret.

// Act is one call of an administrative operation, from its role check to
// its audit entry and log line.
type Act struct {
	c    *Core
	by   principal.Principal
	op   string
	kind store.AuditKind
	// Target is what the act is about ("user:alice"); an act may name it
	// better once it knows more (a new credential's ID).
	Target string
	// User, Client and Credential fill the entry's fields of the same
	// name where the act concerns one.
	User, Client, Credential string
	// fields is what was asked (on every entry of the act, Set); Result
	// is what the change did (only on the entry of a done act).
	fields, Result map[string]string
	// Outcome and Reason of a done act: "" = store.AuditOK, no reason.
	Outcome, Reason string
	// Recorded: the act's entry is committed; nothing more is appended.
	Recorded bool
	// Outside: the act changes what is outside the store (the token),
	// so its entry follows it (End).
	// An act that is not outside and ends done without its entry is a
	// bug: End appends the entry all the same, and logs an error.
	Outside bool
	// Unaudited says why the act appends no entry: the verification of
	// a log found broken. End logs it at ERROR instead.
	Unaudited string
}

// Begin checks that by may perform op (Allow, which audits a refusal)
// and starts the act of kind on target. The caller calls Hold, then
// defers a.End.
func (c *Core) Begin(ctx context.Context, by principal.Principal, op string, kind store.AuditKind, target string) (*Act, error) {
	if err := c.Allow(ctx, by, op); err != nil {
		return nil, err
	}
	return &Act{c: c, by: by, op: op, kind: kind, Target: target,
		fields: map[string]string{}, Result: map[string]string{}}, nil
}

// Read begins a read-only operation: kind admin_read, fields naming what
// it reads. The caller defers a.End and calls a.Grant before reading.
func (c *Core) Read(ctx context.Context, by principal.Principal, op, target string, fields map[string]string) (*Act, error) {
	a, err := c.Begin(ctx, by, op, store.AuditAdminRead, target)
	if err != nil {
		return nil, err
	}
	maps.Copy(a.fields, fields)
	return a, nil
}

// entry is the act's audit entry with outcome and reason; a done entry
// carries the result fields too.
func (a *Act) entry(outcome, reason string) *store.AuditEntry {
	f := maps.Clone(a.fields)
	if outcome != store.AuditRefused && outcome != store.AuditFailed {
		maps.Copy(f, a.Result)
	}
	f["op"] = a.op
	f = a.by.ApprovalFields(f)
	for k, v := range f {
		f[k] = Clip(v)
	}
	return &store.AuditEntry{Time: a.c.Clock(), Kind: a.kind, Actor: Clip(a.by.Actor), Target: Clip(a.Target),
		User: Clip(a.User), Client: Clip(a.Client), Credential: Clip(a.Credential),
		Outcome: outcome, Reason: Clip(reason), Fields: f}
}

// MaxAuditText bounds each text of an entry; what a request names is
// checked only after the entry of its refusal is made.
const MaxAuditText = 1024

// Clip makes s fit an entry: valid UTF-8 (the store refuses anything
// else) and at most MaxAuditText bytes, cut at a character and marked.
func Clip(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= MaxAuditText {
		return s
	}
	cut := MaxAuditText - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func (a *Act) done() *store.AuditEntry {
	outcome := a.Outcome
	if outcome == "" {
		outcome = store.AuditOK
	}
	return a.entry(outcome, a.Reason)
}

// Update runs fn in one write transaction and appends the act's entry in
// the same one, after fn: fn may set a.Result, a.Reason, a.Credential.
func (a *Act) Update(ctx context.Context, fn func(tx store.Tx) error) error {
	err := a.c.Store.Update(ctx, func(tx store.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		return tx.AppendAudit(a.done())
	})
	if err == nil {
		a.Recorded = true
	}
	return err
}

// AppendIn appends the act's done entry to tx, the write transaction
// that another package runs to make the change (the OIDC key ring's,
// oidc.Recorder): the change and its entry are committed together. The
// caller sets Recorded once that transaction has committed. The
// transaction may run again; the entry is made anew each time.
func (a *Act) AppendIn(tx store.AuditAppender) error {
	return tx.AppendAudit(a.done())
}

// Record appends the act's done entry in a transaction of its own, after
// an act done outside the store.
func (a *Act) Record(ctx context.Context) error {
	err := a.c.Store.Update(ctx, func(tx store.Tx) error { return tx.AppendAudit(a.done()) })
	if err != nil {
		return a.c.Fail(a.op, err)
	}
	a.Recorded = true
	return nil
}

// Grant appends a read's entry before the read: when the audit log cannot
// be written, the read is refused.
func (a *Act) Grant(ctx context.Context) error {
	if err := a.Record(ctx); err != nil {
		return Errorf(ops.KindOf(err), "%s refused: the audit log cannot be written: %v", a.op, err)
	}
	return nil
}

// End finishes the act whose method returns *errp: it appends the entry
// not yet committed (done after the fact, refused or failed) and writes
// the log line.
func (a *Act) End(ctx context.Context, errp *error) {
	err := *errp
	log := a.c.Log()
	attrs := []any{"op", a.op, "actor", a.by.Actor, "target", a.Target, "kind", a.kind}
	switch {
	case err == nil && a.Unaudited != "":
		log.Error("admin act done, not audited: "+a.Unaudited, attrs...)
	case err == nil && a.Recorded:
		log.Info("admin act done", append(attrs, "fields", a.done().Fields)...)
	case err == nil:
		// Done outside the store (the token): the entry follows the act.
		if !a.Outside {
			log.Error("admin act done without its audit entry in its transaction (a bug of signd): appending it now", attrs...)
		}
		if rerr := a.Record(context.WithoutCancel(ctx)); rerr != nil {
			log.Error("admin act done but not audited", append(attrs, "fields", a.done().Fields, "err", rerr)...)
			*errp = Errorf(ops.KindOf(rerr), "%s was done, but its audit entry could not be written (%v): the act stands; see the signd log", a.op, rerr)
			return
		}
		log.Info("admin act done", append(attrs, "fields", a.done().Fields)...)
	case a.Recorded:
		// A read granted and audited that then failed: the entry stands.
		log.Warn("admin read failed", append(attrs, "err", err.Error())...)
	default:
		outcome := store.AuditRefused
		switch ops.KindOf(err) {
		case ops.KindUnavailable, ops.KindInternal:
			outcome = store.AuditFailed
		}
		reason := err.Error()
		if errors.Is(err, store.ErrCorrupt) {
			// Nothing is written into a store found damaged.
			log.Error("admin act failed, not audited: the store is damaged", append(attrs, "outcome", outcome, "reason", reason)...)
			return
		}
		werr := a.c.Store.Update(context.WithoutCancel(ctx), func(tx store.Tx) error {
			return tx.AppendAudit(a.entry(outcome, reason))
		})
		attrs = append(attrs, "outcome", outcome, "reason", reason)
		if werr != nil {
			log.Error("admin act "+outcome+", not audited: the store cannot write", append(attrs, "err", werr)...)
			return
		}
		log.Warn("admin act "+outcome, attrs...)
	}
}

// Set records what was asked.
func (a *Act) Set(k, v string) { a.fields[k] = v }
