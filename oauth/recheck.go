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

// SecretChanged is the refusal of a step whose user's password or signing
// PIN was replaced, or whose grants were revoked, after the step checked
// the secret (store.User.SecretGeneration moved): access_denied; msg is
// the log line.
func SecretChanged(msg string) *LockRefusal {
	return &LockRefusal{Errorf(CodeAccessDenied, http.StatusForbidden, "The password or signing PIN was changed meanwhile"), msg}
}

// RecheckAccount refuses, inside the step's final transaction, a user who
// is gone, disabled or whose account is locked.
func RecheckAccount(tx Tx, username string) error {
	_, err := accountNow(tx, username)
	return err
}

// RecheckLogin is RecheckAccount for a step that checked a password or
// PIN of checked, the user as the check read it (passwords.Checker's
// Login and CheckPIN return it): it also refuses when the user's secret
// generation is no longer checked's, so that a reset (set-password,
// set-pin, a revocation) that committed while the secret was hashed wins
// over what the step would issue on the old secret's strength. What the
// reset revoked did not exist yet; this refusal is what keeps it from
// being written after.
func RecheckLogin(tx Tx, checked *store.User) error {
	u, err := accountNow(tx, checked.Username)
	if err != nil {
		return err
	}
	if u.ID != checked.ID || u.SecretGeneration != checked.SecretGeneration {
		return SecretChanged("password or PIN changed meanwhile: step refused")
	}
	return nil
}

// accountNow reads username in tx and refuses one who is gone, disabled
// or whose account is locked.
func accountNow(tx Tx, username string) (*store.User, error) {
	u, err := tx.User(username)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, AccountLocked("account locked or disabled: step refused")
	case err != nil:
		return nil, err
	case u.Status != store.UserActive || u.PasswordLocked:
		return nil, AccountLocked("account locked or disabled: step refused")
	}
	return u, nil
}
