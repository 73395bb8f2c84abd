package bolt_test

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/signd/signd/store"
	"github.com/signd/signd/store/bolt"
)

// TestRefreshAndTOTPFormat: the rotation time of a refresh token is the
// JSON member "rotated_at" and the last accepted TOTP step "totp_last_step";
// records written before the members existed (a file of an older signd)
// read back as not rotated and no step accepted.
func TestRefreshAndTOTPFormat(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "signd.db")
	db, err := bolt.Open(path, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Round(0)
	hash, _ := store.NewHasher(store.Argon2Params{Time: 1, MemoryKiB: 64, Threads: 1, KeyLen: 32, SaltLen: 16})
	pw, _ := hash.Hash([]byte("a long password"))
	err = db.Update(ctx, func(tx store.Tx) error {
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
	if err != nil {
		t.Fatal(err)
	}
	db.Close()

	exp := now.Add(time.Hour).Format(time.RFC3339Nano)
	oldToken := `{"kind":"refresh","client_id":"rp","username":"alice","scopes":["service"],` +
		`"auth_time":"0001-01-01T00:00:00Z","requested_at":"0001-01-01T00:00:00Z","expires_at":"` + exp + `","created_at":"` + exp + `"}`
	raw, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var storedTok, storedUser []byte
	err = raw.Update(func(btx *bbolt.Tx) error {
		storedTok = bytes.Clone(btx.Bucket([]byte("tokens")).Get(store.Fingerprint("rotated")))
		storedUser = bytes.Clone(btx.Bucket([]byte("users")).Get([]byte("alice")))
		return btx.Bucket([]byte("tokens")).Put(store.Fingerprint("old"), []byte(oldToken))
	})
	raw.Close()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(storedTok, []byte(`"rotated_at":"`+now.Format(time.RFC3339Nano)+`"`)) {
		t.Errorf("stored refresh token %s lacks rotated_at", storedTok)
	}
	if !bytes.Contains(storedUser, []byte(`"totp_last_step":58000001`)) {
		t.Errorf("stored user %s lacks totp_last_step", storedUser)
	}

	db = mustReopen(t, path)
	err = db.View(ctx, func(tx store.Tx) error {
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
