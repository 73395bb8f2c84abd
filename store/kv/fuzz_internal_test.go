package kv

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/signd/signd/store"
)

// fuzzDB is a store file with one user (alice) whose every fuzz execution
// runs in a write transaction that is rolled back: the file never changes
// and no execution sees another's records.
type fuzzDB struct {
	db  *testDB
	now time.Time
}

func newFuzzDB(f *testing.F) *fuzzDB {
	f.Helper()
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	db := openTestDB(f, func() time.Time { return now })
	err := db.Update(context.Background(), func(tx store.Tx) error {
		return tx.CreateUser(&store.User{ID: "u1", Username: "alice", Status: store.UserActive})
	})
	if err != nil {
		f.Fatal(err)
	}
	return &fuzzDB{db: db, now: now}
}

// rollback runs fn in a write transaction and discards whatever it wrote.
func (d *fuzzDB) rollback(t testing.TB, fn func(t *Tx)) {
	btx, err := d.db.db.Begin(true)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = btx.Rollback() }()
	fn(NewTx(testBolt{btx}, func() time.Time { return d.now }))
}

func (t *Tx) putRawBytes(bucket string, key, value []byte) error {
	t.lastToken = decodedToken{}
	b, err := t.bucket(bucket)
	if err != nil {
		return err
	}
	return b.Put(key, value)
}

// sameInstants compares two values by their JSON encodings with every
// time in UTC (the store writes times in UTC, the instant is what counts)
// and an empty list read as none.
func sameInstants(a, b any) bool {
	norm := func(v any) []byte {
		data, err := json.Marshal(v)
		if err != nil {
			return nil
		}
		var tree any
		if json.Unmarshal(data, &tree) != nil {
			return nil
		}
		var walk func(any) any
		walk = func(v any) any {
			switch x := v.(type) {
			case string:
				if t, err := time.Parse(time.RFC3339Nano, x); err == nil {
					return t.UTC().Format(time.RFC3339Nano)
				}
			case map[string]any:
				for k, e := range x {
					x[k] = walk(e)
				}
			case []any:
				if len(x) == 0 {
					// An empty list and none are one thing to the store
					// (a record written back omits an empty list).
					return nil
				}
				for i, e := range x {
					x[i] = walk(e)
				}
			}
			return v
		}
		out, _ := json.Marshal(walk(tree))
		return out
	}
	x, y := norm(a), norm(b)
	if x == nil || y == nil {
		// A time JSON cannot write (binary tokens hold any year): equal
		// as values, then.
		return reflect.DeepEqual(a, b)
	}
	return bytes.Equal(x, y)
}

// sameJSON compares two values by their JSON encodings (time.Time values
// that are Equal may differ in location).
func sameJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil {
		// A binary token can hold a time JSON cannot write (a year before
		// 0 or past 9999): then the two must be equal as values.
		return reflect.DeepEqual(a, b)
	}
	return bytes.Equal(x, y)
}

var fuzzHash = bytes.Repeat([]byte{0xab}, sha256.Size)

// recordKind is one kind of stored record: where it lives and how the
// store reads, validates and writes it back.
type recordKind struct {
	bucket string
	key    []byte
	// decode is the direct reading the store must agree with.
	decode func(raw []byte) (any, error)
	// read reads the record (and every listing that shows it) through the
	// store; it returns the record as the store's type.
	read func(t *Tx) (any, error)
	// rewrite validates the record and, when valid, writes it back through
	// the store; it reports whether it was valid.
	rewrite func(t *Tx, v any) (bool, error)
	// settle clears what the store sets itself on a write, for comparing.
	settle func(before, after any) any
}

