package users

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/signd/signd/admin/act"
	"github.com/signd/signd/admin/enrollment"
	"github.com/signd/signd/admin/input"
	"github.com/signd/signd/admin/ops"
	"github.com/signd/signd/admin/principal"
	"github.com/signd/signd/store"
)

// The one-time enrollment link (DESIGN-NOTES.md, "The enrollment link"):
// its token, and what makes one open, are package admin/enrollment's.

// DefaultEnrollmentTTL is how long a link stays open when
// Users.EnrollmentTTL is 0 (admin.enrollment_ttl's default; the config
// bounds it).
const DefaultEnrollmentTTL = 24 * time.Hour

// Errors of Enroll and EnrollmentUser. ErrEnrollmentRefused is one answer
// for an unknown, used and expired link alike: the page tells none from
// the other (the audit entry and the log do).
var (
	ErrEnrollmentRefused = errors.New("admin: the enrollment link is unknown, used or expired")
	ErrEnrollPassword    = fmt.Errorf("admin: the password must be %d to %d bytes of printable characters", input.MinPasswordLen, input.MaxPasswordLen)
	ErrEnrollPIN         = fmt.Errorf("admin: the signing PIN must be %d to %d bytes of printable characters", input.MinPINLen, input.MaxPINLen)
	ErrEnrollTOTP        = errors.New("admin: the TOTP secret must be 32 to 128 base32 characters (at least 160 bits)")
)

func (l *Users) enrollmentTTL() time.Duration {
	if l.EnrollmentTTL > 0 {
		return l.EnrollmentTTL
	}
	return DefaultEnrollmentTTL
}

// newEnrollment makes a link for username: its token, the link and the
// fingerprint to store.
func (l *Users) newEnrollment(username string) (view *ops.EnrollmentView, hash []byte, err error) {
	if l.EnrollBaseURL == "" {
		return nil, nil, act.Errorf(ops.KindUnavailable, "enrollment links need server.base_url")
	}
	token, err := enrollment.New(username)
	if err != nil {
		return nil, nil, err
	}
	view = &ops.EnrollmentView{
		Link:      strings.TrimRight(l.EnrollBaseURL, "/") + enrollment.Path + token,
		ExpiresAt: l.Clock().Add(l.enrollmentTTL()).UTC().Round(0),
	}
	return view, store.Fingerprint(token), nil
}

// EnrollmentUser returns the user whose open link token is, for the page
// to show; ErrEnrollmentRefused otherwise. It changes nothing and audits
// nothing (a GET of the page).
func (l *Users) EnrollmentUser(ctx context.Context, token string) (string, error) {
	name := enrollment.Username(token)
	if name == "" {
		return "", ErrEnrollmentRefused
	}
	var u *store.User
	err := l.Store.View(ctx, func(tx store.Tx) (err error) {
		u, err = tx.User(name)
		return err
	})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return "", ErrEnrollmentRefused
	case err != nil:
		return "", err
	case enrollment.Refusal(u, token, l.Clock()) != "":
		return "", ErrEnrollmentRefused
	}
	return name, nil
}

// Enroll sets the password and signing PIN of the user whose open link
// req.Token is, and closes the link, in one transaction with its audit
// entry (account_action, action enroll, actor user:<name>). A link that
// is not open is ErrEnrollmentRefused, audited as refused when it names a
// user; a password or PIN outside the policy is ErrEnrollPassword or
// ErrEnrollPIN, and the link stays open.
//
// Setting one's own first secrets is not an operator's act: it needs no
// role, only the link the administrator's AddUser issued.
func (l *Users) Enroll(ctx context.Context, req ops.EnrollRequest) (string, error) {
	name, err := l.EnrollmentUser(ctx, req.Token)
	if errors.Is(err, ErrEnrollmentRefused) {
		l.refuseEnrollment(ctx, enrollment.Username(req.Token), req.IP, err)
	}
	if err != nil {
		return "", err
	}
	if ops.CheckSecretLen("password", req.Password, input.MinPasswordLen, input.MaxPasswordLen) != nil {
		return "", ErrEnrollPassword
	}
	if ops.CheckSecretLen("PIN", req.PIN, input.MinPINLen, input.MaxPINLen) != nil {
		return "", ErrEnrollPIN
	}
	if req.TOTPSecret != "" && !enrollment.ValidTOTPSecret(req.TOTPSecret) {
		return "", ErrEnrollTOTP
	}
	pw, err := l.Hasher.Hash([]byte(req.Password))
	if err != nil {
		return "", err
	}
	pin, err := l.Hasher.Hash([]byte(req.PIN))
	if err != nil {
		return "", err
	}
	var reason string
	err = l.Store.Update(ctx, func(tx store.Tx) error {
		u, err := tx.User(name)
		if err != nil {
			return err
		}
		// Again inside the transaction: of two uses at once, the second
		// finds the link closed by the first.
		if reason = enrollment.Refusal(u, req.Token, l.Clock()); reason != "" {
			return ErrEnrollmentRefused
		}
		u.PasswordHash, u.PINHash = pw, pin
		u.EnrollmentHash, u.EnrollmentExpires = nil, time.Time{}
		clearPasswordLock(u)
		u.PINLocked, u.FailedPINs = false, 0
		e := l.enrollEntry(name, req.IP, store.AuditOK, "")
		if req.TOTPSecret != "" {
			u.TOTPSecret, u.TOTPLastStep = req.TOTPSecret, req.TOTPStep
			e.Fields["totp"] = "enrolled"
		}
		if err := tx.PutUser(u); err != nil {
			return err
		}
		return tx.AppendAudit(e)
	})
	if err != nil {
		if errors.Is(err, ErrEnrollmentRefused) {
			l.refuseEnrollmentReason(ctx, name, req.IP, reason)
		}
		return "", err
	}
	l.Log().Info("enrollment done: the user set their password and signing PIN", "username", name, "ip", req.IP)
	return name, nil
}

