package users

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/signd/signd/admin/act"
	"github.com/signd/signd/admin/input"
	"github.com/signd/signd/admin/ops"
	"github.com/signd/signd/admin/principal"
	"github.com/signd/signd/store"
)

// Users performs the operations on users: their records, secrets and
// locks (users.go), TOTP (totp.go), enrollment links (enroll.go), proof
// documents (proof.go) and their removal (revoke.go).
type Users struct {
	*act.Core
	Hasher *store.Hasher
	// EnrollBaseURL is server.base_url, which the enrollment links of
	// AddUser start with (enroll.go); "": AddUser with Enroll answers
	// KindUnavailable. EnrollmentTTL is how long a link stays open
	// (admin.enrollment_ttl); 0 = DefaultEnrollmentTTL.
	EnrollBaseURL string
	EnrollmentTTL time.Duration
}

// userView is what operators see of u now: a timed password lock that has
// ended is no lock.
func (l *Users) userView(u *store.User) *ops.UserView {
	v := &ops.UserView{
		Username: u.Username, ID: u.ID, Status: string(u.Status),
		Email: u.Email, EmailVerified: u.EmailVerified,
		HasPIN: u.PINHash != "", HasTOTP: u.TOTPSecret != "",
		PasswordLocked: u.PasswordLocked, FailedPasswords: u.FailedPasswords,
		PINLocked: u.PINLocked, FailedPINs: u.FailedPINs,
		Claims: u.Claims, CreatedAt: u.CreatedAt, UpdatedAt: u.UpdatedAt,
	}
	if until := u.PasswordLockedUntil; !u.PasswordLocked && l.Clock().Before(until) {
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

// AddUser performs Service.AddUser. Its phases: the request recorded and
// checked (checkAddUser), the record made with its secrets hashed or its
// enrollment link (newUser), the record and its entry written in one
// transaction.
func (l *Users) AddUser(ctx context.Context, by principal.Principal, req ops.AddUserRequest) (_ *ops.UserView, err error) {
	a, err := l.Begin(ctx, by, "AddUser", store.AuditUserAdded, "user:"+req.Username)
	if err != nil {
		return nil, err
	}
	if req.PIN != "" {
		// The signing PIN is the security officer's (SetPIN): an
		// administrator alone creates the user without one.
		if err := l.Allow(ctx, by, "SetPIN"); err != nil {
			return nil, err
		}
	}
	defer a.End(ctx, &err)
	if err := checkAddUser(a, req); err != nil {
		return nil, err
	}
	u, link, err := l.newUser(a, req)
	if err != nil {
		return nil, err
	}
	err = a.Update(ctx, func(tx store.Tx) error {
		if err := tx.CreateUser(u); err != nil {
			return err
		}
		u, err = tx.User(req.Username)
		return err
	})
	if err != nil {
		return nil, l.Fail(fmt.Sprintf("user %q", req.Username), err)
	}
	v := l.userView(u)
	v.Enrollment = link
	return v, nil
}

// checkAddUser records on a what AddUser was asked (never a secret: that
// a password or PIN is set, the claims' names) and checks it.
func checkAddUser(a *act.Act, req ops.AddUserRequest) error {
	a.User = req.Username
	if req.Enroll {
		a.Set("enroll", "link")
	} else {
		a.Set("password", "set")
	}
	if req.PIN != "" {
		a.Set("pin", "set")
	}
	if req.Email != "" {
		a.Set("email", req.Email)
		a.Set("email_verified", strconv.FormatBool(req.EmailVerified))
	}
	if len(req.Claims) > 0 {
		// The claim names; their values are personal data, kept in the
		// user record.
		a.Set("claims", strings.Join(slices.Sorted(maps.Keys(req.Claims)), ","))
	}
	if req.Enroll && (req.Password != "" || req.PIN != "") {
		return act.Errorf(ops.KindInvalid, "enroll: the user sets the password and PIN through the enrollment link; give neither")
	}
	if !req.Enroll {
		if err := ops.CheckSecretLen("password", req.Password, input.MinPasswordLen, input.MaxPasswordLen); err != nil {
			return err
		}
	}
	if req.PIN != "" {
		if err := ops.CheckSecretLen("PIN", req.PIN, input.MinPINLen, input.MaxPINLen); err != nil {
			return err
		}
	}
	if err := ops.CheckEmail(req.Email); err != nil {
		return err
	}
	if req.EmailVerified && req.Email == "" {
		return act.Errorf(ops.KindInvalid, "--email-verified needs --email")
	}
	return ops.CheckClaims(req.Claims)
}

// newUser makes the record AddUser stores: a new ID, the password's hash
// or, with req.Enroll, an enrollment link (its expiry recorded on a), and
// the PIN's hash.
func (l *Users) newUser(a *act.Act, req ops.AddUserRequest) (u *store.User, link *ops.EnrollmentView, err error) {
	id, err := store.NewID()
	if err != nil {
		return nil, nil, l.Fail("user "+req.Username, err)
	}
	u = &store.User{
		ID: id, Username: req.Username, Status: store.UserActive,
		Email: req.Email, EmailVerified: req.EmailVerified, Claims: req.Claims,
	}
	if req.Enroll {
		// No password and no PIN: password login is impossible until the
		// user sets them through the link.
		if link, u.EnrollmentHash, err = l.newEnrollment(req.Username); err != nil {
			return nil, nil, l.Fail("user "+req.Username, err)
		}
		u.EnrollmentExpires = link.ExpiresAt
		a.Result["enrollment_expires"] = link.ExpiresAt.Format(time.RFC3339)
	} else if u.PasswordHash, err = l.Hasher.Hash([]byte(req.Password)); err != nil {
		return nil, nil, l.Fail("user "+req.Username, err)
	}
	if req.PIN != "" {
		if u.PINHash, err = l.Hasher.Hash([]byte(req.PIN)); err != nil {
			return nil, nil, l.Fail("user "+req.Username, err)
		}
	}
	return u, link, nil
}

// ListUsers performs Service.ListUsers.
func (l *Users) ListUsers(ctx context.Context, by principal.Principal) (_ []ops.UserView, err error) {
	a, err := l.Read(ctx, by, "ListUsers", "users", nil)
	if err != nil {
		return nil, err
	}
	defer a.End(ctx, &err)
	if err := a.Grant(ctx); err != nil {
		return nil, err
	}
	var users []store.User
	err = l.Store.View(ctx, func(tx store.Tx) (err error) {
		users, err = tx.Users()
		return err
	})
	if err != nil {
		return nil, l.Fail("list users", err)
	}
	out := make([]ops.UserView, 0, len(users))
	for i := range users {
		out = append(out, *l.userView(&users[i]))
	}
	return out, nil
}

// ShowUser performs Service.ShowUser.
func (l *Users) ShowUser(ctx context.Context, by principal.Principal, username string) (_ *ops.UserView, err error) {
	a, err := l.Read(ctx, by, "ShowUser", "user:"+username, nil)
	if err != nil {
		return nil, err
	}
	defer a.End(ctx, &err)
	a.User = username
	if err := a.Grant(ctx); err != nil {
		return nil, err
	}
	return l.User(ctx, username)
}

// User reads one user as operators see it.
func (l *Users) User(ctx context.Context, username string) (*ops.UserView, error) {
	var u *store.User
	err := l.Store.View(ctx, func(tx store.Tx) (err error) {
		u, err = tx.User(username)
		return err
	})
	if err != nil {
		return nil, l.Fail(fmt.Sprintf("user %q", username), err)
	}
	return l.userView(u), nil
}

// revoker revokes what hangs on a user, in the transaction of the action
// that calls for it: store.Tx.RevokeUser or store.Tx.RevokeUserSigning.
type revoker func(tx store.Tx, username string) (store.Revoked, error)

// updateUser runs fn on the user inside one write transaction, and revoke
// (when not nil) in the same one, with the audit entry of a; the entry's
// result counts what was revoked.
func (l *Users) updateUser(ctx context.Context, a *act.Act, username string, revoke revoker, fn func(u *store.User) error) (*ops.UserView, error) {
	a.User = username
	var u *store.User
	var r store.Revoked
	err := a.Update(ctx, func(tx store.Tx) (err error) {
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
			a.Result["revoked"] = ops.RevokedViewOf(r).String()
		}
		u, err = tx.User(username)
		return err
	})
	if err != nil {
		return nil, l.Fail(fmt.Sprintf("user %q", username), err)
	}
	v := l.userView(u)
	if revoke != nil {
		v.Revoked = ops.RevokedViewOf(r)
	}
	return v, nil
}

// SetUserStatus performs Service.SetUserStatus. Disabling revokes everything of the
// user.
func (l *Users) SetUserStatus(ctx context.Context, by principal.Principal, username string, enabled bool) (_ *ops.UserView, err error) {
	kind := store.AuditUserDisabled
	if enabled {
		kind = store.AuditUserEnabled
	}
	a, err := l.Begin(ctx, by, "SetUserStatus", kind, "user:"+username)
	if err != nil {
		return nil, err
	}
	if err := l.Hold(ctx, by, "SetUserStatus", ops.StatusRequest{Name: username, Enabled: enabled}); err != nil {
		return nil, err
	}
	defer a.End(ctx, &err)
	if enabled {
		a.Set("status", string(store.UserActive))
		return l.updateUser(ctx, a, username, nil, func(u *store.User) error {
			u.Status = store.UserActive
			return nil
		})
	}
	a.Set("status", string(store.UserDisabled))
	return l.updateUser(ctx, a, username, store.Tx.RevokeUser, func(u *store.User) error {
		u.Status = store.UserDisabled
		return nil
	})
}

// UnlockUser performs Service.UnlockUser: it clears the password lockout (a timed
// lock and the permanent one, and the count of timed locks before) and
// both counters.
func (l *Users) UnlockUser(ctx context.Context, by principal.Principal, username string) (_ *ops.UserView, err error) {
	a, err := l.Begin(ctx, by, "UnlockUser", store.AuditUserUnlocked, "user:"+username)
	if err != nil {
		return nil, err
	}
	if err := l.Hold(ctx, by, "UnlockUser", ops.NameRequest{Name: username}); err != nil {
		return nil, err
	}
	defer a.End(ctx, &err)
	a.Set("lock", "password")
	return l.updateUser(ctx, a, username, nil, func(u *store.User) error {
		// What was cleared: the lock state and failure count before.
		a.Result["password_locked"] = strconv.FormatBool(u.PasswordLocked || l.Clock().Before(u.PasswordLockedUntil))
		a.Result["failed_passwords"] = strconv.Itoa(u.FailedPasswords)
		clearPasswordLock(u)
		return nil
	})
}

// UnlockPIN performs Service.UnlockPIN: it clears the signing PIN's lockout and
// the count of failed PINs.
func (l *Users) UnlockPIN(ctx context.Context, by principal.Principal, username string) (_ *ops.UserView, err error) {
	a, err := l.Begin(ctx, by, "UnlockPIN", store.AuditUserUnlocked, "user:"+username)
	if err != nil {
		return nil, err
	}
	if err := l.Hold(ctx, by, "UnlockPIN", ops.NameRequest{Name: username}); err != nil {
		return nil, err
	}
	defer a.End(ctx, &err)
	a.Set("lock", "pin")
	return l.updateUser(ctx, a, username, nil, func(u *store.User) error {
		// What was cleared: the lock state and failure count before.
		a.Result["pin_locked"] = strconv.FormatBool(u.PINLocked)
		a.Result["failed_pins"] = strconv.Itoa(u.FailedPINs)
		u.PINLocked, u.FailedPINs = false, 0
		return nil
	})
}

// clearPasswordLock lifts every password lock of u and forgets the
// failures and the timed locks before it.
func clearPasswordLock(u *store.User) {
	u.PasswordLocked, u.PasswordLockedUntil, u.PasswordLockouts, u.FailedPasswords = false, time.Time{}, 0, 0
}

// SetPassword performs Service.SetPassword; it also clears the password lockout and
// revokes everything of the user (whoever knew the old password is out).
func (l *Users) SetPassword(ctx context.Context, by principal.Principal, req ops.SetSecretRequest) (_ *ops.UserView, err error) {
	a, err := l.Begin(ctx, by, "SetPassword", store.AuditUserPasswordSet, "user:"+req.Username)
	if err != nil {
		return nil, err
	}
	defer a.End(ctx, &err)
	a.User = req.Username
	a.Set("password", "changed")
	if err := ops.CheckSecretLen("password", req.Secret, input.MinPasswordLen, input.MaxPasswordLen); err != nil {
		return nil, err
	}
	h, err := l.Hasher.Hash([]byte(req.Secret))
	if err != nil {
		return nil, l.Fail("set password", err)
	}
	return l.updateUser(ctx, a, req.Username, store.Tx.RevokeUser, func(u *store.User) error {
		u.PasswordHash = h
		clearPasswordLock(u)
		closeEnrollment(a, u)
		return nil
	})
}

// SetPIN performs Service.SetPIN; it also clears the PIN lockout and revokes
// what the old PIN approved or is about to approve: the user's SADs and
// credential-bound codes and pending requests.
func (l *Users) SetPIN(ctx context.Context, by principal.Principal, req ops.SetSecretRequest) (_ *ops.UserView, err error) {
	a, err := l.Begin(ctx, by, "SetPIN", store.AuditUserPINSet, "user:"+req.Username)
	if err != nil {
		return nil, err
	}
	defer a.End(ctx, &err)
	a.User = req.Username
	a.Set("pin", "changed")
	if err := ops.CheckSecretLen("PIN", req.Secret, input.MinPINLen, input.MaxPINLen); err != nil {
		return nil, err
	}
	h, err := l.Hasher.Hash([]byte(req.Secret))
	if err != nil {
		return nil, l.Fail("set PIN", err)
	}
	return l.updateUser(ctx, a, req.Username, store.Tx.RevokeUserSigning, func(u *store.User) error {
		u.PINHash, u.PINLocked, u.FailedPINs = h, false, 0
		closeEnrollment(a, u)
		return nil
	})
}