func recordKinds() []recordKind {
	hash := fuzzHash
	return []recordKind{
		{
			bucket: bucketUsers, key: []byte("alice"),
			decode: func(raw []byte) (any, error) { var r userRecord; err := json.Unmarshal(raw, &r); return r.user(), err },
			read: func(t *Tx) (any, error) {
				u, err := t.User("alice")
				if err != nil {
					return nil, err
				}
				all, err := t.Users()
				if err != nil || len(all) != 1 || !sameJSON(all[0], *u) {
					return nil, errors.New("Users and User disagree")
				}
				return u, nil
			},
			rewrite: func(t *Tx, v any) (bool, error) {
				u := v.(*store.User)
				if u.Validate() != nil || u.Username != "alice" || u.ID != "u1" {
					return false, nil
				}
				return true, t.PutUser(u)
			},
			settle: func(before, after any) any {
				u := *after.(*store.User)
				u.UpdatedAt = before.(*store.User).UpdatedAt
				return &u
			},
		},
		{
			bucket: bucketClients, key: []byte("rp"),
			decode: func(raw []byte) (any, error) {
				var r clientRecord
				err := json.Unmarshal(raw, &r)
				return r.client(), err
			},
			read: func(t *Tx) (any, error) {
				c, err := t.Client("rp")
				if err != nil {
					return nil, err
				}
				all, err := t.Clients()
				if err != nil || len(all) != 1 || !sameJSON(all[0], *c) {
					return nil, errors.New("Clients and Client disagree")
				}
				return c, nil
			},
			rewrite: func(t *Tx, v any) (bool, error) {
				c := v.(*store.Client)
				if c.Validate() != nil || c.ID != "rp" {
					return false, nil
				}
				return true, t.PutClient(c)
			},
			settle: func(before, after any) any {
				c := *after.(*store.Client)
				c.UpdatedAt = before.(*store.Client).UpdatedAt
				return &c
			},
		},
		{
			bucket: bucketCredentials, key: []byte("cred"),
			decode: func(raw []byte) (any, error) {
				var r credentialRecord
				err := json.Unmarshal(raw, &r)
				return r.credential(), err
			},
			read: func(t *Tx) (any, error) {
				if err := t.putRaw(bucketCredsByOwner, compositeKey("alice", "cred"), []byte{}); err != nil {
					return nil, err
				}
				c, err := t.Credential("cred")
				if err != nil {
					return nil, err
				}
				owned, err := t.Credentials("alice", "", 0)
				if err != nil || len(owned) != 1 || !sameJSON(owned[0], *c) {
					return nil, errors.New("Credentials and Credential disagree")
				}
				all, err := t.Credentials("", "", 0)
				if err != nil || len(all) != 1 || !sameJSON(all[0], *c) {
					return nil, errors.New("the admin listing and Credential disagree")
				}
				return c, nil
			},
			rewrite: func(t *Tx, v any) (bool, error) {
				c := v.(*store.Credential)
				if c.Validate() != nil || c.ID != "cred" || c.Owner != "alice" {
					return false, nil
				}
				return true, t.PutCredential(c)
			},
			settle: func(before, after any) any {
				c := *after.(*store.Credential)
				c.UpdatedAt = before.(*store.Credential).UpdatedAt
				return &c
			},
		},
		{
			bucket: bucketTokens, key: hash,
			decode: func(raw []byte) (any, error) {
				r, err := decodeToken(raw) // binary or JSON
				if err != nil {
					return nil, err
				}
				return &store.Token{Hash: hash, Kind: store.TokenKind(r.Kind), ClientID: r.ClientID, Username: r.Username,
					Scopes: r.Scopes, CodeHash: r.CodeHash, CredentialID: r.CredentialID, Hashes: r.Hashes,
					AuthTime: r.AuthTime, RequestedAt: r.RequestedAt, ExpiresAt: r.ExpiresAt, CreatedAt: r.CreatedAt,
					Consented: store.ConsentRecord(r.Consented).Clone(), RotatedAt: derefTime(r.RotatedAt), SecretGeneration: r.SecretGen}, err
			},
			read: func(t *Tx) (any, error) { return t.Token(hash) },
			rewrite: func(t *Tx, v any) (bool, error) {
				tok := v.(*store.Token)
				// Whatever it holds, a token can be revoked (DeleteToken
				// walks its indexes).
				if err := t.DeleteToken(hash); err != nil {
					return false, err
				}
				if _, err := t.Token(hash); !errors.Is(err, store.ErrNotFound) {
					return false, errors.New("token still there after DeleteToken")
				}
				if tok.Validate() != nil {
					return false, nil
				}
				return true, t.CreateToken(tok)
			},
			settle: func(before, after any) any {
				tok := *after.(*store.Token)
				tok.CreatedAt = before.(*store.Token).CreatedAt
				return &tok
			},
		},
		{
			bucket: bucketAuthRequests, key: hash,
			decode: func(raw []byte) (any, error) {
				var r authRequestRecord
				err := json.Unmarshal(raw, &r)
				return r.request(hash), err
			},
			read: func(t *Tx) (any, error) { return t.AuthRequest(hash) },
			rewrite: func(t *Tx, v any) (bool, error) {
				r := v.(*store.AuthRequest)
				if r.Validate() != nil {
					return false, nil
				}
				return true, t.PutAuthRequest(r)
			},
			settle: func(_, after any) any { return after },
		},
		{
			bucket: bucketCodes, key: hash,
			decode: func(raw []byte) (any, error) {
				var r authCodeRecord
				err := json.Unmarshal(raw, &r)
				return r.code(hash), err
			},
			read: func(t *Tx) (any, error) { return t.Code(hash) },
			rewrite: func(t *Tx, v any) (bool, error) {
				c := v.(*store.AuthCode)
				at := time.Date(2026, 3, 4, 5, 6, 8, 0, time.UTC)
				err := t.RedeemCode(hash, at, at.Add(time.Hour))
				switch {
				case !c.RedeemedAt.IsZero() && !errors.Is(err, store.ErrCodeRedeemed):
					return false, errors.New("a redeemed code redeemed again")
				case c.RedeemedAt.IsZero() && err != nil:
					return false, err
				case c.RedeemedAt.IsZero():
					again, err := t.Code(hash)
					if err != nil || !again.RedeemedAt.Equal(at) || again.ExpiresAt.Before(at.Add(time.Hour)) {
						return false, errors.New("redemption not recorded")
					}
				}
				return false, nil
			},
		},
		{
			bucket: bucketSessions, key: hash,
			decode: func(raw []byte) (any, error) {
				var r sessionRecord
				err := json.Unmarshal(raw, &r)
				return &store.Session{Hash: hash, Username: r.Username, AuthTime: r.AuthTime, ExpiresAt: r.ExpiresAt, CreatedAt: r.CreatedAt}, err
			},
			read: func(t *Tx) (any, error) { return t.Session(hash) },
			rewrite: func(t *Tx, _ any) (bool, error) {
				if err := t.DeleteSession(hash); err != nil {
					return false, err
				}
				return false, nil
			},
		},
		{
			bucket: bucketOIDCKeys, key: []byte("kid"),
			decode: func(raw []byte) (any, error) {
				var r signingKeyRecord
				err := json.Unmarshal(raw, &r)
				return r.signingKey(), err
			},
			read: func(t *Tx) (any, error) {
				k, err := t.signingKey("kid")
				if err != nil {
					return nil, err
				}
				all, err := t.SigningKeys()
				if err != nil || len(all) != 1 || !sameJSON(all[0], *k) {
					return nil, errors.New("SigningKeys and the key disagree")
				}
				return k, nil
			},
			rewrite: func(t *Tx, v any) (bool, error) {
				k := v.(*store.SigningKey)
				if k.Validate() != nil || k.KID != "kid" {
					return false, nil
				}
				return true, t.PutSigningKey(k)
			},
			settle: func(_, after any) any { return after },
		},
		{
			bucket: bucketAdminRequests, key: []byte("req"),
			decode: func(raw []byte) (any, error) {
				var r adminRequestRecord
				err := json.Unmarshal(raw, &r)
				return r.adminRequest(), err
			},
			read: func(t *Tx) (any, error) {
				r, err := t.AdminRequest("req")
				if err != nil {
					return nil, err
				}
				all, err := t.AdminRequests()
				if err != nil || len(all) != 1 || !sameJSON(all[0], *r) {
					return nil, errors.New("AdminRequests and AdminRequest disagree")
				}
				return r, nil
			},
			rewrite: func(t *Tx, v any) (bool, error) {
				r := v.(*store.AdminRequest)
				if r.Validate() != nil || r.ID != "req" {
					return false, nil
				}
				if err := t.DeleteAdminRequest("req"); err != nil {
					return false, err
				}
				return true, t.CreateAdminRequest(r)
			},
			settle: func(_, after any) any { return after },
		},
	}
}

