package admin

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/signd/signd/admin/input"
	"github.com/signd/signd/admin/ops"
	"github.com/signd/signd/store"
)

// userView is what operators see of u now: a timed password lock that has
// ended is no lock.
func (l *Local) userView(u *store.User) *UserView {
	v := &UserView{
		Username: u.Username, ID: u.ID, Status: string(u.Status),
		Email: u.Email, EmailVerified: u.EmailVerified,
		HasPIN: u.PINHash != "", HasTOTP: u.TOTPSecret != "",
		PasswordLocked: u.PasswordLocked, FailedPasswords: u.FailedPasswords,
		PINLocked: u.PINLocked, FailedPINs: u.FailedPINs,
		Claims: u.Claims, CreatedAt: u.CreatedAt, UpdatedAt: u.UpdatedAt,
	}
	if until := u.PasswordLockedUntil; !u.PasswordLocked && l.now().Before(until) {
		v.PasswordLocked, v.LockedUntil = true, &until
	}
	for _, p := range u.Proofs {
		v.Proofs = append(v.Proofs, p.ID)
	}
	if len(u.EnrollmentHash) > 0 {
		exp := u.EnrollmentExpires
		v.EnrollmentExpires = &exp
	}
	return v
}

// AddUser implements Service.
func (l *Local) AddUser(ctx context.Context, by Principal, req AddUserRequest) (_ *UserView, err error) {
	a, err := l.begin(ctx, by, "AddUser", store.AuditUserAdded, "user:"+req.Username)
	if err != nil {
		return nil, err
	}
	if req.PIN != "" {
		// The signing PIN is the security officer's (SetPIN): an
		// administrator alone creates the user without one.
		if err := l.allow(ctx, by, "SetPIN"); err != nil {
			return nil, err
		}
	}
	defer a.end(ctx, &err)
	a.user = req.Username
	if req.Enroll {
		a.set("enroll", "link")
	} else {
		a.set("password", "set")
	}
	if req.PIN != "" {
		a.set("pin", "set")
	}
	if req.Email != "" {
		a.set("email", req.Email)
		a.set("email_verified", strconv.FormatBool(req.EmailVerified))
	}
	if len(req.Claims) > 0 {
		// The claim names; their values are personal data, kept in the
		// user record.
		a.set("claims", strings.Join(slices.Sorted(maps.Keys(req.Claims)), ","))
	}
	if req.Enroll && (req.Password != "" || req.PIN != "") {
		return nil, errorf(KindInvalid, "enroll: the user sets the password and PIN through the enrollment link; give neither")
	}
	if !req.Enroll {
		if err := ops.CheckSecretLen("password", req.Password, input.MinPasswordLen, input.MaxPasswordLen); err != nil {
			return nil, err
		}
	}
	if req.PIN != "" {
		if err := ops.CheckSecretLen("PIN", req.PIN, input.MinPINLen, input.MaxPINLen); err != nil {
			return nil, err
		}
	}
	if err := ops.CheckEmail(req.Email); err != nil {
		return nil, err
	}
	if req.EmailVerified && req.Email == "" {
		return nil, errorf(KindInvalid, "--email-verified needs --email")
	}
	if err := ops.CheckClaims(req.Claims); err != nil {
		return nil, err
	}
	id, err := store.NewID()
	if err != nil {
		return nil, l.fail("user "+req.Username, err)
	}
	u := &store.User{
		ID: id, Username: req.Username, Status: store.UserActive,
		Email: req.Email, EmailVerified: req.EmailVerified, Claims: req.Claims,
	}
	var link *EnrollmentView
	if req.Enroll {
		// No password and no PIN: password login is impossible until the
		// user sets them through the link.
		if link, u.EnrollmentHash, err = l.newEnrollment(req.Username); err != nil {
			return nil, l.fail("user "+req.Username, err)
		}
		u.EnrollmentExpires = link.ExpiresAt
		a.result["enrollment_expires"] = link.ExpiresAt.Format(time.RFC3339)
	} else if u.PasswordHash, err = l.Hasher.Hash([]byte(req.Password)); err != nil {
		return nil, l.fail("user "+req.Username, err)
	}
	if req.PIN != "" {
		if u.PINHash, err = l.Hasher.Hash([]byte(req.PIN)); err != nil {
			return nil, l.fail("user "+req.Username, err)
		}
	}
	err = a.update(ctx, func(tx store.Tx) error {
		if err := tx.CreateUser(u); err != nil {
			return err
		}
		u, err = tx.User(req.Username)
		return err
	})
	if err != nil {
		return nil, l.fail(fmt.Sprintf("user %q", req.Username), err)
	}
	v := l.userView(u)
	v.Enrollment = link
	return v, nil
}

