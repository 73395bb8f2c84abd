package oauth

import (
	"context"
	"errors"
)

// PINResult is the outcome of Server.CheckSigningPIN.
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
)

// CheckSigningPIN checks the signing PIN of username for a signing API that
// asks for it itself (CSC v1 §11.6 credentials/authorize), with the same
// reservation, counter and lock as the consent page (see reserve): however
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
// a lock set by a parallel guess after this one was reserved wins.
func (s *Server) CheckSigningPIN(ctx context.Context, username, pin, otp string) (PINResult, error) {
	res, _, err := s.verifyPIN(ctx, username, pin, &otp)
	if errors.Is(err, errBusy) {
		return PINBusy, nil
	}
	return res, err
}
