package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/signd/signd/admin/internal/approval"
	"github.com/signd/signd/admin/ops"
	"github.com/signd/signd/store"
)

// Dual control (k-of-n with k = 2, as Vault's control groups): an
// operation named in Local.DualControl is not performed when asked.
// hold, called by the method right after its role check (begin, act.go),
// stores it as a pending request
// (store.AdminRequest: the operation, its JSON request, the requester's
// principal, an expiry) with a pending_requested audit entry in the same
// transaction, and answers KindPending with the request's ID. A second
// operator — another Party, holding a role of the operation — approves it
// with ApprovePending: one transaction claims (deletes) the request and
// appends pending_approved, so of two approvals at once one wins; then the
// stored request is performed again through Operations, as the requester,
// with the approver in Principal.ApprovedBy, which the act's own audit
// entry records (ApprovalFields). RejectPending withdraws or refuses it;
// an expired one is removed by the sweeper (store.SweepTx) or by the
// approval that came too late, with a pending_expired entry.

// DefaultPendingTTL is how long a pending request waits for its approval
// when Local.PendingTTL is 0 (admin.pending_ttl).
const DefaultPendingTTL = 24 * time.Hour

func (l *Local) pendingTTL() time.Duration {
	if l.PendingTTL > 0 {
		return l.PendingTTL
	}
	return DefaultPendingTTL
}

// hold stores the operation named op, asked by by with request req, as a
// pending request when it is under dual control, and returns the
// KindPending error naming it; nil when op is to be performed now (not
// under dual control, or performed on an approval).
func (l *Local) hold(ctx context.Context, by Principal, op string, req any) error {
	if by.ApprovedBy() != "" || !slices.Contains(l.DualControl, op) {
		return nil
	}
	if err := Holdable(op); err != nil {
		// Configuration validation refuses this (config.AdminConfig).
		return errorf(KindInternal, "admin.dual_control: %v", err)
	}
	if by.Party == "" {
		reason := fmt.Sprintf("%s is under dual control and %s cannot be told apart from a second operator", op, by.Actor)
		l.refused(ctx, by, op, reason, nil)
		return errorf(KindForbidden, "%s", reason)
	}
	raw, err := json.Marshal(req)
	if err != nil {
		return l.fail(op, err)
	}
	id, err := store.NewID()
	if err != nil {
		return l.fail(op, err)
	}
	now := l.now()
	roles := make([]string, len(by.Roles))
	for i, r := range by.Roles {
		roles[i] = string(r)
	}
	r := &store.AdminRequest{ID: id, Op: op, Request: raw, Actor: by.Actor, Party: by.Party, Roles: roles,
		CreatedAt: now, ExpiresAt: now.Add(l.pendingTTL())}
	err = l.Store.Update(ctx, func(tx store.Tx) error {
		if err := tx.CreateAdminRequest(r); err != nil {
			return err
		}
		return tx.AppendAudit(&store.AuditEntry{Time: now, Kind: store.AuditPendingRequested, Actor: by.Actor,
			Outcome: store.AuditOK, Fields: pendingFields(r)})
	})
	if err != nil {
		return l.fail(op, err)
	}
	l.logger().Info("admin operation held for approval", "op", op, "actor", by.Actor, "pending_id", id,
		"expires", r.ExpiresAt)
	return &Error{Kind: KindPending, ID: id, Message: fmt.Sprintf(
		"pending request %s: %s needs approval by a second operator within %s (signd pending approve %s)",
		id, op, durationText(l.pendingTTL()), id)}
}