// seedRecords are records as the store writes them, one per kind.
func seedRecords(f *testing.F) [][]byte {
	t0 := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	pub, _ := x509.MarshalPKIXPublicKey(key.Public())
	grant := grantRecord{ClientID: "rp", RedirectURI: "https://rp.example/cb", RedirectURISent: true, Scopes: []string{"credential"},
		Profile: "credential", CredentialID: "cred", Hashes: [][]byte{fuzzHash}, Params: map[string]string{"numSignatures": "1"},
		CodeChallenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM", CodeChallengeMethod: "S256", Nonce: "n", Lang: "nl",
		Username: "alice", AuthTime: t0, RequestedAt: t0, Consented: map[string][]byte{"email": fuzzHash}, PINVerified: true}
	recs := []any{
		userRecord{ID: "u1", Username: "alice", Status: "active", PasswordHash: "$argon2id$v=19$m=8,t=1,p=1$c2FsdHNhbHQ$MTIzNDU2Nzg5MDEyMzQ1Ng",
			TOTPSecret: "JBSWY3DPEHPK3PXP", FailedPasswords: 2, LockedUntil: &t0, Lockouts: 1,
			Email: "alice@example.com", EmailVerified: true, Claims: map[string]string{"given_name": "Alice"},
			Proofs: []proofRefRecord{{ID: "p1", ContentType: "application/pdf", Size: 3, SHA256: "ab"}}, CreatedAt: t0, UpdatedAt: t0},
		clientRecord{ID: "rp", Name: "RP", SecretHash: store.HashSecret("s"), RedirectURIs: []string{"https://rp.example/cb"},
			Scopes: []string{"service", "credential"}, SectorIdentifier: "rp.example", RequirePKCE: true, IDTokenAlg: "ES256", CreatedAt: t0, UpdatedAt: t0},
		credentialRecord{ID: "cred", Owner: "alice", KeyID: []byte("0123456789abcdef"), Label: "l", Algorithm: store.AlgRSA2048, KeyBits: 2048,
			Chain: [][]byte{{0x30, 0x03, 0x02, 0x01, 0x01}}, Status: "enabled", CreatedAt: t0, UpdatedAt: t0},
		tokenRecord{Kind: "sad", ClientID: "rp", Username: "alice", Scopes: []string{"credential"}, CodeHash: fuzzHash, CredentialID: "cred",
			Hashes: [][]byte{fuzzHash}, AuthTime: t0, RequestedAt: t0, ExpiresAt: t0.Add(5 * time.Minute), CreatedAt: t0},
		authRequestRecord{grantRecord: grant, State: "12345678", CSRFHash: fuzzHash, BindingHash: fuzzHash, Stage: "consent",
			ConsentShownAt: t0, ExpiresAt: t0.Add(time.Hour), CreatedAt: t0},
		authCodeRecord{grantRecord: grant, ExpiresAt: t0.Add(time.Minute), CreatedAt: t0},
		sessionRecord{Username: "alice", AuthTime: t0, ExpiresAt: t0.Add(8 * time.Hour), CreatedAt: t0},
		signingKeyRecord{KID: "kid", KeyID: []byte("oidc-key"), Label: "oidc", Algorithm: "ES256", PublicKey: pub, State: "active",
			CreatedAt: t0, ActivatedAt: t0},
		adminRequestRecord{ID: "req", Op: "RemoveCredential", Request: []byte(`{"Name":"cred"}`), Actor: "uid:1001 (alice)",
			Party: "uid:1001", Roles: []string{"security_officer"}, CreatedAt: t0, ExpiresAt: t0.Add(24 * time.Hour)},
	}
	out := make([][]byte, len(recs))
	for i, r := range recs {
		data, err := json.Marshal(r)
		if err != nil {
			f.Fatal(err)
		}
		out[i] = data
	}
	return out
}

