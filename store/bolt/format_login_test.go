package bolt_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/signd/signd/store"
	"github.com/signd/signd/store/bolt/bolttest"
)

// TestRefreshAndTOTPFormat: the rotation time of a refresh token is the
// JSON member "rotated_at" and the last accepted TOTP step "totp_last_step";
// records written before the members existed (a file of an older signd)
// read back as not rotated and no step accepted.
func TestRefreshAndTOTPFormat(t *testing.T) {
	ctx := context.Background()
	now := time.Now().UTC().Round(0)
	hash, _ := store.NewHasher(store.Argon2Params{Time: 1, MemoryKiB: 64, Threads: 1, KeyLen: 32, SaltLen: 16})
	pw, _ := hash.Hash([]byte("a long password"))
	path := writeFresh(t, func(tx store.Tx) error {
		id, _ := store.NewID()
		for _, u := range []*store.User{
			{ID: id, Username: "alice", Status: store.UserActive, PasswordHash: pw, TOTPSecret: "JBSWY3DPEHPK3PXP", TOTPLastStep: 58_000_001},
		} {
			if err := tx.CreateUser(u); err != nil {
				return err
			}
		}
		return tx.CreateToken(&store.Token{
			Hash: store.Fingerprint("rotated"), Kind: store.TokenRefresh, ClientID: "rp", Username: "alice",
			Scopes: []string{"service"}, CodeHash: store.Fingerprint("family"), ExpiresAt: now.Add(time.Hour), RotatedAt: now,
		})
	})

	exp := now.Add(time.Hour).Format(time.RFC3339Nano)
	oldToken := `{"kind":"refresh","client_id":"rp","username":"alice","scopes":["service"],` +
		`"auth_time":"0001-01-01T00:00:00Z","requested_at":"0001-01-01T00:00:00Z","expires_at":"` + exp + `","created_at":"` + exp + `"}`
	var storedTok, storedUser []byte
	bolttest.Update(t, path, func(btx *bbolt.Tx) error {
		storedTok = bytes.Clone(btx.Bucket([]byte("tokens")).Get(store.Fingerprint("rotated")))
		storedUser = bytes.Clone(btx.Bucket([]byte("users")).Get([]byte("alice")))
		return btx.Bucket([]byte("tokens")).Put(store.Fingerprint("old"), []byte(oldToken))
	})
	// Tokens are stored in the binary form (codec.go); that it carries
	// rotated_at is checked by reading the token back after the reopen
	// below and by TestTokenCodecCarriesEveryField.
	if len(storedTok) == 0 || storedTok[0] != 0x01 {
		t.Errorf("stored refresh token %x is not in the binary form", storedTok)
	}
	if !bytes.Contains(storedUser, []byte(`"totp_last_step":58000001`)) {
		t.Errorf("stored user %s lacks totp_last_step", storedUser)
	}

	db := mustReopen(t, path)
	err := db.View(ctx, func(tx store.Tx) error {
		tok, err := tx.Token(store.Fingerprint("rotated"))
		if err != nil {
			return err
		}
		if !tok.RotatedAt.Equal(now) {
			t.Errorf("RotatedAt = %v, want %v", tok.RotatedAt, now)
		}
		if tok, err = tx.Token(store.Fingerprint("old")); err != nil {
			return err
		}
		if !tok.RotatedAt.IsZero() {
			t.Errorf("a record without rotated_at reads RotatedAt %v", tok.RotatedAt)
		}
		u, err := tx.User("alice")
		if err != nil {
			return err
		}
		if u.TOTPLastStep != 58_000_001 {
			t.Errorf("TOTPLastStep = %d", u.TOTPLastStep)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestTimedLockFormat: the end of a timed password lock is the JSON member
// "password_locked_until" (RFC 3339, UTC) and the number of timed locks
// "password_lockouts"; a user record written before the members existed
// (a file of an older signd, whose only lock was the permanent one) reads
// back with its permanent lock and counter as they were, no timed lock and
// no lockouts, and is written back with neither member.
func TestTimedLockFormat(t *testing.T) {
	ctx := context.Background()
	until := time.Date(2026, 11, 27, 19, 30, 0, 7, time.UTC)
	path := writeFresh(t, func(tx store.Tx) error {
		id, _ := store.NewID()
		return tx.CreateUser(&store.User{ID: id, Username: "alice", Status: store.UserActive,
			FailedPasswords: 3, PasswordLockedUntil: until, PasswordLockouts: 2})
	})

	stamp := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC).Format(time.RFC3339Nano)
	oldUser := `{"id":"u-dave","username":"dave","status":"active","failed_passwords":5,"password_locked":true,` +
		`"failed_pins":1,"created_at":"` + stamp + `","updated_at":"` + stamp + `"}`
	var stored []byte
	bolttest.Update(t, path, func(btx *bbolt.Tx) error {
		stored = bytes.Clone(btx.Bucket([]byte("users")).Get([]byte("alice")))
		return btx.Bucket([]byte("users")).Put([]byte("dave"), []byte(oldUser))
	})
	for _, member := range []string{`"password_locked_until":"2026-11-27T19:30:00.000000007Z"`, `"password_lockouts":2`} {
		if !bytes.Contains(stored, []byte(member)) {
			t.Errorf("stored user %s lacks %s", stored, member)
		}
	}

	db := mustReopen(t, path)
	err := db.Update(ctx, func(tx store.Tx) error {
		u, err := tx.User("alice")
		if err != nil {
			return err
		}
		if !u.PasswordLockedUntil.Equal(until) || u.PasswordLockouts != 2 || u.PasswordLocked {
			t.Errorf("alice reads locked until %v, %d lockouts, permanent %v", u.PasswordLockedUntil, u.PasswordLockouts, u.PasswordLocked)
		}
		d, err := tx.User("dave")
		if err != nil {
			return err
		}
		if !d.PasswordLocked || d.FailedPasswords != 5 || !d.PasswordLockedUntil.IsZero() || d.PasswordLockouts != 0 || d.FailedPINs != 1 {
			t.Errorf("an older record reads %+v; want the permanent lock, 5 failures, no timed lock", d)
		}
		d.FailedPINs = 0
		return tx.PutUser(d)
	})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	raw, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	raw.View(func(btx *bbolt.Tx) error {
		stored = btx.Bucket([]byte("users")).Get([]byte("dave"))
		if bytes.Contains(stored, []byte("password_locked_until")) || bytes.Contains(stored, []byte("password_lockouts")) ||
			!bytes.Contains(stored, []byte(`"password_locked":true`)) {
			t.Errorf("the older record written back: %s", stored)
		}
		return nil
	})
}
