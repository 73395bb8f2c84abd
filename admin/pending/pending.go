package pending

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/signd/signd/admin/act"
	"github.com/signd/signd/admin/internal/approval"
	"github.com/signd/signd/admin/ops"
	"github.com/signd/signd/admin/principal"
	"github.com/signd/signd/store"
)

// Pending performs the operations on pending requests: list, approve,
// reject.
type Pending struct {
	*act.Core
	// Service performs an approved request as its requester asked
	// (admin.Local, through ops.Operation.Call).
	Service ops.Service
	// RolesNow looks up the roles the requester holds at the approval:
	// the act is performed with those, not with the roles they held
	// when they asked. nil: no request can be approved.
	RolesNow principal.RolesNow
}

// Dual control (k-of-n with k = 2, as Vault's control groups): an
// operation named in act.Core.DualControl is not performed when asked.
// act.Core.Hold, called by the method right after its role check (Begin),
// stores it as a pending request
// (store.AdminRequest: the operation, its JSON request, the requester's
// principal, an expiry) with a pending_requested audit entry in the same
// transaction, and answers KindPending with the request's ID. A second
// operator — another Party, holding a role of the operation — approves it
// with ApprovePending: one transaction claims (deletes) the request and
// appends pending_approved, so of two approvals at once one wins; then the
// stored request is performed again through Operations, as the requester,
// with the approver in Principal.ApprovedBy, which the act's own audit
// entry records (ApprovalFields). The requester acts with the roles they
// hold at the approval (Pending.RolesNow: their groups now, or their
// certificate if the provisioning API still admits it), not those they
// held when they asked: a requester who no longer holds a role of the
// operation, or whose roles cannot be established, has the request
// rejected by the approval (pending_rejected by signd, with the reason). RejectPending withdraws or refuses it;
// an expired one is removed by the sweeper (store.SweepTx) or by the
// approval that came too late, with a pending_expired entry.

// ListPending performs Service.ListPending: every pending request, oldest first,
// expired ones (not yet swept) marked.
func (l *Pending) ListPending(ctx context.Context, by principal.Principal) (_ []ops.PendingView, err error) {
	a, err := l.Read(ctx, by, "ListPending", "pending", nil)
	if err != nil {
		return nil, err
	}
	defer a.End(ctx, &err)
	if err := a.Grant(ctx); err != nil {
		return nil, err
	}
	var rs []store.AdminRequest
	err = l.Store.View(ctx, func(tx store.Tx) (err error) {
		rs, err = tx.AdminRequests()
		return err
	})
	if err != nil {
		return nil, l.Fail("pending requests", err)
	}
	now := l.Clock()
	views := make([]ops.PendingView, len(rs))
	for i := range rs {
		views[i] = ops.PendingViewOf(&rs[i], now)
	}
	return views, nil
}

// decision is what deciding a pending request found.
type decision struct {
	req     *store.AdminRequest
	op      ops.Operation
	expired bool
	refusal string // why by may not decide it
	dropped bool   // the refusal rejected the request (pending_rejected)
}

// decide runs, in one write transaction, the decision of by on pending
// request id: it finds the request, removes it with a pending_expired
// entry when it has expired, and otherwise asks may for a refusal; none,
// it removes the request and appends the entry kind by by. A refusal
// with drop removes the request too, with a pending_rejected entry by
// signd giving the refusal as its reason. Of two decisions at once, the
// second finds the request gone (KindNotFound).
func (l *Pending) decide(ctx context.Context, by principal.Principal, what, id string, kind store.AuditKind,
	may func(r *store.AdminRequest, o ops.Operation) (refusal string, drop bool)) (*decision, error) {
	now := l.Clock()
	var d decision
	err := l.Store.Update(ctx, func(tx store.Tx) error {
		d = decision{} // an optimistic backend (etcd) may run this again
		r, err := tx.AdminRequest(id)
		if err != nil {
			return err
		}
		d.req = r
		o, ok := ops.Lookup(r.Op)
		if !ok {
			return act.Errorf(ops.KindConflict, "pending request %s holds the unknown operation %q", id, r.Op)
		}
		d.op = o
		if !now.Before(r.ExpiresAt) {
			d.expired = true
			if err := tx.DeleteAdminRequest(id); err != nil {
				return err
			}
			return tx.AppendAudit(store.AdminRequestExpired(r, now))
		}
		if d.refusal, d.dropped = may(r, o); d.refusal != "" {
			if !d.dropped {
				return nil
			}
			if err := tx.DeleteAdminRequest(id); err != nil {
				return err
			}
			fields := act.PendingFields(r)
			fields["approval_by"] = by.Actor
			return tx.AppendAudit(&store.AuditEntry{Time: now, Kind: store.AuditPendingRejected, Actor: principal.Daemon().Actor,
				Outcome: store.AuditOK, Reason: act.Clip(d.refusal), Fields: fields})
		}
		if err := tx.DeleteAdminRequest(id); err != nil {
			return err
		}
		return tx.AppendAudit(&store.AuditEntry{Time: now, Kind: kind, Actor: by.Actor, Outcome: store.AuditOK,
			Fields: act.PendingFields(r)})
	})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, act.Errorf(ops.KindNotFound, "no pending request %q (unknown, or already approved, rejected or expired)", id)
	case err != nil:
		return nil, l.Fail("pending request "+id, err)
	case d.expired:
		return nil, act.Errorf(ops.KindConflict, "pending request %s expired unapproved at %s: ask again",
			id, d.req.ExpiresAt.UTC().Format(time.RFC3339))
	case d.refusal != "":
		l.Refused(ctx, by, what, d.refusal, map[string]string{"id": id, "requested_by": d.req.Actor})
		return nil, act.Errorf(ops.KindForbidden, "%s", d.refusal)
	}
	return &d, nil
}