// binaryTokenSeed is a token record in the binary form the store writes
// (codec.go).
func binaryTokenSeed() []byte {
	t0 := time.Date(2026, 3, 4, 5, 6, 7, 8, time.UTC)
	return encodeToken(&tokenRecord{Kind: "sad", ClientID: "rp", Username: "alice", Scopes: []string{"credential"},
		CodeHash: fuzzHash, CredentialID: "cred", Hashes: [][]byte{fuzzHash, {}, nil}, AuthTime: t0, RequestedAt: t0,
		ExpiresAt: t0.Add(5 * time.Minute), CreatedAt: t0, Consented: map[string][]byte{"email": fuzzHash}})
}

// FuzzRecords stores any bytes as each kind of record (user, client,
// credential, token, authorization request, code, session, OIDC signing
// key, admin request) and reads them through the store. Reading never panics; it fails
// exactly when the record (JSON, or a token's binary form) does not
// decode, with an error naming the record, and otherwise agrees with a
// direct decode, in every listing that shows the record. A record that then passes its Validate is written back
// through the store and reads back the same (decode → validate → write
// round trip); tokens can always be revoked, codes redeemed once.
func FuzzRecords(f *testing.F) {
	d := newFuzzDB(f)
	kinds := recordKinds()
	for i, raw := range seedRecords(f) {
		f.Add(uint8(i), raw)
	}
	f.Add(uint8(0), []byte(`{"username":"alice","claims":null,"proofs":[null]}`))
	f.Add(uint8(0), []byte(`{"id":"u1","username":"alice","status":"active","password_locked_until":"9999-12-31T23:59:59-01:00","password_lockouts":-1}`))
	f.Add(uint8(3), []byte(`{"kind":"access","consented":{"":""}}`))
	f.Add(uint8(7), []byte(`{"state":"retired","created_at":"9999-12-31T23:59:59-23:59"}`))
	f.Add(uint8(3), binaryTokenSeed())
	f.Fuzz(func(t *testing.T, kind uint8, raw []byte) {
		k := kinds[int(kind)%len(kinds)]
		d.rollback(t, func(tx *Tx) {
			if err := tx.putRawBytes(k.bucket, k.key, raw); err != nil {
				t.Fatal(err)
			}
			want, derr := k.decode(raw)
			got, err := k.read(tx)
			if (err == nil) != (derr == nil) {
				t.Fatalf("%s %q: store read %v, direct decode %v", k.bucket, raw, err, derr)
			}
			if err != nil {
				if !bytes.Contains([]byte(err.Error()), []byte("store: decode "+k.bucket)) {
					t.Fatalf("%s %q: error does not name the record: %v", k.bucket, raw, err)
				}
				return
			}
			if !sameJSON(got, want) {
				t.Fatalf("%s %q: read %+v, decoded %+v", k.bucket, raw, got, want)
			}
			valid, err := k.rewrite(tx, got)
			if err != nil && !strings.HasPrefix(err.Error(), "store: encode "+k.bucket) {
				// A time JSON cannot write (a year past 9999 in UTC) is
				// refused as an error; anything else is a failure.
				t.Fatalf("%s %q: %v", k.bucket, raw, err)
			}
			if !valid || err != nil {
				return
			}
			again, err := k.read(tx)
			if err != nil || !sameInstants(k.settle(got, again), got) {
				t.Fatalf("%s %q: written back, reads %+v (%v), want %+v", k.bucket, raw, again, err, got)
			}
		})
	})
}

