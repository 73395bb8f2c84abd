package store_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/signd/signd/store"
)

// Entries written before hash_count and hashes_sha256 existed, exactly as
// that code stored them: they must still decode and verify unchanged.
var earlierEntries = [][]byte{
	[]byte(`{"seq":1,"time":"2026-03-04T05:06:07.000000008Z","kind":"signHash","user":"alice","client":"rp1","credential":"cred-1","hashes":["00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"],"outcome":"granted","reason":"","ref":0,"prev":"0000000000000000000000000000000000000000000000000000000000000000","digest":"42117f238c5c6100cfc62c6c00f2529b53cc30ccd6c772820d72d793c0077eeb"}`),
	[]byte(`{"seq":2,"time":"2026-03-04T05:06:08Z","kind":"signHash","user":"alice","client":"rp1","credential":"cred-1","hashes":[],"outcome":"refused","reason":"unknown SAD","ref":0,"prev":"42117f238c5c6100cfc62c6c00f2529b53cc30ccd6c772820d72d793c0077eeb","digest":"e6bde6d78f84c41229c82f1067ef1aea136a688008670721e1398e82117790ec"}`),
}

func TestAuditEarlierEntriesVerify(t *testing.T) {
	var v store.AuditVerifier
	for i, raw := range earlierEntries {
		e, err := v.Check(uint64(i+1), raw)
		if err != nil {
			t.Fatalf("entry %d: %v", i+1, err)
		}
		again, err := store.EncodeAuditEntry(e)
		if err != nil || !bytes.Equal(again, raw) {
			t.Errorf("entry %d re-encodes as %s (%v)", i+1, again, err)
		}
	}
}

// A refusal's hash count and digest are part of the sealed content: the
// digest covers them, they round-trip, and another spelling is refused.
func TestAuditHashSummary(t *testing.T) {
	sum := sha256.Sum256([]byte(`["AAAA"]`))
	e := &store.AuditEntry{
		Time: time.Date(2026, 3, 4, 5, 6, 9, 0, time.UTC), Kind: store.AuditSignHash, User: "alice", Client: "rp1",
		Credential: "cred-1", HashCount: 101, HashesSHA256: hex.EncodeToString(sum[:]),
		Outcome: store.AuditRefused, Reason: "Too many hashes: at most 100 per request",
	}
	prev := bytes.Repeat([]byte{7}, 32)
	raw, err := store.SealAudit(e, 3, prev)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(raw, []byte(`"hashes":[],"hash_count":101,"hashes_sha256":"`+e.HashesSHA256+`","outcome":"refused"`)) {
		t.Errorf("encoding %s", raw)
	}
	got, err := store.DecodeAuditEntry(raw)
	if err != nil || got.HashCount != 101 || got.HashesSHA256 != e.HashesSHA256 {
		t.Fatalf("decoded %+v, %v", got, err)
	}
	// Changing the count keeps the encoding canonical but breaks the digest.
	forged := bytes.Replace(raw, []byte(`"hash_count":101`), []byte(`"hash_count":1`), 1)
	e2, err := store.DecodeAuditEntry(forged)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(e2.Digest, mustSeal(t, e2, prev)) {
		t.Error("the digest does not cover hash_count")
	}
	// An explicit zero is not the canonical spelling.
	zero := bytes.Replace(raw, []byte(`"hash_count":101,`), []byte(`"hash_count":0,`), 1)
	if _, err := store.DecodeAuditEntry(zero); err == nil {
		t.Error(`"hash_count":0 accepted; the canonical form leaves it out`)
	}

	for name, bad := range map[string]func(*store.AuditEntry){
		"negative count": func(e *store.AuditEntry) { e.HashCount = -1 },
		"short digest":   func(e *store.AuditEntry) { e.HashesSHA256 = "abcd" },
		"upper-case hex": func(e *store.AuditEntry) { e.HashesSHA256 = strings.ToUpper(hex.EncodeToString(sum[:])) },
		"not hex at all": func(e *store.AuditEntry) { e.HashesSHA256 = strings.Repeat("z", 64) },
	} {
		e := *e
		bad(&e)
		if _, err := store.SealAudit(&e, 3, prev); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: SealAudit = %v, want ErrInvalid", name, err)
		}
	}
}