// requesterRoles are the roles the requester of r holds now (RolesNow).
func (l *Pending) requesterRoles(ctx context.Context, r *store.AdminRequest) ([]principal.Role, error) {
	if l.RolesNow == nil {
		return nil, errors.New("signd has no way to look up the roles of a requester")
	}
	return l.RolesNow(ctx, r.Party, r.Certs)
}

// sameHolder explains a refusal of the requester's own Party when it is
// a certificate's subject: another key of the same subject is the same
// operator.
func sameHolder(party string) string {
	subj, ok := strings.CutPrefix(party, principal.CertSubjectParty)
	if !ok {
		return ""
	}
	return fmt.Sprintf(" (a certificate with the subject %s is the same operator, whatever its key)", subj)
}

// holdsOne reports whether by holds one of roles.
func holdsOne(by principal.Principal, roles []principal.Role) bool {
	return slices.ContainsFunc(roles, by.Has)
}

// ApprovePending performs Service.ApprovePending: by, a second operator, approves the
// pending request id, which is then performed as its requester asked.
// Refused: an approver with no Party or the requester's Party (the same
// person: the same uid, or a certificate with the same subject), an
// approver without a role of the held operation, an expired request. A
// requester who no longer holds a role of the operation (RolesNow), or
// whose roles cannot be established, has the request rejected. The
// approval consumes the request even when the operation then fails (its
// error is returned): the requester asks again.
func (l *Pending) ApprovePending(ctx context.Context, by principal.Principal, id string) (*ops.ApprovalResult, error) {
	if err := l.Allow(ctx, by, "ApprovePending"); err != nil {
		return nil, err
	}
	// The requester's roles now, looked up before the deciding
	// transaction (a group database may take its time); the request is
	// read again there, and a request gone by then is not found.
	var asked *store.AdminRequest
	err := l.Store.View(ctx, func(tx store.Tx) (err error) {
		asked, err = tx.AdminRequest(id)
		if errors.Is(err, store.ErrNotFound) {
			return nil // decide says so
		}
		return err
	})
	if err != nil {
		return nil, l.Fail("pending request "+id, err)
	}
	var now []principal.Role
	var nowErr error
	if asked != nil {
		now, nowErr = l.requesterRoles(ctx, asked)
	}
	d, err := l.decide(ctx, by, "ApprovePending", id, store.AuditPendingApproved, func(r *store.AdminRequest, o ops.Operation) (string, bool) {
		switch {
		case by.Party == "":
			return fmt.Sprintf("%s cannot be told apart from the requester of %s and cannot approve it", by.Actor, r.ID), false
		case by.Party == r.Party:
			return fmt.Sprintf("%s requested %s: a second operator must approve it%s", by.Actor, r.ID, sameHolder(r.Party)), false
		case principal.SameKey(by.Certs, r.Certs):
			return fmt.Sprintf("%s holds the key of the requester of %s (%s): a second operator must approve it", by.Actor, r.ID, r.Actor), false
		case !holdsOne(by, o.Roles):
			return fmt.Sprintf("approving %s (%s) requires a role of the operation: %s; %s holds %s",
				r.ID, r.Op, act.RolesText(o.Roles), by.Actor, act.RolesText(by.Roles)), false
		case nowErr != nil:
			return fmt.Sprintf("%s is rejected: the roles of its requester %s cannot be established now: %v",
				r.ID, r.Actor, nowErr), true
		case !slices.ContainsFunc(o.Roles, func(role principal.Role) bool { return slices.Contains(now, role) }):
			return fmt.Sprintf("%s is rejected: its requester %s no longer holds a role of %s (%s); they hold %s now",
				r.ID, r.Actor, r.Op, act.RolesText(o.Roles), act.RolesText(now)), true
		}
		return "", false
	})
	if err != nil {
		return nil, err
	}
	r := d.req
	requester := principal.Principal{Actor: r.Actor, Party: r.Party, Roles: now, Certs: r.Certs}.Approved(approval.New(by.Actor))
	l.Log().Info("pending request approved", "pending_id", id, "op", r.Op, "requested_by", r.Actor, "approved_by", by.Actor)
	res, err := d.op.Call(ctx, l.Service, requester, r.Request)
	if err != nil {
		return nil, err
	}
	out, err := json.Marshal(res)
	if err != nil {
		return nil, l.Fail(r.Op, err)
	}
	return &ops.ApprovalResult{Pending: ops.PendingViewOf(r, l.Clock()), ApprovedBy: by.Actor, Result: out}, nil
}

// RejectPending performs Service.RejectPending: the requester withdraws, or an
// operator holding a role of the held operation refuses, the pending
// request id. It is removed with a pending_rejected entry.
func (l *Pending) RejectPending(ctx context.Context, by principal.Principal, id string) (*ops.PendingView, error) {
	if err := l.Allow(ctx, by, "RejectPending"); err != nil {
		return nil, err
	}
	d, err := l.decide(ctx, by, "RejectPending", id, store.AuditPendingRejected, func(r *store.AdminRequest, o ops.Operation) (string, bool) {
		if (by.Party != "" && by.Party == r.Party) || holdsOne(by, o.Roles) {
			return "", false
		}
		return fmt.Sprintf("rejecting %s (%s) requires a role of the operation: %s, or being its requester; %s holds %s",
			r.ID, r.Op, act.RolesText(o.Roles), by.Actor, act.RolesText(by.Roles)), false
	})
	if err != nil {
		return nil, err
	}
	l.Log().Info("pending request rejected", "pending_id", id, "op", d.req.Op, "requested_by", d.req.Actor, "rejected_by", by.Actor)
	v := ops.PendingViewOf(d.req, l.Clock())
	return &v, nil
}