// ListUsers implements Service.
func (l *Local) ListUsers(ctx context.Context, by Principal) (_ []UserView, err error) {
	a, err := l.read(ctx, by, "ListUsers", "users", nil)
	if err != nil {
		return nil, err
	}
	defer a.end(ctx, &err)
	if err := a.grant(ctx); err != nil {
		return nil, err
	}
	var users []store.User
	err = l.Store.View(ctx, func(tx store.Tx) (err error) {
		users, err = tx.Users()
		return err
	})
	if err != nil {
		return nil, l.fail("list users", err)
	}
	out := make([]UserView, 0, len(users))
	for i := range users {
		out = append(out, *l.userView(&users[i]))
	}
	return out, nil
}

// ShowUser implements Service.
func (l *Local) ShowUser(ctx context.Context, by Principal, username string) (_ *UserView, err error) {
	a, err := l.read(ctx, by, "ShowUser", "user:"+username, nil)
	if err != nil {
		return nil, err
	}
	defer a.end(ctx, &err)
	a.user = username
	if err := a.grant(ctx); err != nil {
		return nil, err
	}
	return l.user(ctx, username)
}

// user reads one user as operators see it.
func (l *Local) user(ctx context.Context, username string) (*UserView, error) {
	var u *store.User
	err := l.Store.View(ctx, func(tx store.Tx) (err error) {
		u, err = tx.User(username)
		return err
	})
	if err != nil {
		return nil, l.fail(fmt.Sprintf("user %q", username), err)
	}
	return l.userView(u), nil
}

// revoker revokes what hangs on a user, in the transaction of the action
// that calls for it: store.Tx.RevokeUser or store.Tx.RevokeUserSigning.
type revoker func(tx store.Tx, username string) (store.Revoked, error)

// updateUser runs fn on the user inside one write transaction, and revoke
// (when not nil) in the same one, with the audit entry of a; the entry's
// result counts what was revoked.
func (l *Local) updateUser(ctx context.Context, a *act, username string, revoke revoker, fn func(u *store.User) error) (*UserView, error) {
	a.user = username
	var u *store.User
	var r store.Revoked
	err := a.update(ctx, func(tx store.Tx) (err error) {
		if u, err = tx.User(username); err != nil {
			return err
		}
		if err := fn(u); err != nil {
			return err
		}
		if err := tx.PutUser(u); err != nil {
			return err
		}
		if revoke != nil {
			if r, err = revoke(tx, username); err != nil {
				return err
			}
			a.result["revoked"] = ops.RevokedViewOf(r).String()
		}
		u, err = tx.User(username)
		return err
	})
	if err != nil {
		return nil, l.fail(fmt.Sprintf("user %q", username), err)
	}
	v := l.userView(u)
	if revoke != nil {
		v.Revoked = ops.RevokedViewOf(r)
	}
	return v, nil
}

// SetUserStatus implements Service. Disabling revokes everything of the
// user.
func (l *Local) SetUserStatus(ctx context.Context, by Principal, username string, enabled bool) (_ *UserView, err error) {
	kind := store.AuditUserDisabled
	if enabled {
		kind = store.AuditUserEnabled
	}
	a, err := l.begin(ctx, by, "SetUserStatus", kind, "user:"+username)
	if err != nil {
		return nil, err
	}
	if err := l.hold(ctx, by, "SetUserStatus", StatusRequest{Name: username, Enabled: enabled}); err != nil {
		return nil, err
	}
	defer a.end(ctx, &err)
	if enabled {
		a.set("status", string(store.UserActive))
		return l.updateUser(ctx, a, username, nil, func(u *store.User) error {
			u.Status = store.UserActive
			return nil
		})
	}
	a.set("status", string(store.UserDisabled))
	return l.updateUser(ctx, a, username, store.Tx.RevokeUser, func(u *store.User) error {
		u.Status = store.UserDisabled
		return nil
	})
}

