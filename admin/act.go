package admin

import (
	"context"
	"log/slog"

	"github.com/signd/signd/admin/act"
	"github.com/signd/signd/store"
)

// audit.go and checkpoint.go perform their operations as every other one
// does, through the act core (admin/act), under the names they have used
// since it was this package's: l.begin, l.read, l.hold, a.end, a.grant,
// a.result... They stay in this package, unchanged, while the
// verification of the audit log changes for per-node chains; then they
// move to a subject package of their own and this adapter goes.

// auditAct is an act of the core as audit.go and checkpoint.go name its
// parts. What they set is given to the act before it appends an entry
// (sync).
type auditAct struct {
	act       *act.Act
	target    string
	result    map[string]string
	outside   bool
	recorded  bool
	unaudited string
}

func newAuditAct(a *act.Act, err error) (*auditAct, error) {
	if err != nil {
		return nil, err
	}
	return &auditAct{act: a, target: a.Target, result: a.Result}, nil
}

// sync gives the act what the caller set.
func (a *auditAct) sync() {
	a.act.Target, a.act.Outside, a.act.Recorded, a.act.Unaudited = a.target, a.outside, a.recorded, a.unaudited
}

func (a *auditAct) set(k, v string) { a.act.Set(k, v) }

func (a *auditAct) grant(ctx context.Context) error {
	a.sync()
	err := a.act.Grant(ctx)
	a.recorded = a.act.Recorded
	return err
}

func (a *auditAct) end(ctx context.Context, errp *error) {
	a.sync()
	a.act.End(ctx, errp)
}

func (l *Local) begin(ctx context.Context, by Principal, op string, kind store.AuditKind, target string) (*auditAct, error) {
	return newAuditAct(l.core().Begin(ctx, by, op, kind, target))
}

func (l *Local) read(ctx context.Context, by Principal, op, target string, fields map[string]string) (*auditAct, error) {
	return newAuditAct(l.core().Read(ctx, by, op, target, fields))
}

func (l *Local) hold(ctx context.Context, by Principal, op string, req any) error {
	return l.core().Hold(ctx, by, op, req)
}

func (l *Local) fail(op string, err error) error { return l.core().Fail(op, err) }

func (l *Local) logger() *slog.Logger { return l.core().Log() }

func (l *Local) keys() (KeyStore, error) { return l.hsm().KeyStore() }