// indexBuckets are the index buckets whose keys the store parses.
var indexBuckets = []string{bucketTokensByExp, bucketAuthRequestsByExp, bucketCodesByExp, bucketSessionsByExp, bucketTokensByCode, bucketCredsByOwner}

// FuzzIndexes puts any key into an index bucket and runs what walks the
// indexes: the expiry sweeps, code-reuse revocation and the owner listing.
// None of them panics on a key it did not write; they answer a count or
// an error.
func FuzzIndexes(f *testing.F) {
	d := newFuzzDB(f)
	exp := expiryKey(d.now.Add(-time.Minute), fuzzHash)
	for i := range indexBuckets {
		f.Add(uint8(i), []byte(exp), int64(0))
		f.Add(uint8(i), []byte("\x00"), int64(0))
		f.Add(uint8(i), []byte(compositeKey("alice", "cred")), int64(3600))
	}
	f.Add(uint8(4), append(bytes.Clone(fuzzHash), fuzzHash...), int64(0))
	f.Fuzz(func(t *testing.T, which uint8, key []byte, offset int64) {
		bucket := indexBuckets[int(which)%len(indexBuckets)]
		now := d.now.Add(time.Duration(offset%(1<<40)) * time.Second)
		d.rollback(t, func(tx *Tx) {
			if err := tx.putRawBytes(bucket, key, []byte{}); err != nil {
				return // bbolt refuses the key (empty, too long)
			}
			for name, sweep := range map[string]func(time.Time) (int, error){
				"tokens": tx.DeleteExpiredTokens, "requests": tx.DeleteExpiredAuthRequests,
				"codes": tx.DeleteExpiredCodes, "sessions": tx.DeleteExpiredSessions,
			} {
				if n, err := sweep(now); n < 0 || err != nil && err.Error() == "" {
					t.Fatalf("sweep %s after %s %q: %d, %v", name, bucket, key, n, err)
				}
			}
			if _, err := tx.DeleteTokensByCode(key[:min(len(key), sha256.Size)]); err != nil && err.Error() == "" {
				t.Fatal("empty error")
			}
			if _, err := tx.Credentials("alice", "", 0); err != nil && err.Error() == "" {
				t.Fatal("empty error")
			}
		})
	})
}

