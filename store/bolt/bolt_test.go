package bolt_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/signd/signd/store"
	"github.com/signd/signd/store/bolt"
	"github.com/signd/signd/store/bolt/bolttest"
	"github.com/signd/signd/store/storetest"
	"github.com/signd/signd/store/storetest/backends"
)

// conformance opens the suites' stores, each on a file of its own.
func conformance(t *testing.T, now func() time.Time) storetest.Full {
	return backends.Bolt(t, bolt.Options{Now: now})
}

func TestConformance(t *testing.T)      { storetest.Run(t, conformance) }
func TestConformanceClock(t *testing.T) { storetest.RunClock(t, conformance) }

func TestFileMode(t *testing.T) {
	db := backends.Bolt(t, bolt.Options{})
	fi, err := os.Stat(db.Path())
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o600 {
		t.Errorf("mode %v, want 0600", got)
	}
}

func TestOpenLocked(t *testing.T) {
	db := backends.Bolt(t, bolt.Options{})
	// bbolt takes an exclusive flock(2) on its own open file description, so
	// a second Open in the same process conflicts just as another process
	// would.
	const timeout = 200 * time.Millisecond
	start := time.Now()
	second, err := bolt.Open(db.Path(), bolt.Options{Timeout: timeout})
	elapsed := time.Since(start)
	if err == nil {
		_ = second.Close()
		t.Fatal("second Open of a held file succeeded")
	}
	if !errors.Is(err, store.ErrLocked) {
		t.Errorf("error %v does not wrap ErrLocked", err)
	}
	if !strings.Contains(err.Error(), db.Path()) {
		t.Errorf("error %q does not name %s", err, db.Path())
	}
	// Only the lower bound: it did wait. Tests never fail on slowness.
	if elapsed < timeout/2 {
		t.Errorf("second Open gave up after %v, timeout %v", elapsed, timeout)
	}
	t.Log(err)

	// Once the first holder closes, the file opens again.
	path := db.Path()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := bolt.Open(path, bolt.Options{Timeout: timeout})
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	// mustOpen's cleanup closes db a second time; bbolt allows that.
	if err := again.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestOpenMissingDirectory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "no-such-dir", "signd.db")
	db, err := bolt.Open(path, bolt.Options{})
	if err == nil {
		_ = db.Close()
		t.Fatal("Open in a missing directory succeeded")
	}
	if !strings.Contains(err.Error(), path) {
		t.Errorf("error %q does not name %s", err, path)
	}
	if _, statErr := os.Stat(filepath.Dir(path)); !os.IsNotExist(statErr) {
		t.Errorf("Open created the directory (stat: %v)", statErr)
	}
}

func TestOpenNotABoltFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "signd.db")
	if err := os.WriteFile(path, []byte(strings.Repeat("not a database ", 1000)), 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(path, bolt.Options{})
	if err == nil {
		_ = db.Close()
		t.Fatal("Open of a non-bbolt file succeeded")
	}
	if !strings.Contains(err.Error(), path) {
		t.Errorf("error %q does not name %s", err, path)
	}
}

func TestSchema(t *testing.T) {
	setVersion := func(v string) func(tx *bbolt.Tx) error {
		return func(tx *bbolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists([]byte("meta"))
			if err != nil {
				return err
			}
			return b.Put([]byte("schema_version"), []byte(v))
		}
	}
	tests := []struct {
		name        string
		prepare     func(tx *bbolt.Tx) error // nil: no file before Open
		wantErr     error                    // nil: Open succeeds
		wantInError []string
		wantVersion string // version on disk afterwards
	}{
		{name: "new file", wantVersion: "3"},
		{name: "empty bbolt file (version 0)", prepare: func(*bbolt.Tx) error { return nil }, wantVersion: "3"},
		{name: "explicit version 0", prepare: setVersion("0"), wantVersion: "3"},
		{name: "version 1 (before the party indexes)", prepare: setVersion("1"), wantVersion: "3"},
		{name: "version 2 (JSON token records)", prepare: setVersion("2"), wantVersion: "3"},
		{name: "current version", prepare: setVersion("3"), wantVersion: "3"},
		{
			name: "newer version", prepare: setVersion("99"), wantErr: store.ErrSchemaTooNew,
			wantInError: []string{"99", "up to 3", "signd.db"}, wantVersion: "99",
		},
		{
			name: "garbage version", prepare: setVersion("one"), wantErr: errors.New("any"),
			wantInError: []string{"schema version", "signd.db"}, wantVersion: "one",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "signd.db")
			if tt.prepare != nil {
				bolttest.Update(t, path, tt.prepare)
			}
			db, err := bolt.Open(path, bolt.Options{})
			switch {
			case tt.wantErr == nil && err != nil:
				t.Fatalf("Open: %v", err)
			case tt.wantErr == nil:
				// Every registered bucket exists and the store works.
				if err := db.Update(context.Background(), func(tx store.Tx) error {
					_, err := tx.Credentials("", "", 0)
					return err
				}); err != nil {
					t.Error(err)
				}
				if err := db.Close(); err != nil {
					t.Fatal(err)
				}
			case err == nil:
				_ = db.Close()
				t.Fatal("Open succeeded")
			default:
				if tt.wantErr == store.ErrSchemaTooNew && !errors.Is(err, store.ErrSchemaTooNew) {
					t.Errorf("error %v does not wrap ErrSchemaTooNew", err)
				}
				for _, s := range tt.wantInError {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not mention %q", err, s)
					}
				}
				t.Log(err)
			}
			if got := bolttest.SchemaVersion(t, path); got != tt.wantVersion {
				t.Errorf("schema_version on disk = %q, want %q", got, tt.wantVersion)
			}
		})
	}
}