// Entries of every kind written before sign_algo and hash_algo existed,
// exactly as that code stored them (the log of
// cmd/signd/testdata/audit-written-before-sign-algo.db): they must still
// decode, re-encode byte for byte and verify as one chain.
var entriesBeforeSignAlgo = []string{
	`{"seq":1,"time":"2026-11-23T12:01:00Z","kind":"credential_enrolled","user":"alice","client":"","credential":"c1","hashes":[],"outcome":"pending","reason":"rsa-2048","ref":0,"prev":"0000000000000000000000000000000000000000000000000000000000000000","digest":"9bff332e35bcbf9c69fac42e059410008f71cc8d365cd9651d3eaa7ccb62b4f2"}`,
	`{"seq":2,"time":"2026-11-23T12:02:00Z","kind":"credential_enrolled","user":"alice","client":"","credential":"c1","hashes":[],"outcome":"enabled","reason":"","ref":0,"prev":"9bff332e35bcbf9c69fac42e059410008f71cc8d365cd9651d3eaa7ccb62b4f2","digest":"482f49b3188ec1f27873023eb6fae3de020ac2757648133e3d640332ce8508be"}`,
	`{"seq":3,"time":"2026-11-23T12:03:00Z","kind":"signHash","user":"alice","client":"rp","credential":"c1","hashes":["9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"],"outcome":"granted","reason":"","ref":0,"prev":"482f49b3188ec1f27873023eb6fae3de020ac2757648133e3d640332ce8508be","digest":"5df27bae573ab56f788b81bb273dbfbaf0b5b9a5951f359a94642f7f9125f094"}`,
	`{"seq":4,"time":"2026-11-23T12:04:00Z","kind":"signHash","user":"alice","client":"rp","credential":"c1","hashes":[],"hash_count":1,"hashes_sha256":"2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae","outcome":"refused","reason":"unknown SAD","ref":0,"prev":"5df27bae573ab56f788b81bb273dbfbaf0b5b9a5951f359a94642f7f9125f094","digest":"7a84b1059a5156b32fe8c4c949eb775e67d9bb74a44062cd9b14bc6df9edad0e"}`,
	`{"seq":5,"time":"2026-11-23T12:05:00Z","kind":"signHash","user":"alice","client":"rp","credential":"c1","hashes":["9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08","2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae"],"outcome":"granted","reason":"","ref":0,"prev":"7a84b1059a5156b32fe8c4c949eb775e67d9bb74a44062cd9b14bc6df9edad0e","digest":"e7162c64d530b30882cae882bdbe5be0adb650a5d30ef66fc5a16a5dbc44af56"}`,
	`{"seq":6,"time":"2026-11-23T12:05:01Z","kind":"signHash","user":"alice","client":"rp","credential":"c1","hashes":["9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08","2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae"],"outcome":"restored","reason":"hsm unavailable","ref":5,"prev":"e7162c64d530b30882cae882bdbe5be0adb650a5d30ef66fc5a16a5dbc44af56","digest":"4bf0efe7f58912678148eec6e3579a9ae6ef44b01eb27d756ee7d60fcf6e394e"}`,
	`{"seq":7,"time":"2026-11-23T12:06:00Z","kind":"authorize","user":"alice","client":"rp","credential":"c1","hashes":["9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"],"outcome":"granted","reason":"","ref":0,"prev":"4bf0efe7f58912678148eec6e3579a9ae6ef44b01eb27d756ee7d60fcf6e394e","digest":"d3d9389e77d05915e3d405084d7701fcd07a53cc53a73ab55cba4dbe6bbd4481"}`,
	`{"seq":8,"time":"2026-11-23T12:07:00Z","kind":"timestamp","user":"alice","client":"rp","credential":"","hashes":["2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae"],"outcome":"granted","reason":"0a1b2c","ref":0,"prev":"d3d9389e77d05915e3d405084d7701fcd07a53cc53a73ab55cba4dbe6bbd4481","digest":"f42e0d18f175db8126a72e3f0ce6f24d7b265ed721830fabda263a30c1aa1cd5"}`,
	`{"seq":9,"time":"2026-11-23T12:08:00Z","kind":"credential_auth","user":"alice","client":"","credential":"c1","hashes":[],"outcome":"ok","reason":"multisign 5, authMode explicit","ref":0,"prev":"f42e0d18f175db8126a72e3f0ce6f24d7b265ed721830fabda263a30c1aa1cd5","digest":"8e6eac88b9fb9b5f485dae745a094a9506ab3aa0ca6ce1ace6a1ef65893d8b11"}`,
	`{"seq":10,"time":"2026-11-23T12:09:00Z","kind":"credential_disabled","user":"alice","client":"","credential":"c1","hashes":[],"outcome":"ok","reason":"owner","ref":0,"prev":"8e6eac88b9fb9b5f485dae745a094a9506ab3aa0ca6ce1ace6a1ef65893d8b11","digest":"3f931c96ce94e1f50eae2945fb2459a077152b8d0362d2bc7447ed8fc0ec1040"}`,
}

