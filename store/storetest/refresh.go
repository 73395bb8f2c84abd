package storetest

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/signd/signd/store"
)

// testRefreshTokens: a refresh token is stored like an access token, keeps
// RotatedAt, is revoked with its family (the CodeHash every token of one
// login shares) and with its user, and carries no credential.
func testRefreshTokens(t *testing.T, s store.Store) {
	exp := time.Now().Add(24 * time.Hour).UTC().Round(0)
	rotated := exp.Add(-23 * time.Hour)
	update(t, s, func(tx store.Tx) error {
		old := newToken("rt-1", store.TokenRefresh, "family-1", exp)
		old.RotatedAt = rotated
		for _, tok := range []*store.Token{
			old,
			newToken("rt-2", store.TokenRefresh, "family-1", exp),
			newToken("at-2", store.TokenAccess, "family-1", exp),
			newToken("rt-other", store.TokenRefresh, "family-2", exp),
		} {
			if err := tx.CreateToken(tok); err != nil {
				return err
			}
		}
		return nil
	})
	view(t, s, func(tx store.Tx) error {
		got, err := tx.Token(store.Fingerprint("rt-1"))
		if err != nil {
			return err
		}
		if got.Kind != store.TokenRefresh || !got.RotatedAt.Equal(rotated) ||
			!bytes.Equal(got.CodeHash, store.Fingerprint("family-1")) || !got.ExpiresAt.Equal(exp) {
			t.Errorf("rotated refresh token = %+v, want kind refresh, rotated at %v", got, rotated)
		}
		got, err = tx.Token(store.Fingerprint("rt-2"))
		if err != nil {
			return err
		}
		if !got.RotatedAt.IsZero() {
			t.Errorf("fresh refresh token RotatedAt = %v, want zero", got.RotatedAt)
		}
		return nil
	})
	bad := map[string]func(*store.Token){
		"refresh with credential": func(x *store.Token) { x.CredentialID = "c" },
		"refresh with hashes":     func(x *store.Token) { x.Hashes = [][]byte{bytes.Repeat([]byte{1}, 32)} },
		"rotated access token":    func(x *store.Token) { x.Kind, x.RotatedAt = store.TokenAccess, rotated },
	}
	wantInvalid(t, s, bad, func(name string) *store.Token {
		return newToken("bad-"+name, store.TokenRefresh, "", exp)
	}, store.Tx.CreateToken)
	// Reuse of a rotated refresh token revokes its family at once.
	var n int
	update(t, s, func(tx store.Tx) (err error) {
		n, err = tx.DeleteTokensByCode(store.Fingerprint("family-1"))
		return err
	})
	if n != 3 {
		t.Errorf("DeleteTokensByCode(family) removed %d, want 3", n)
	}
	view(t, s, func(tx store.Tx) error {
		for _, v := range []string{"rt-1", "rt-2", "at-2"} {
			if _, err := tx.Token(store.Fingerprint(v)); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("%s after the family was revoked: %v", v, err)
			}
		}
		_, err := tx.Token(store.Fingerprint("rt-other"))
		return err
	})
	// A new password revokes the user's refresh tokens too.
	update(t, s, func(tx store.Tx) error {
		_, err := tx.RevokeUser("alice")
		return err
	})
	view(t, s, func(tx store.Tx) error {
		if _, err := tx.Token(store.Fingerprint("rt-other")); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("refresh token after RevokeUser: %v", err)
		}
		return nil
	})
	// Expired refresh tokens (rotated or not) are swept.
	past := time.Now().Add(-time.Minute)
	update(t, s, func(tx store.Tx) error {
		old := newToken("rt-expired", store.TokenRefresh, "family-3", past)
		old.RotatedAt = past.Add(-time.Minute)
		return tx.CreateToken(old)
	})
	update(t, s, func(tx store.Tx) (err error) {
		n, err = tx.DeleteExpiredTokens(time.Now())
		return err
	})
	if n != 1 {
		t.Errorf("DeleteExpiredTokens removed %d, want 1 (the expired refresh token)", n)
	}
}

// testTOTPLastStep: the last accepted TOTP step is stored with the user,
// 0 by default, and a compare-and-set in one write transaction lets
// exactly one of several concurrent writers of the same step win.
func testTOTPLastStep(t *testing.T, s store.Store) {
	u := newUser(t, "totp")
	update(t, s, func(tx store.Tx) error { return tx.CreateUser(u) })
	view(t, s, func(tx store.Tx) error {
		got, err := tx.User("totp")
		if err == nil && got.TOTPLastStep != 0 {
			t.Errorf("new user TOTPLastStep = %d, want 0", got.TOTPLastStep)
		}
		return err
	})
	const step = 58_000_000
	const writers = 8
	won := make(chan bool, writers)
	start := make(chan struct{})
	for range writers {
		go func() {
			<-start
			ok := false
			err := s.Update(context.Background(), func(tx store.Tx) error {
				ok = false
				got, err := tx.User("totp")
				if err != nil {
					return err
				}
				if got.TOTPLastStep >= step {
					return nil
				}
				got.TOTPLastStep, ok = step, true
				return tx.PutUser(got)
			})
			won <- err == nil && ok
		}()
	}
	close(start)
	wins := 0
	for range writers {
		if <-won {
			wins++
		}
	}
	if wins != 1 {
		t.Errorf("%d concurrent writers of one TOTP step won, want exactly 1", wins)
	}
	view(t, s, func(tx store.Tx) error {
		got, err := tx.User("totp")
		if err == nil && got.TOTPLastStep != step {
			t.Errorf("TOTPLastStep = %d, want %d", got.TOTPLastStep, step)
		}
		return err
	})
}