func TestReopenPreservesData(t *testing.T) {
	ctx := context.Background()
	hash, err := store.HashPassword(store.Argon2Params{Time: 1, MemoryKiB: 64, Threads: 1, KeyLen: 32, SaltLen: 16}, []byte("pw"))
	if err != nil {
		t.Fatal(err)
	}
	path := writeFresh(t, func(tx store.Tx) error {
		if err := tx.CreateUser(&store.User{ID: "u1", Username: "alice", Status: store.UserActive, PasswordHash: hash}); err != nil {
			return err
		}
		if err := tx.PutProof("alice", store.Proof{ProofRef: store.ProofRef{ID: "p", ContentType: store.ProofPNG}, Content: []byte("png")}); err != nil {
			return err
		}
		if err := tx.CreateClient(&store.Client{ID: "rp", SecretHash: store.HashSecret("s"), RedirectURIs: []string{"https://rp/cb"}}); err != nil {
			return err
		}
		return tx.CreateCredential(&store.Credential{
			ID: "c1", Owner: "alice", KeyID: []byte{1, 2, 3}, Algorithm: store.AlgRSA3072, KeyBits: 3072,
			Status: store.CredentialEnabled, Chain: [][]byte{{0x30, 0x82}},
		})
	})

	db := mustReopen(t, path)
	err = db.View(ctx, func(tx store.Tx) error {
		u, err := tx.User("alice")
		if err != nil {
			return err
		}
		if ok, err := store.CheckPassword(u.PasswordHash, []byte("pw")); !ok || err != nil {
			t.Errorf("password after reopen: %v %v", ok, err)
		}
		if p, err := tx.Proof("alice", "p"); err != nil || string(p.Content) != "png" {
			t.Errorf("proof after reopen: %v %v", p, err)
		}
		if c, err := tx.Client("rp"); err != nil || !store.CheckSecret(c.SecretHash, "s") {
			t.Errorf("client after reopen: %v %v", c, err)
		}
		cs, err := tx.Credentials("alice", "", 0)
		if err != nil || len(cs) != 1 || cs[0].ID != "c1" || cs[0].KeyBits != 3072 || string(cs[0].KeyID) != "\x01\x02\x03" {
			t.Errorf("credentials after reopen: %+v %v", cs, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func mustReopen(t *testing.T, path string) *bolt.DB {
	t.Helper()
	db, err := bolt.Open(path, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// writeFresh writes fn's records through the store to a new database file
// in t.TempDir and closes it (a failed Close fails the test); it returns
// the file's path.
func writeFresh(t *testing.T, fn func(store.Tx) error) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "signd.db")
	db, err := bolt.Open(path, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(context.Background(), fn)
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// TestConsentRecordFormat: codes keep their consent record as the JSON
// member "consented" (name → base64 digest), tokens as the last field of
// their binary record (format 1: count, then name and digest, each
// length-prefixed); JSON token records (written before the binary form)
// and records written before the member existed read back with no record
// (nothing consented).
func TestConsentRecordFormat(t *testing.T) {
	ctx := context.Background()
	now := time.Now().UTC().Round(0)
	digest := bytes.Repeat([]byte{0xaa}, 32)
	path := writeFresh(t, func(tx store.Tx) error {
		return tx.CreateToken(&store.Token{
			Hash: store.Fingerprint("new"), Kind: store.TokenAccess, ClientID: "rp", Username: "alice",
			Scopes: []string{"openid", "email"}, ExpiresAt: now.Add(time.Hour),
			Consented: store.ConsentRecord{"email": digest},
		})
	})

	exp := now.Add(time.Hour).Format(time.RFC3339Nano)
	oldToken := `{"kind":"access","client_id":"rp","username":"alice","scopes":["openid","email"],` +
		`"auth_time":"0001-01-01T00:00:00Z","requested_at":"0001-01-01T00:00:00Z","expires_at":"` + exp + `","created_at":"` + exp + `"}`
	oldCode := `{"client_id":"rp","redirect_uri":"https://rp/cb","scopes":["openid","email"],"profile":"openid",` +
		`"username":"alice","auth_time":"` + exp + `","requested_at":"` + exp + `","expires_at":"` + exp + `",` +
		`"redeemed_at":"0001-01-01T00:00:00Z","created_at":"` + exp + `"}`
	// As the JSON form wrote a token with a consent record.
	jsonToken := strings.Replace(oldToken, `"expires_at"`, `"consented":{"email":"`+base64.StdEncoding.EncodeToString(digest)+`"},"expires_at"`, 1)
	var stored []byte
	bolttest.Update(t, path, func(btx *bbolt.Tx) error {
		stored = bytes.Clone(btx.Bucket([]byte("tokens")).Get(store.Fingerprint("new")))
		if err := btx.Bucket([]byte("tokens")).Put(store.Fingerprint("old"), []byte(oldToken)); err != nil {
			return err
		}
		if err := btx.Bucket([]byte("tokens")).Put(store.Fingerprint("json"), []byte(jsonToken)); err != nil {
			return err
		}
		return btx.Bucket([]byte("codes")).Put(store.Fingerprint("old-code"), []byte(oldCode))
	})
	if want := append([]byte("\x01\x05email\x20"), digest...); len(stored) == 0 || stored[0] != 0x01 || !bytes.HasSuffix(stored, want) {
		t.Errorf("stored token %x does not end in the consent record %x", stored, want)
	}

	db := mustReopen(t, path)
	err := db.View(ctx, func(tx store.Tx) error {
		tok, err := tx.Token(store.Fingerprint("new"))
		if err != nil {
			return err
		}
		if !tok.Consented.Equal("email", digest) || len(tok.Consented) != 1 {
			t.Errorf("new token record %v", tok.Consented)
		}
		tok, err = tx.Token(store.Fingerprint("old"))
		if err != nil {
			return err
		}
		if tok.Consented != nil || tok.Username != "alice" || len(tok.Scopes) != 2 {
			t.Errorf("old token %+v, want no consent record", tok)
		}
		tok, err = tx.Token(store.Fingerprint("json"))
		if err != nil {
			return err
		}
		if !tok.Consented.Equal("email", digest) || len(tok.Consented) != 1 || tok.Username != "alice" || len(tok.Scopes) != 2 {
			t.Errorf("JSON token record %+v, want its consent record", tok)
		}
		code, err := tx.Code(store.Fingerprint("old-code"))
		if err != nil {
			return err
		}
		if code.Consented != nil || code.Profile != "openid" || code.Username != "alice" {
			t.Errorf("old code %+v, want no consent record", code)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// partyBuckets are the revocation indexes schema 2 added.
var partyBuckets = []string{"tokens_by_party", "codes_by_party", "auth_requests_by_party", "sessions_by_party"}

// rawKeys returns every key of the named buckets, as bucket/hex lines.
func rawKeys(t *testing.T, path string, buckets []string) []string {
	t.Helper()
	raw, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var keys []string
	err = raw.View(func(tx *bbolt.Tx) error {
		for _, name := range buckets {
			b := tx.Bucket([]byte(name))
			if b == nil {
				keys = append(keys, name+" missing")
				continue
			}
			if err := b.ForEach(func(k, _ []byte) error {
				keys = append(keys, fmt.Sprintf("%s/%x", name, k))
				return nil
			}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// TestMigrateSchema1BuildsPartyIndexes writes every kind of revocable
// record, turns the file into a version 1 file (no party indexes), and
// checks that Open rebuilds exactly the index the write path keeps and that
// revocation then finds every record written before it existed.
func TestMigrateSchema1BuildsPartyIndexes(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "signd.db")
	db, err := bolt.Open(path, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	writeRevocable(t, db, time.Now().UTC().Round(0))
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	written := rawKeys(t, path, partyBuckets)
	// tokens 2+4+2, codes 4+0 (tombstone)+2, requests 4+2 (no user yet), sessions 1+1.
	if len(written) != 22 {
		t.Fatalf("the write path filed %d entries, want 22: %v", len(written), written)
	}

	// Make it a version 1 file: no party indexes.
	bolttest.Update(t, path, func(tx *bbolt.Tx) error {
		for _, name := range partyBuckets {
			if err := tx.DeleteBucket([]byte(name)); err != nil {
				return err
			}
		}
		return tx.Bucket([]byte("meta")).Put([]byte("schema_version"), []byte("1"))
	})
	if got := rawKeys(t, path, partyBuckets[:1]); len(got) != 1 || !strings.HasSuffix(got[0], "missing") {
		t.Fatalf("the index survived the downgrade: %v", got)
	}

	if err := mustReopen(t, path).Close(); err != nil {
		t.Fatal(err)
	}
	if v := bolttest.SchemaVersion(t, path); v != "3" {
		t.Errorf("schema after migration %q, want 3", v)
	}
	if got := rawKeys(t, path, partyBuckets); !slices.Equal(got, written) {
		t.Errorf("migrated index differs from the written one:\n got %v\nwant %v", got, written)
	}
	db = mustReopen(t, path)
	var user, client, cred store.Revoked
	err = db.Update(ctx, func(tx store.Tx) (err error) {
		if cred, err = tx.RevokeCredential("c1"); err != nil {
			return err
		}
		if user, err = tx.RevokeUser("alice"); err != nil {
			return err
		}
		client, err = tx.RevokeClient("rp2")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// c1: the SAD, alice's credential code, both credential requests.
	if want := (store.Revoked{SADs: 1, Codes: 1, Requests: 2}); cred != want {
		t.Errorf("RevokeCredential(c1) after migration = %+v, want %+v", cred, want)
	}
	// alice: what c1 left (her access token and session); the tombstone stays.
	if want := (store.Revoked{AccessTokens: 1, Sessions: 1}); user != want {
		t.Errorf("RevokeUser(alice) after migration = %+v, want %+v", user, want)
	}
	if want := (store.Revoked{AccessTokens: 1, Codes: 1}); client != want {
		t.Errorf("RevokeClient(rp2) after migration = %+v, want %+v", client, want)
	}
	err = db.View(ctx, func(tx store.Tx) error {
		if _, err := tx.Code(store.Fingerprint("code-redeemed")); err != nil {
			t.Errorf("the tombstone was revoked: %v", err)
		}
		if _, err := tx.Session(store.Fingerprint("sess-bob")); err != nil {
			t.Errorf("bob's session was revoked: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// writeRevocable stores tokens, codes (one redeemed), pending requests (one
// still at the login step) and sessions of alice (client rp, credential c1)
// and bob (client rp2).
func writeRevocable(t *testing.T, db *bolt.DB, now time.Time) {
	t.Helper()
	grant := func(client, user, cred string) store.Grant {
		g := store.Grant{ClientID: client, RedirectURI: "https://rp.example/cb", Profile: "service",
			Scopes: []string{"service"}, RequestedAt: now, Username: user}
		if user != "" {
			g.AuthTime = now
		}
		if cred != "" {
			g.Profile, g.Scopes, g.CredentialID, g.Hashes = "credential", []string{"credential"}, cred, [][]byte{make([]byte, 32)}
		}
		return g
	}
	err := db.Update(context.Background(), func(tx store.Tx) error {
		for _, tok := range []*store.Token{
			{Hash: store.Fingerprint("at-alice"), Kind: store.TokenAccess, ClientID: "rp", Username: "alice", ExpiresAt: now.Add(time.Hour)},
			{Hash: store.Fingerprint("sad-alice"), Kind: store.TokenSAD, ClientID: "rp", Username: "alice", CredentialID: "c1",
				Hashes: [][]byte{make([]byte, 32)}, ExpiresAt: now.Add(time.Hour)},
			{Hash: store.Fingerprint("at-bob"), Kind: store.TokenAccess, ClientID: "rp2", Username: "bob", ExpiresAt: now.Add(time.Hour)},
		} {
			if err := tx.CreateToken(tok); err != nil {
				return err
			}
		}
		for code, g := range map[string]store.Grant{
			"code-alice": grant("rp", "alice", "c1"), "code-redeemed": grant("rp", "alice", ""), "code-bob": grant("rp2", "bob", ""),
		} {
			if err := tx.CreateCode(&store.AuthCode{Hash: store.Fingerprint(code), Grant: g, ExpiresAt: now.Add(time.Minute)}); err != nil {
				return err
			}
		}
		if err := tx.RedeemCode(store.Fingerprint("code-redeemed"), now, now.Add(time.Hour)); err != nil {
			return err
		}
		for handle, r := range map[string]struct {
			g     store.Grant
			stage store.AuthStage
		}{
			"req-alice": {grant("rp", "alice", "c1"), store.StageConsent},
			"req-login": {grant("rp", "", "c1"), store.StageLogin},
		} {
			if err := tx.CreateAuthRequest(&store.AuthRequest{Hash: store.Fingerprint(handle), Grant: r.g,
				CSRFHash: store.Fingerprint("csrf"), BindingHash: store.Fingerprint("browser"), Stage: r.stage, ExpiresAt: now.Add(time.Hour)}); err != nil {
				return err
			}
		}
		for _, u := range []string{"alice", "bob"} {
			if err := tx.CreateSession(&store.Session{Hash: store.Fingerprint("sess-" + u), Username: u,
				AuthTime: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestPartyIndexFollowsDeletes: every ordinary way a record goes (delete,
// redemption, the sweeper) takes its party index entries along.
func TestPartyIndexFollowsDeletes(t *testing.T) {
	db := backends.Bolt(t, bolt.Options{})
	now := time.Now().UTC().Round(0)
	writeRevocable(t, db, now)
	err := db.Update(context.Background(), func(tx store.Tx) error {
		if err := tx.DeleteToken(store.Fingerprint("at-alice")); err != nil {
			return err
		}
		if err := tx.RedeemCode(store.Fingerprint("code-alice"), now, now.Add(time.Hour)); err != nil {
			return err
		}
		if err := tx.DeleteAuthRequest(store.Fingerprint("req-login")); err != nil {
			return err
		}
		return tx.DeleteSession(store.Fingerprint("sess-alice"))
	})
	if err != nil {
		t.Fatal(err)
	}
	path := db.Path()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	// Left: sad-alice (4) and at-bob (2); code-bob (2); req-alice (4); sess-bob (1).
	if got := rawKeys(t, path, partyBuckets); len(got) != 13 {
		t.Errorf("party index after the deletes has %d entries, want 13: %v", len(got), got)
	}
	db = mustReopen(t, path)
	err = db.Update(context.Background(), func(tx store.Tx) error {
		for _, sweep := range []func(time.Time) (int, error){
			tx.DeleteExpiredTokens, tx.DeleteExpiredCodes, tx.DeleteExpiredAuthRequests, tx.DeleteExpiredSessions,
		} {
			if _, err := sweep(now.Add(24 * time.Hour)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if got := rawKeys(t, path, partyBuckets); len(got) != 0 {
		t.Errorf("party index after the sweep: %v", got)
	}
}

// TestSweepMalformedIndexKey: an expiry index key shorter than its 8-byte
// expiry (a damaged or edited file) made every sweep slice it and panic
// (found by FuzzIndexes). The sweep now reports the key as an error.
func TestSweepMalformedIndexKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "signd.db")
	db, err := bolt.Open(path, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	indexes := []string{"tokens_by_expiry", "auth_requests_by_expiry", "codes_by_expiry", "sessions_by_expiry"}
	bolttest.Update(t, path, func(tx *bbolt.Tx) error {
		for _, name := range indexes {
			if err := tx.Bucket([]byte(name)).Put([]byte{0}, []byte{}); err != nil {
				return err
			}
		}
		return nil
	})
	db = mustReopen(t, path)
	sweeps := map[string]func(store.Tx) (int, error){
		"tokens_by_expiry":        func(tx store.Tx) (int, error) { return tx.DeleteExpiredTokens(time.Now()) },
		"auth_requests_by_expiry": func(tx store.Tx) (int, error) { return tx.DeleteExpiredAuthRequests(time.Now()) },
		"codes_by_expiry":         func(tx store.Tx) (int, error) { return tx.DeleteExpiredCodes(time.Now()) },
		"sessions_by_expiry":      func(tx store.Tx) (int, error) { return tx.DeleteExpiredSessions(time.Now()) },
	}
	for name, sweep := range sweeps {
		err := db.Update(context.Background(), func(tx store.Tx) error { _, err := sweep(tx); return err })
		if err == nil || !strings.Contains(err.Error(), name+" has a malformed key 00") {
			t.Errorf("sweep of %s: %v", name, err)
		}
	}
}