func TestAuditEntriesBeforeSignAlgoVerify(t *testing.T) {
	var v store.AuditVerifier
	for i, raw := range entriesBeforeSignAlgo {
		e, err := v.Check(uint64(i+1), []byte(raw))
		if err != nil {
			t.Fatalf("entry %d: %v", i+1, err)
		}
		if e.SignAlgo != "" || e.HashAlgo != "" {
			t.Errorf("entry %d reads sign_algo %q, hash_algo %q", i+1, e.SignAlgo, e.HashAlgo)
		}
		again, err := store.EncodeAuditEntry(e)
		if err != nil || string(again) != raw {
			t.Errorf("entry %d re-encodes as %s (%v)", i+1, again, err)
		}
	}
	if head := hex.EncodeToString(v.Head()); head != "3f931c96ce94e1f50eae2945fb2459a077152b8d0362d2bc7447ed8fc0ec1040" {
		t.Errorf("head %s", head)
	}
}

// TestAuditSignAlgo: a signHash entry's algorithm OIDs are part of the
// sealed content: the digest covers them, they round-trip, the canonical
// form leaves them out when empty, and anything but a dotted-decimal OID
// is refused before it is sealed.
func TestAuditSignAlgo(t *testing.T) {
	e := &store.AuditEntry{
		Time: time.Date(2026, 11, 23, 12, 10, 0, 0, time.UTC), Kind: store.AuditSignHash, User: "alice", Client: "rp",
		Credential: "c1", Hashes: []string{strings.Repeat("ab", 32)}, SignAlgo: "1.2.840.113549.1.1.1", HashAlgo: "2.16.840.1.101.3.4.2.1",
		Outcome: store.AuditGranted,
	}
	prev := bytes.Repeat([]byte{7}, 32)
	raw, err := store.SealAudit(e, 11, prev)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(raw, []byte(`"hashes":["`+e.Hashes[0]+`"],"sign_algo":"1.2.840.113549.1.1.1","hash_algo":"2.16.840.1.101.3.4.2.1","outcome":"granted"`)) {
		t.Errorf("encoding %s", raw)
	}
	got, err := store.DecodeAuditEntry(raw)
	if err != nil || got.SignAlgo != e.SignAlgo || got.HashAlgo != e.HashAlgo {
		t.Fatalf("decoded %+v, %v", got, err)
	}
	for _, tc := range []struct{ name, from, to string }{
		{"sign_algo changed", `"sign_algo":"1.2.840.113549.1.1.1"`, `"sign_algo":"1.2.840.113549.1.1.5"`},
		{"hash_algo changed", `"hash_algo":"2.16.840.1.101.3.4.2.1"`, `"hash_algo":"2.16.840.1.101.3.4.2.3"`},
		{"hash_algo removed", `,"hash_algo":"2.16.840.1.101.3.4.2.1"`, ``},
	} {
		forged := bytes.Replace(raw, []byte(tc.from), []byte(tc.to), 1)
		f, err := store.DecodeAuditEntry(forged)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if bytes.Equal(f.Digest, mustSeal(t, f, prev)) {
			t.Errorf("%s: the digest does not cover it", tc.name)
		}
	}
	if _, err := store.DecodeAuditEntry(bytes.Replace(raw, []byte(`"hash_algo":"2.16.840.1.101.3.4.2.1"`), []byte(`"hash_algo":""`), 1)); err == nil {
		t.Error(`"hash_algo":"" accepted; the canonical form leaves it out`)
	}
	for _, bad := range []string{"sha256", "1.2.840.113549.1.1.", "1..2", "01.2.3", "1.2.-3", "1.2.840 ", "\xff", "1." + strings.Repeat("1", 64)} {
		for _, field := range []string{"sign_algo", "hash_algo"} {
			e := *e
			if field == "sign_algo" {
				e.SignAlgo = bad
			} else {
				e.HashAlgo = bad
			}
			if _, err := store.SealAudit(&e, 11, prev); !errors.Is(err, store.ErrInvalid) {
				t.Errorf("%s %q: SealAudit = %v, want ErrInvalid", field, bad, err)
			}
		}
	}
}

