package store

import (
	"bytes"
	"fmt"
	"time"
)

// The rules of Tx's record writes that go beyond a record's own Validate
// and hold in every backend. A backend checks existence and the owner of a
// credential against its own data, then applies these.

// CheckNewUser is Tx.CreateUser's rule: a new user has no proofs yet
// (PutProof adds them).
func CheckNewUser(u *User) error {
	if len(u.Proofs) != 0 {
		return fmt.Errorf("%w: user %q: proofs are added with PutProof, not CreateUser", ErrInvalid, u.Username)
	}
	return nil
}

// ReplaceUser is Tx.PutUser's rule for u replacing old: the user ID cannot
// change; u keeps old's creation time and proofs and is updated at now;
// its SecretGeneration is old's, raised by one when the password or PIN
// hash changes.
func ReplaceUser(old, u *User, now time.Time) error {
	if old.ID != u.ID {
		return fmt.Errorf("%w: user %q: the user ID cannot change", ErrInvalid, u.Username)
	}
	u.CreatedAt, u.UpdatedAt = old.CreatedAt, now
	u.Proofs = old.Proofs
	u.SecretGeneration = old.SecretGeneration
	if u.PasswordHash != old.PasswordHash || u.PINHash != old.PINHash {
		u.SecretGeneration++
	}
	return nil
}

// CheckCredentialChange is Tx.PutCredential's rule for c replacing old: the
// key ID and the algorithm (with its key size) cannot change.
func CheckCredentialChange(old, c *Credential) error {
	switch {
	case !bytes.Equal(old.KeyID, c.KeyID):
		return fmt.Errorf("%w: credential %q: the key ID cannot change", ErrInvalid, c.ID)
	case old.Algorithm != c.Algorithm || old.KeyBits != c.KeyBits:
		return fmt.Errorf("%w: credential %q: the algorithm cannot change", ErrInvalid, c.ID)
	}
	return nil
}
