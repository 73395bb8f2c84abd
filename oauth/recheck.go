package oauth

import (
	"errors"
	"net/http"

	"github.com/signd/signd/store"
)

// LockRefusal is a step refused in its final write transaction: the
// account or the signing PIN was locked (or the account disabled) after
// the step's checks, while a password or PIN was being hashed.
type LockRefusal struct {
	Err *Error // the answer
	Msg string // the log message
}

func (r *LockRefusal) Error() string { return r.Msg }

// AccountLocked is the refusal of a step whose account was locked or
// disabled meanwhile (access_denied); msg is the log line.
func AccountLocked(msg string) *LockRefusal {
	return &LockRefusal{Errorf(CodeAccessDenied, http.StatusForbidden, "The account is locked or disabled"), msg}
}

// RecheckAccount refuses, inside the step's final transaction, a user who
// is gone, disabled or whose account is locked.
func RecheckAccount(tx Tx, username string) error {
	u, err := tx.User(username)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return AccountLocked("account locked or disabled: step refused")
	case err != nil:
		return err
	case u.Status != store.UserActive || u.PasswordLocked:
		return AccountLocked("account locked or disabled: step refused")
	}
	return nil
}