// mustSeal returns the digest e's content should have after prev.
func mustSeal(t *testing.T, e *store.AuditEntry, prev []byte) []byte {
	t.Helper()
	c := *e
	if _, err := store.SealAudit(&c, e.Seq, prev); err != nil {
		t.Fatal(err)
	}
	return c.Digest
}

// TestAuditRefusesInvalidUTF8: an entry with invalid UTF-8 would be stored
// with U+FFFD in its place and then fail verification as if tampered with
// (found by FuzzAuditChain); SealAudit refuses it instead.
func TestAuditRefusesInvalidUTF8(t *testing.T) {
	for _, e := range []store.AuditEntry{
		{Credential: "cred-\xff"}, {User: "\xc3"}, {Reason: "ok \xed\xa0\x80"}, {Hashes: []string{"\xfe"}},
	} {
		e.Time, e.Kind, e.Outcome = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC), store.AuditSignHash, store.AuditRefused
		raw, err := store.SealAudit(&e, 1, store.AuditGenesis())
		if !errors.Is(err, store.ErrInvalid) {
			var v store.AuditVerifier
			_, verr := v.Check(1, raw)
			t.Errorf("%+v: sealed (%v); verification says %v", e, err, verr)
		}
	}
}

// TestAuditActorFields: the actor, target, remote address and changed
// fields of an administrative entry are sealed: they round-trip through
// the canonical encoding, the digest covers each of them, and a field
// that is not valid UTF-8 or one too many is refused before sealing.
func TestAuditActorFields(t *testing.T) {
	base := func() store.AuditEntry {
		return store.AuditEntry{
			Time: time.Date(2026, 11, 27, 21, 0, 0, 0, time.UTC), Kind: store.AuditUserPasswordSet, User: "alice",
			Outcome: store.AuditOK, Actor: "uid:1001 (bob)", Target: "user:alice", IP: "192.0.2.7",
			Fields: map[string]string{"password": "changed", "revoked": "3"},
		}
	}
	e := base()
	raw, err := store.SealAudit(&e, 1, store.AuditGenesis())
	if err != nil {
		t.Fatal(err)
	}
	want := `"outcome":"ok","reason":"","ref":0,"actor":"uid:1001 (bob)","target":"user:alice","ip":"192.0.2.7","fields":{"password":"changed","revoked":"3"},"prev":`
	if !strings.Contains(string(raw), want) {
		t.Fatalf("encoding %s lacks %s", raw, want)
	}
	var v store.AuditVerifier
	got, err := v.Check(1, raw)
	if err != nil || got.Actor != e.Actor || got.Target != e.Target || got.IP != e.IP || got.Fields["password"] != "changed" {
		t.Fatalf("decoded %+v, %v", got, err)
	}
	for _, edit := range []func(*store.AuditEntry){
		func(e *store.AuditEntry) { e.Actor = "uid:0 (root)" },
		func(e *store.AuditEntry) { e.Target = "user:bob" },
		func(e *store.AuditEntry) { e.IP = "192.0.2.8" },
		func(e *store.AuditEntry) { e.Fields["password"] = "unchanged" },
	} {
		o := base()
		edit(&o)
		other, err := store.SealAudit(&o, 1, store.AuditGenesis())
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Equal(o.Digest, e.Digest) {
			t.Errorf("digest does not cover the change to %s", other)
		}
	}
	for name, edit := range map[string]func(*store.AuditEntry){
		"actor":     func(e *store.AuditEntry) { e.Actor = "uid:\xff" },
		"field key": func(e *store.AuditEntry) { e.Fields["\xc3"] = "x" },
		"too many": func(e *store.AuditEntry) {
			for i := range 40 {
				e.Fields[strings.Repeat("k", i+1)] = "v"
			}
		},
		"unknown kind": func(e *store.AuditEntry) { e.Kind = "user_teleported" },
	} {
		o := base()
		edit(&o)
		if _, err := store.SealAudit(&o, 1, store.AuditGenesis()); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("%s: sealed (%v)", name, err)
		}
	}
}