// UnlockUser implements Service: it clears the password lockout (a timed
// lock and the permanent one, and the count of timed locks before) and
// both counters.
func (l *Local) UnlockUser(ctx context.Context, by Principal, username string) (_ *UserView, err error) {
	a, err := l.begin(ctx, by, "UnlockUser", store.AuditUserUnlocked, "user:"+username)
	if err != nil {
		return nil, err
	}
	if err := l.hold(ctx, by, "UnlockUser", NameRequest{Name: username}); err != nil {
		return nil, err
	}
	defer a.end(ctx, &err)
	a.set("lock", "password")
	return l.updateUser(ctx, a, username, nil, func(u *store.User) error {
		// What was cleared: the lock state and failure count before.
		a.result["password_locked"] = strconv.FormatBool(u.PasswordLocked || l.now().Before(u.PasswordLockedUntil))
		a.result["failed_passwords"] = strconv.Itoa(u.FailedPasswords)
		clearPasswordLock(u)
		return nil
	})
}

// UnlockPIN implements Service: it clears the signing PIN's lockout and
// the count of failed PINs.
func (l *Local) UnlockPIN(ctx context.Context, by Principal, username string) (_ *UserView, err error) {
	a, err := l.begin(ctx, by, "UnlockPIN", store.AuditUserUnlocked, "user:"+username)
	if err != nil {
		return nil, err
	}
	if err := l.hold(ctx, by, "UnlockPIN", NameRequest{Name: username}); err != nil {
		return nil, err
	}
	defer a.end(ctx, &err)
	a.set("lock", "pin")
	return l.updateUser(ctx, a, username, nil, func(u *store.User) error {
		// What was cleared: the lock state and failure count before.
		a.result["pin_locked"] = strconv.FormatBool(u.PINLocked)
		a.result["failed_pins"] = strconv.Itoa(u.FailedPINs)
		u.PINLocked, u.FailedPINs = false, 0
		return nil
	})
}

// clearPasswordLock lifts every password lock of u and forgets the
// failures and the timed locks before it.
func clearPasswordLock(u *store.User) {
	u.PasswordLocked, u.PasswordLockedUntil, u.PasswordLockouts, u.FailedPasswords = false, time.Time{}, 0, 0
}

// SetPassword implements Service; it also clears the password lockout and
// revokes everything of the user (whoever knew the old password is out).
func (l *Local) SetPassword(ctx context.Context, by Principal, req SetSecretRequest) (_ *UserView, err error) {
	a, err := l.begin(ctx, by, "SetPassword", store.AuditUserPasswordSet, "user:"+req.Username)
	if err != nil {
		return nil, err
	}
	defer a.end(ctx, &err)
	a.user = req.Username
	a.set("password", "changed")
	if err := ops.CheckSecretLen("password", req.Secret, input.MinPasswordLen, input.MaxPasswordLen); err != nil {
		return nil, err
	}
	h, err := l.Hasher.Hash([]byte(req.Secret))
	if err != nil {
		return nil, l.fail("set password", err)
	}
	return l.updateUser(ctx, a, req.Username, store.Tx.RevokeUser, func(u *store.User) error {
		u.PasswordHash = h
		clearPasswordLock(u)
		closeEnrollment(a, u)
		return nil
	})
}

// SetPIN implements Service; it also clears the PIN lockout and revokes
// what the old PIN approved or is about to approve: the user's SADs and
// credential-bound codes and pending requests.
func (l *Local) SetPIN(ctx context.Context, by Principal, req SetSecretRequest) (_ *UserView, err error) {
	a, err := l.begin(ctx, by, "SetPIN", store.AuditUserPINSet, "user:"+req.Username)
	if err != nil {
		return nil, err
	}
	defer a.end(ctx, &err)
	a.user = req.Username
	a.set("pin", "changed")
	if err := ops.CheckSecretLen("PIN", req.Secret, input.MinPINLen, input.MaxPINLen); err != nil {
		return nil, err
	}
	h, err := l.Hasher.Hash([]byte(req.Secret))
	if err != nil {
		return nil, l.fail("set PIN", err)
	}
	return l.updateUser(ctx, a, req.Username, store.Tx.RevokeUserSigning, func(u *store.User) error {
		u.PINHash, u.PINLocked, u.FailedPINs = h, false, 0
		closeEnrollment(a, u)
		return nil
	})
}