// pendingFields are the audit fields of a pending request's entries.
func pendingFields(r *store.AdminRequest) map[string]string {
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

// ListPending implements Service: every pending request, oldest first,
// expired ones (not yet swept) marked.
func (l *Local) ListPending(ctx context.Context, by Principal) (_ []PendingView, err error) {
	a, err := l.read(ctx, by, "ListPending", "pending", nil)
	if err != nil {
		return nil, err
	}
	defer a.end(ctx, &err)
	if err := a.grant(ctx); err != nil {
		return nil, err
	}
	var rs []store.AdminRequest
	err = l.Store.View(ctx, func(tx store.Tx) (err error) {
		rs, err = tx.AdminRequests()
		return err
	})
	if err != nil {
		return nil, l.fail("pending requests", err)
	}
	now := l.now()
	views := make([]PendingView, len(rs))
	for i := range rs {
		views[i] = ops.PendingViewOf(&rs[i], now)
	}
	return views, nil
}

// decision is what deciding a pending request found.
type decision struct {
	req     *store.AdminRequest
	op      Operation
	expired bool
	refusal string // why by may not decide it
}

// decide runs, in one write transaction, the decision of by on pending
// request id: it finds the request, removes it with a pending_expired
// entry when it has expired, and otherwise asks may for a refusal; none,
// it removes the request and appends the entry kind by by. Of two
// decisions at once, the second finds the request gone (KindNotFound).
func (l *Local) decide(ctx context.Context, by Principal, what, id string, kind store.AuditKind,
	may func(r *store.AdminRequest, o Operation) string) (*decision, error) {
	now := l.now()
	var d decision
	err := l.Store.Update(ctx, func(tx store.Tx) error {
		d = decision{} // an optimistic backend (etcd) may run this again
		r, err := tx.AdminRequest(id)
		if err != nil {
			return err
		}
		d.req = r
		o, ok := Lookup(r.Op)
		if !ok {
			return errorf(KindConflict, "pending request %s holds the unknown operation %q", id, r.Op)
		}
		d.op = o
		if !now.Before(r.ExpiresAt) {
			d.expired = true
			if err := tx.DeleteAdminRequest(id); err != nil {
				return err
			}
			return tx.AppendAudit(store.AdminRequestExpired(r, now))
		}
		if d.refusal = may(r, o); d.refusal != "" {
			return nil
		}
		if err := tx.DeleteAdminRequest(id); err != nil {
			return err
		}
		return tx.AppendAudit(&store.AuditEntry{Time: now, Kind: kind, Actor: by.Actor, Outcome: store.AuditOK,
			Fields: pendingFields(r)})
	})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, errorf(KindNotFound, "no pending request %q (unknown, or already approved, rejected or expired)", id)
	case err != nil:
		return nil, l.fail("pending request "+id, err)
	case d.expired:
		return nil, errorf(KindConflict, "pending request %s expired unapproved at %s: ask again",
			id, d.req.ExpiresAt.UTC().Format(time.RFC3339))
	case d.refusal != "":
		l.refused(ctx, by, what, d.refusal, map[string]string{"id": id, "requested_by": d.req.Actor})
		return nil, errorf(KindForbidden, "%s", d.refusal)
	}
	return &d, nil
}

// holdsOne reports whether by holds one of roles.
func holdsOne(by Principal, roles []Role) bool {
	return slices.ContainsFunc(roles, by.Has)
}

// ApprovePending implements Service: by, a second operator, approves the
// pending request id, which is then performed as its requester asked.
// Refused: an approver with no Party or the requester's Party (the same
// person), an approver without a role of the held operation, an expired
// request. The approval consumes the request even when the operation then
// fails (its error is returned): the requester asks again.
func (l *Local) ApprovePending(ctx context.Context, by Principal, id string) (*ApprovalResult, error) {
	if err := l.allow(ctx, by, "ApprovePending"); err != nil {
		return nil, err
	}
	d, err := l.decide(ctx, by, "ApprovePending", id, store.AuditPendingApproved, func(r *store.AdminRequest, o Operation) string {
		switch {
		case by.Party == "":
			return fmt.Sprintf("%s cannot be told apart from the requester of %s and cannot approve it", by.Actor, r.ID)
		case by.Party == r.Party:
			return fmt.Sprintf("%s requested %s: a second operator must approve it", by.Actor, r.ID)
		case !holdsOne(by, o.Roles):
			return fmt.Sprintf("approving %s (%s) requires a role of the operation: %s; %s holds %s",
				r.ID, r.Op, rolesText(o.Roles), by.Actor, rolesText(by.Roles))
		}
		return ""
	})
	if err != nil {
		return nil, err
	}
	r := d.req
	requester := Principal{Actor: r.Actor, Party: r.Party}.Approved(approval.New(by.Actor))
	for _, name := range r.Roles {
		if role, err := ParseRole(name); err == nil {
			requester.Roles = append(requester.Roles, role)
		}
	}
	l.logger().Info("pending request approved", "pending_id", id, "op", r.Op, "requested_by", r.Actor, "approved_by", by.Actor)
	res, err := d.op.Call(ctx, l, requester, r.Request)
	if err != nil {
		return nil, err
	}
	out, err := json.Marshal(res)
	if err != nil {
		return nil, l.fail(r.Op, err)
	}
	return &ApprovalResult{Pending: ops.PendingViewOf(r, l.now()), ApprovedBy: by.Actor, Result: out}, nil
}

// RejectPending implements Service: the requester withdraws, or an
// operator holding a role of the held operation refuses, the pending
// request id. It is removed with a pending_rejected entry.
func (l *Local) RejectPending(ctx context.Context, by Principal, id string) (*PendingView, error) {
	if err := l.allow(ctx, by, "RejectPending"); err != nil {
		return nil, err
	}
	d, err := l.decide(ctx, by, "RejectPending", id, store.AuditPendingRejected, func(r *store.AdminRequest, o Operation) string {
		if (by.Party != "" && by.Party == r.Party) || holdsOne(by, o.Roles) {
			return ""
		}
		return fmt.Sprintf("rejecting %s (%s) requires a role of the operation: %s, or being its requester; %s holds %s",
			r.ID, r.Op, rolesText(o.Roles), by.Actor, rolesText(by.Roles))
	})
	if err != nil {
		return nil, err
	}
	l.logger().Info("pending request rejected", "pending_id", id, "op", d.req.Op, "requested_by", d.req.Actor, "rejected_by", by.Actor)
	v := ops.PendingViewOf(d.req, l.now())
	return &v, nil
}
