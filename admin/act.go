package admin

import (
	"context"
	"errors"
	"maps"
	"strings"
	"unicode/utf8"

	"github.com/signd/signd/store"
)

// Every call of a Local method leaves exactly one audit entry and one log
// line (DESIGN-NOTES.md, "The administration audit"):
//
//   - refused for its role: the admin_refused entry of allow, nothing more;
//   - a change done: one entry of the operation's kind, outcome ok (or the
//     credential status it leaves, for credential_enrolled), appended in
//     the write transaction of the change (act.update), so both or
//     neither are committed; an act done outside the store (the token for
//     the TSA, the OIDC key ring's own transactions) appends it in its own
//     transaction right after (act.end), and when that fails the operator
//     is told the act stands unaudited;
//   - a read: one admin_read entry (Fields["op"] names the operation),
//     written BEFORE the read in its own transaction (act.grant): when the
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

// act is one call of an administrative operation, from its role check to
// its audit entry and log line.
type act struct {
	l      *Local
	by     Principal
	op     string
	kind   store.AuditKind
	target string
	// user, client and credential fill the entry's fields of the same
	// name where the act concerns one.
	user, client, credential string
	// fields is what was asked (on every entry of the act); result is
	// what the change did (only on the entry of a done act).
	fields, result map[string]string
	// outcome and reason of a done act: "" = store.AuditOK, no reason.
	outcome, reason string
	// recorded: the act's entry is committed; nothing more is appended.
	recorded bool
	// outside: the act changes what is outside the store (the token, the
	// OIDC key ring's own transactions), so its entry follows it (end).
	// An act that is not outside and ends done without its entry is a
	// bug: end appends the entry all the same, and logs an error.
	outside bool
	// unaudited says why the act appends no entry: the verification of
	// a log found broken. end logs it at ERROR instead.
	unaudited string
}

// begin checks that by may perform op (allow, which audits a refusal)
// and starts the act of kind on target. The caller defers a.end.
func (l *Local) begin(ctx context.Context, by Principal, op string, kind store.AuditKind, target string) (*act, error) {
	if err := l.allow(ctx, by, op); err != nil {
		return nil, err
	}
	return &act{l: l, by: by, op: op, kind: kind, target: target,
		fields: map[string]string{}, result: map[string]string{}}, nil
}

// read begins a read-only operation: kind admin_read, fields naming what
// it reads. The caller defers a.end and calls a.grant before reading.
func (l *Local) read(ctx context.Context, by Principal, op, target string, fields map[string]string) (*act, error) {
	a, err := l.begin(ctx, by, op, store.AuditAdminRead, target)
	if err != nil {
		return nil, err
	}
	maps.Copy(a.fields, fields)
	return a, nil
}

// entry is the act's audit entry with outcome and reason; a done entry
// carries the result fields too.
func (a *act) entry(outcome, reason string) *store.AuditEntry {
	f := maps.Clone(a.fields)
	if outcome != store.AuditRefused && outcome != store.AuditFailed {
		maps.Copy(f, a.result)
	}
	f["op"] = a.op
	f = a.by.ApprovalFields(f)
	for k, v := range f {
		f[k] = clip(v)
	}
	return &store.AuditEntry{Time: a.l.now(), Kind: a.kind, Actor: clip(a.by.Actor), Target: clip(a.target),
		User: clip(a.user), Client: clip(a.client), Credential: clip(a.credential),
		Outcome: outcome, Reason: clip(reason), Fields: f}
}

// maxAuditText bounds each text of an entry; what a request names is
// checked only after the entry of its refusal is made.
const maxAuditText = 1024

// clip makes s fit an entry: valid UTF-8 (the store refuses anything
// else) and at most maxAuditText bytes, cut at a character and marked.
func clip(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= maxAuditText {
		return s
	}
	cut := maxAuditText - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func (a *act) done() *store.AuditEntry {
	outcome := a.outcome
	if outcome == "" {
		outcome = store.AuditOK
	}
	return a.entry(outcome, a.reason)
}

// update runs fn in one write transaction and appends the act's entry in
// the same one, after fn: fn may set a.result, a.reason, a.credential.
func (a *act) update(ctx context.Context, fn func(tx store.Tx) error) error {
	err := a.l.Store.Update(ctx, func(tx store.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		return tx.AppendAudit(a.done())
	})
	if err == nil {
		a.recorded = true
	}
	return err
}

// record appends the act's done entry in a transaction of its own, after
// an act done outside the store.
func (a *act) record(ctx context.Context) error {
	err := a.l.Store.Update(ctx, func(tx store.Tx) error { return tx.AppendAudit(a.done()) })
	if err != nil {
		return a.l.fail(a.op, err)
	}
	a.recorded = true
	return nil
}

// grant appends a read's entry before the read: when the audit log cannot
// be written, the read is refused.
func (a *act) grant(ctx context.Context) error {
	if err := a.record(ctx); err != nil {
		return errorf(KindOf(err), "%s refused: the audit log cannot be written: %v", a.op, err)
	}
	return nil
}

// end finishes the act whose method returns *errp: it appends the entry
// not yet committed (done after the fact, refused or failed) and writes
// the log line.
func (a *act) end(ctx context.Context, errp *error) {
	err := *errp
	log := a.l.logger()
	attrs := []any{"op", a.op, "actor", a.by.Actor, "target", a.target, "kind", a.kind}
	switch {
	case err == nil && a.unaudited != "":
		log.Error("admin act done, not audited: "+a.unaudited, attrs...)
	case err == nil && a.recorded:
		log.Info("admin act done", append(attrs, "fields", a.done().Fields)...)
	case err == nil:
		// Done outside the store (the token, the OIDC key ring): the entry
		// follows the act.
		if !a.outside {
			log.Error("admin act done without its audit entry in its transaction (a bug of signd): appending it now", attrs...)
		}
		if rerr := a.record(context.WithoutCancel(ctx)); rerr != nil {
			log.Error("admin act done but not audited", append(attrs, "fields", a.done().Fields, "err", rerr)...)
			*errp = errorf(KindOf(rerr), "%s was done, but its audit entry could not be written (%v): the act stands; see the signd log", a.op, rerr)
			return
		}
		log.Info("admin act done", append(attrs, "fields", a.done().Fields)...)
	case a.recorded:
		// A read granted and audited that then failed: the entry stands.
		log.Warn("admin read failed", append(attrs, "err", err.Error())...)
	default:
		outcome := store.AuditRefused
		switch KindOf(err) {
		case KindUnavailable, KindInternal:
			outcome = store.AuditFailed
		}
		reason := err.Error()
		if errors.Is(err, store.ErrCorrupt) {
			// Nothing is written into a store found damaged.
			log.Error("admin act failed, not audited: the store is damaged", append(attrs, "outcome", outcome, "reason", reason)...)
			return
		}
		werr := a.l.Store.Update(context.WithoutCancel(ctx), func(tx store.Tx) error {
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

// set records what was asked.
func (a *act) set(k, v string) { a.fields[k] = v }