// enrollEntry is the audit entry of a use of a link.
func (l *Users) enrollEntry(name, ip, outcome, reason string) *store.AuditEntry {
	return &store.AuditEntry{Time: l.Clock(), Kind: store.AuditAccount, Actor: "user:" + name,
		Target: "user:" + name, User: name, Outcome: outcome, Reason: reason,
		Fields: map[string]string{"action": "enroll", "ip": act.Clip(ip), "password": "set", "pin": "set"}}
}

// refuseEnrollment records a refused use of a link: in the audit log when
// the link names a user that exists, else in the log alone (a guessed
// link must not write the audit log).
func (l *Users) refuseEnrollment(ctx context.Context, name, ip string, cause error) {
	if name == "" {
		l.Log().Warn("enrollment refused: not a link signd issued", "ip", ip)
		return
	}
	var u *store.User
	err := l.Store.View(ctx, func(tx store.Tx) (err error) {
		u, err = tx.User(name)
		return err
	})
	if err != nil {
		l.Log().Warn("enrollment refused: no such user", "username", act.Clip(name), "ip", ip, "err", cause)
		return
	}
	// The reason the stored record gives; the token is not at hand here,
	// only whether any link is open.
	reason := "not the user's open enrollment link, or it expired"
	if len(u.EnrollmentHash) == 0 {
		reason = "no enrollment link is open (used, closed, or never issued)"
	} else if u.Status != store.UserActive {
		reason = "the user is disabled"
	} else if !l.Clock().Before(u.EnrollmentExpires) {
		reason = "the enrollment link expired at " + u.EnrollmentExpires.UTC().Format(time.RFC3339)
	}
	l.refuseEnrollmentReason(ctx, name, ip, reason)
}

func (l *Users) refuseEnrollmentReason(ctx context.Context, name, ip, reason string) {
	l.Log().Warn("enrollment refused", "username", name, "ip", ip, "reason", reason)
	e := l.enrollEntry(name, ip, store.AuditRefused, reason)
	delete(e.Fields, "password")
	delete(e.Fields, "pin")
	if err := l.Store.Update(context.WithoutCancel(ctx), func(tx store.Tx) error { return tx.AppendAudit(e) }); err != nil {
		l.Log().Error("enrollment refused, and its audit entry could not be written", "username", name, "err", err)
	}
}

// closeEnrollment closes u's open link, if any, when an operator sets a
// secret of u (SetPassword, SetPIN): the operator has taken the
// enrollment over, and whoever holds the link must not replace what they
// set. The act's entry says so (enrollment closed).
func closeEnrollment(a *act.Act, u *store.User) {
	if len(u.EnrollmentHash) == 0 {
		return
	}
	u.EnrollmentHash, u.EnrollmentExpires = nil, time.Time{}
	a.Result["enrollment"] = "closed"
}

// IssueEnrollment performs Service.IssueEnrollment: a new link for a user who has
// neither a password nor a signing PIN yet (the first link expired, or
// was lost), replacing the open one. Audited as user_password_set (field
// enroll link): the link is how the password will be set. A user with a
// password or a PIN is KindConflict: the operator's set-password and
// set-pin replace secrets; a link is for the first ones only.
func (l *Users) IssueEnrollment(ctx context.Context, by principal.Principal, username string) (_ *ops.UserView, err error) {
	a, err := l.Begin(ctx, by, "IssueEnrollment", store.AuditUserPasswordSet, "user:"+username)
	if err != nil {
		return nil, err
	}
	defer a.End(ctx, &err)
	a.Set("enroll", "link")
	if store.ValidateUsername(username) != nil {
		return nil, act.Errorf(ops.KindInvalid, "user %.64q: not a valid username", username)
	}
	link, hash, err := l.newEnrollment(username)
	if err != nil {
		return nil, l.Fail("user "+username, err)
	}
	v, err := l.updateUser(ctx, a, username, nil, func(u *store.User) error {
		if u.PasswordHash != "" || u.PINHash != "" {
			return act.Errorf(ops.KindConflict, "user %q has a password or a signing PIN already: an enrollment link is for the first ones (set-password and set-pin replace them)", username)
		}
		if len(u.EnrollmentHash) > 0 {
			a.Result["replaced"] = "the open link"
		}
		u.EnrollmentHash, u.EnrollmentExpires = hash, link.ExpiresAt
		a.Result["enrollment_expires"] = link.ExpiresAt.Format(time.RFC3339)
		return nil
	})
	if err != nil {
		return nil, err
	}
	v.Enrollment = link
	return v, nil
}
