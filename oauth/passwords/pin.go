package passwords

import (
	"context"
	"errors"

	"github.com/signd/signd/store"
)

// PINResult is the outcome of a signing PIN check (CheckPIN,
// CheckSigningPIN).
type PINResult int

// Outcomes of a signing PIN check.
const (
	// PINValid: the PIN (and the second factor) is right.
	PINValid PINResult = iota + 1
	// PINInvalid: wrong; the guess is counted as a failure.
	PINInvalid
	// PINLocked: the PIN is locked (before, or by this guess), or every
	// guess left before the lock is in flight. Nothing more is evaluated.
	PINLocked
	// PINUnusable: no such user, a disabled or password-locked account,
	// or no signing PIN set. Nothing is evaluated.
	PINUnusable
	// PINBusy: no hashing slot freed up in time; nothing was counted.
	PINBusy
	// PINChanged: the PIN was replaced, or the user's grants revoked (the
	// secret generation moved), while it was checked; the guess was
	// evaluated against the old PIN and counts nothing. Answered like a
	// wrong PIN: the user tries again, with the PIN stored now.
	PINChanged
)

// CheckSigningPIN checks the signing PIN of username for a signing API that
// asks for it itself (CSC v1 §11.6 credentials/authorize): CheckPIN, with
// the same reservation, counter and lock as the consent page (see reserve): however
// many guesses arrive at once, through either, at most
// Config.MaxFailures wrong ones are evaluated between two successes.
//
// otp is the current TOTP code (RFC 6238), checked after a right PIN when
// the user has TOTP: the guess is right only when both are, a wrong pair
// counts as one failure of the PIN, and a code is accepted once (the
// login page's replay rule: its time step must be after the last one
// accepted). It is ignored for a user without TOTP.
//
// The caller's final write (the SAD) must re-check store.User.PINLocked:
// a lock set by a parallel guess after this one was reserved wins; and it
// must compare the returned generation, the user's SecretGeneration the
// check read, with the stored one: a PIN reset (or a revocation) that
// committed meanwhile wins too.
func (c *Checker) CheckSigningPIN(ctx context.Context, username, pin, otp string) (PINResult, uint64, error) {
	res, user, err := c.CheckPIN(ctx, username, pin, &otp)
	if errors.Is(err, ErrBusy) {
		return PINBusy, 0, nil
	}
	var gen uint64
	if user != nil {
		gen = user.SecretGeneration
	}
	return res, gen, err
}

// CheckPIN checks the signing PIN of username, for the consent page and
// CheckSigningPIN: the outcome and the user as the reservation read it (nil
// when unknown); what the caller issues on a PINValid must be refused in
// its write transaction when the user's SecretGeneration is no longer the
// returned user's (a PIN reset committed meanwhile). A PIN replaced while
// it was hashed is PINChanged (not counted). A failure is reserved before the PIN is hashed (see
// reserve), so no more than MaxFailures wrong PINs in a row are ever
// evaluated, however many arrive at once; reaching that locks the PIN. A
// locked PIN, or one whose remaining guesses are all in flight, is
// PINLocked without hashing. ErrBusy: no hashing slot freed up in time.
// otp, when not nil, is the user's one-time code, checked after a right
// PIN when the user (as reserved) has TOTP: the guess is right only when
// both are, counts as one failure otherwise, and a code's time step is
// accepted once (settleStep).
func (c *Checker) CheckPIN(ctx context.Context, username, pin string, otp *string) (PINResult, *store.User, error) {
	g, res, user, lockedNow, err := c.reserve(ctx, secretPIN, username)
	if err != nil {
		return 0, nil, err
	}
	defer g.release()
	switch {
	case lockedNow:
		c.observeLockout(secretPIN)
		c.log.WarnContext(ctx, "signing PIN locked after failed attempts", "username", username, "failures", c.cfg.MaxFailures)
		return PINLocked, user, nil
	case res == refusedLocked:
		c.log.WarnContext(ctx, "signing PIN locked: consent refused without checking the PIN", "username", username)
		return PINLocked, user, nil
	case res == refusedUnusable && user != nil && user.Status == store.UserActive && !user.PasswordLocked:
		return PINUnusable, user, nil // no PIN set (any more)
	case res == refusedUnusable:
		c.log.WarnContext(ctx, "account locked or disabled: consent refused", "username", username)
		return PINUnusable, user, nil
	}
	g.audit = func(tx Tx, u *store.User, s settlement) error {
		if !s.lockedNow {
			return nil // the door audits the attempt
		}
		return tx.AppendAudit(c.lockEntry(ctx, secretPIN, u))
	}
	ok, err := g.evaluate(ctx, []byte(pin))
	if err != nil {
		return 0, user, err
	}
	var locked bool
	if otp != nil && g.user.TOTPSecret != "" {
		var step int64
		if ok {
			step, ok = totpStep(*otp, g.user.TOTPSecret, c.now())
		}
		ok, locked, lockedNow, err = g.settleStep(ctx, ok, step, "")
	} else {
		locked, lockedNow, err = g.settle(ctx, ok, "")
	}
	switch {
	case err != nil:
		return 0, user, err
	case g.changed:
		c.log.InfoContext(ctx, "signing PIN refused: the PIN was changed while it was checked", "username", username)
		return PINChanged, user, nil
	case ok:
		return PINValid, user, nil
	case lockedNow:
		c.observeLockout(secretPIN)
		c.log.WarnContext(ctx, "signing PIN locked after failed attempts", "username", username, "failures", c.cfg.MaxFailures)
		return PINLocked, user, nil
	case locked:
		c.log.InfoContext(ctx, "wrong signing PIN; the PIN is locked", "username", username)
		return PINLocked, user, nil
	}
	c.log.InfoContext(ctx, "wrong signing PIN", "username", username)
	return PINInvalid, user, nil
}
