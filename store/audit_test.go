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
