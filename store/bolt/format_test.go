package bolt_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/signd/signd/store"
	"github.com/signd/signd/store/bolt"
	"github.com/signd/signd/store/bolt/bolttest"
)

// TestOpensFileWithJSONTokens opens testdata/schema2-json-tokens.db, a
// file written by the build before token records had a binary form (schema
// 2, every record JSON; the records of writeRevocable plus an access token
// with a code, scopes and a consent record and an expired SAD, store clock
// 2026-11-23 12:00 UTC). Every JSON token reads back field for field and
// goes with all its index entries through each way a token goes; new
// tokens are written in the binary form beside the old ones and the file
// checks clean.
func TestOpensFileWithJSONTokens(t *testing.T) {
	ctx := context.Background()
	data, err := os.ReadFile(filepath.Join("testdata", "schema2-json-tokens.db"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "signd.db")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if v := bolttest.SchemaVersion(t, path); v != "2" {
		t.Fatalf("test file has schema %q, want 2", v)
	}
	if got := rawTokenFormats(t, path); !bytes.Equal(got, bytes.Repeat([]byte{'{'}, 5)) {
		t.Fatalf("test file's token records start with %q, want 5 JSON records", got)
	}
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	db := mustOpenAt(t, path, now)
	digest := make([]byte, 32)
	digest[0] = 0xd1
	err = db.Update(ctx, func(tx store.Tx) error {
		tok, err := tx.Token(store.Fingerprint("at-code"))
		if err != nil {
			return err
		}
		want := store.Token{Hash: store.Fingerprint("at-code"), Kind: store.TokenAccess, ClientID: "rp", Username: "alice",
			Scopes: []string{"openid", "email"}, CodeHash: store.Fingerprint("code-redeemed"), AuthTime: now.Add(-time.Minute),
			RequestedAt: now.Add(-2 * time.Minute), Consented: store.ConsentRecord{"email": digest}, ExpiresAt: now.Add(time.Hour), CreatedAt: now}
		if !sameToken(tok, &want) {
			t.Errorf("JSON access token reads %+v, want %+v", tok, &want)
		}
		sad, err := tx.Token(store.Fingerprint("sad-alice"))
		if err != nil {
			return err
		}
		if sad.Kind != store.TokenSAD || sad.CredentialID != "c1" || len(sad.Hashes) != 1 || len(sad.Hashes[0]) != 32 {
			t.Errorf("JSON SAD reads %+v", sad)
		}
		// Code reuse: the code's tokens go through the code index.
		if n, err := tx.DeleteTokensByCode(store.Fingerprint("code-redeemed")); err != nil || n != 1 {
			t.Errorf("DeleteTokensByCode = %d, %v; want 1", n, err)
		}
		// Revocation through the party index.
		if r, err := tx.RevokeCredential("c1"); err != nil || r.SADs != 1 {
			t.Errorf("RevokeCredential = %+v, %v; want 1 SAD", r, err)
		}
		// The sweeper through the expiry index.
		if n, err := tx.DeleteExpiredTokens(now); err != nil || n != 1 {
			t.Errorf("DeleteExpiredTokens = %d, %v; want 1", n, err)
		}
		// A new token beside the old ones.
		return tx.CreateToken(&store.Token{Hash: store.Fingerprint("at-new"), Kind: store.TokenAccess, ClientID: "rp",
			Username: "alice", Scopes: []string{"service"}, ExpiresAt: now.Add(time.Hour)})
	})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := db.Check(ctx)
	if err != nil || !rep.OK {
		t.Fatalf("Check: %+v, %v", rep, err)
	}
	err = db.Update(ctx, func(tx store.Tx) error {
		for _, h := range []string{"at-alice", "at-new"} { // one JSON, one binary
			if _, err := tx.Token(store.Fingerprint(h)); err != nil {
				t.Errorf("token %s: %v", h, err)
			}
		}
		if r, err := tx.RevokeUser("alice"); err != nil || r.AccessTokens != 2 {
			t.Errorf("RevokeUser = %+v, %v; want 2 access tokens", r, err)
		}
		if r, err := tx.RevokeUser("bob"); err != nil || r.AccessTokens != 1 {
			t.Errorf("RevokeUser(bob) = %+v, %v; want 1 access token", r, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if v := bolttest.SchemaVersion(t, path); v != "3" {
		t.Errorf("schema after Open %q, want 3", v)
	}
	// Every token went with every index entry it had.
	if keys := rawKeys(t, path, []string{"tokens", "tokens_by_party", "tokens_by_code", "tokens_by_expiry"}); len(keys) != 0 {
		t.Errorf("left behind: %v", keys)
	}
}

func mustOpenAt(t *testing.T, path string, now time.Time) *bolt.DB {
	t.Helper()
	db, err := bolt.Open(path, bolt.Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// rawTokenFormats returns the first byte of every token record.
func rawTokenFormats(t *testing.T, path string) []byte {
	t.Helper()
	raw, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var out []byte
	err = raw.View(func(tx *bbolt.Tx) error {
		return tx.Bucket([]byte("tokens")).ForEach(func(_, v []byte) error {
			out = append(out, v[0])
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// sameToken compares tokens field by field, times by instant.
func sameToken(a, b *store.Token) bool {
	eqTime := func(x, y time.Time) bool { return x.Equal(y) }
	eqBytes := func(x, y [][]byte) bool {
		if len(x) != len(y) {
			return false
		}
		for i := range x {
			if !bytes.Equal(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	eqConsent := func(x, y store.ConsentRecord) bool {
		if len(x) != len(y) {
			return false
		}
		for k, v := range x {
			if !y.Equal(k, v) {
				return false
			}
		}
		return true
	}
	return bytes.Equal(a.Hash, b.Hash) && a.Kind == b.Kind && a.ClientID == b.ClientID && a.Username == b.Username &&
		slices.Equal(a.Scopes, b.Scopes) && bytes.Equal(a.CodeHash, b.CodeHash) && a.CredentialID == b.CredentialID &&
		eqBytes(a.Hashes, b.Hashes) && eqTime(a.AuthTime, b.AuthTime) && eqTime(a.RequestedAt, b.RequestedAt) &&
		eqConsent(a.Consented, b.Consented) && eqTime(a.ExpiresAt, b.ExpiresAt) && eqTime(a.CreatedAt, b.CreatedAt)
}