// FuzzAuditBucket appends two real entries, then stores any key and value
// in the audit bucket, as a damaged or edited file would hold them.
// Verifying never panics and either passes or names the entry where the
// log breaks; an append either refuses (the head is unreadable) or chains
// to the head, so a log that verified still verifies with one more entry.
func FuzzAuditBucket(f *testing.F) {
	d := newFuzzDB(f)
	var sealed [][]byte
	d.rollback(f, func(tx *Tx) {
		for _, e := range fuzzAuditEntries() {
			if err := tx.AppendAudit(&e); err != nil {
				f.Fatal(err)
			}
		}
		_ = tx.AuditRecords(1, func(_ uint64, raw []byte) error { sealed = append(sealed, bytes.Clone(raw)); return nil })
	})
	f.Add(auditKey(3), sealed[1])
	f.Add(auditKey(2), sealed[0])
	f.Add(auditKey(3), []byte(`{"digest":"00"}`))
	f.Add([]byte{0, 0, 0, 3}, sealed[1])
	f.Add(auditKey(1<<63), []byte(`{}`))
	f.Fuzz(func(t *testing.T, key, value []byte) {
		d.rollback(t, func(tx *Tx) {
			for _, e := range fuzzAuditEntries() {
				if err := tx.AppendAudit(&e); err != nil {
					t.Fatal(err)
				}
			}
			if err := tx.putRawBytes(bucketAudit, key, value); err != nil {
				return
			}
			n, _, err := store.VerifyAudit(tx)
			var broken *store.AuditBrokenError
			if err != nil && (!errors.As(err, &broken) || broken.Reason == "") {
				t.Fatalf("%x=%q: %v", key, value, err)
			}
			walked := 0
			_ = store.AuditEntries(tx, 1, func(*store.AuditEntry) error { walked++; return nil })
			e := store.AuditEntry{Kind: store.AuditCredentialEnabled, User: "alice", Credential: "cred", Outcome: "enabled"}
			if aerr := tx.AppendAudit(&e); aerr != nil {
				if aerr.Error() == "" {
					t.Fatal("empty error")
				}
				return
			}
			if err == nil {
				n2, _, err2 := store.VerifyAudit(tx)
				if err2 != nil || n2 != n+1 {
					t.Fatalf("%x=%q: verified %d entries, after an append %d: %v", key, value, n, n2, err2)
				}
			}
		})
	})
}

func fuzzAuditEntries() []store.AuditEntry {
	return []store.AuditEntry{
		{Kind: store.AuditSignHash, User: "alice", Client: "rp", Credential: "cred",
			Hashes: []string{"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"}, Outcome: store.AuditGranted},
		{Kind: store.AuditSignHash, User: "alice", Client: "rp", Credential: "cred", HashCount: 2, Outcome: store.AuditRefused, Reason: "unknown SAD"},
	}
}

func derefTime(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}
