package auditlog

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/signd/signd/store/storeerr"
)

// sealedEntry is a stored audit entry as AppendAudit wrote it.
type sealedEntry struct {
	seq uint64
	raw []byte
}

// seedAuditEntries are real entries: a granted signHash with its algorithm, a refusal with
// its hash summary, an HSM failure referring to its grant, and admin
// operations.
var seedAuditEntries = []Entry{
	{Time: time.Date(2026, 3, 4, 5, 6, 7, 8, time.UTC), Kind: SignHash, User: "alice", Client: "rp1", Credential: "kr3e3rdpe6muvlifxu2m3wpecu",
		Hashes: []string{"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"}, SignAlgo: "1.2.840.113549.1.1.1",
		HashAlgo: "2.16.840.1.101.3.4.2.1", Outcome: Granted},
	{Time: time.Date(2026, 3, 4, 5, 6, 8, 0, time.UTC), Kind: SignHash, User: "alice", Client: "rp1", Credential: "kr3e3rdpe6muvlifxu2m3wpecu",
		HashCount: 101, HashesSHA256: "5f70bf18a086007016e948b04aed3b82103a36bea41755b6cddfaf10ace3c6ef", Outcome: Refused,
		Reason: "Too many hashes: at most 100 per request"},
	{Time: time.Date(2026, 3, 4, 5, 6, 9, 0, time.FixedZone("CET", 3600)), Kind: SignHash, User: "alice", Client: "rp1",
		Credential: "kr3e3rdpe6muvlifxu2m3wpecu", Outcome: Failed, Reason: "signing device busy or unavailable", Ref: 1},
	{Time: time.Date(2026, 3, 5, 0, 0, 0, 0, time.UTC), Kind: CredentialEnrolled, User: "alice", Credential: "kr3e3rdpe6muvlifxu2m3wpecu",
		Outcome: "enabled", Reason: "certificate chain imported: CN=Alice <Jansen> & \"Co\",O=Example B.V.,C=NL", Rev: 7},
	{Time: time.Date(2026, 3, 6, 0, 0, 0, 0, time.UTC), Kind: CredentialDisabled, User: "alice", Credential: "x", Outcome: "disabled", Rev: 9},
}

// sealChain seals entries 1..n as AppendAudit does.
func sealChain(t testing.TB, entries []Entry) []sealedEntry {
	prev := Genesis()
	out := make([]sealedEntry, len(entries))
	for i := range entries {
		e := entries[i]
		raw, err := Seal(&e, uint64(i+1), prev)
		if err != nil {
			t.Fatalf("entry %d: %v", i+1, err)
		}
		out[i], prev = sealedEntry{uint64(i + 1), raw}, e.Digest
	}
	return out
}

// verify runs the chain check over stored entries, as Verify does.
func verify(stored []sealedEntry) (uint64, []byte, error) {
	var v Verifier
	for _, s := range stored {
		if _, err := v.Check(s.seq, s.raw); err != nil {
			return v.Count(), v.Head(), err
		}
	}
	return v.Count(), v.Head(), nil
}

// FuzzDecodeAuditEntry decodes stored audit entries: an accepted one is
// exactly the canonical encoding of what it decodes to (so any other
// spelling of the same entry is refused), with 32-byte prev and digest.
func FuzzDecodeAuditEntry(f *testing.F) {
	for _, s := range sealChain(f, seedAuditEntries) {
		f.Add(s.raw)
	}
	node := seedAuditEntries[0]
	node.Chain, node.Rev = "node-1.example", 1234
	if raw, err := Seal(&node, 1, Genesis()); err != nil {
		f.Fatal(err)
	} else {
		f.Add(raw)
	}
	f.Add([]byte(`{"seq":1}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		e, err := Decode(raw)
		if err != nil {
			if e != nil || err.Error() == "" {
				t.Fatalf("%q: %v", raw, err)
			}
			return
		}
		again, err := Encode(e)
		if err != nil || !bytes.Equal(again, raw) {
			t.Fatalf("%q decodes, but re-encodes as %q (%v)", raw, again, err)
		}
		if len(e.Prev) != 32 || len(e.Digest) != 32 {
			t.Fatalf("%q: prev %x digest %x", raw, e.Prev, e.Digest)
		}
	})
}

// FuzzAuditChain seals a chain of entries with fuzzed content, then
// tampers with it as someone with write access to the file could. The
// untouched chain always verifies (an entry AppendAudit accepts is never
// later reported as tampered); a changed byte is caught at that entry; an
// entry re-sealed with a new digest is caught at the next one (or, the
// last, changes the head digest); a removed or reordered entry is caught
// where the sequence breaks; and cutting the tail leaves a shorter chain
// with the new last entry's digest as head.
func FuzzAuditChain(f *testing.F) {
	f.Add("alice", "rp1", "kr3e3rdpe6muvlifxu2m3wpecu", "unknown SAD", int64(1772600767000000008), uint8(0), uint8(0), uint16(40), uint8(1))
	f.Add("bob", "", "", "certificate chain imported: CN=Bob", int64(0), uint8(1), uint8(1), uint16(0), uint8(2))
	f.Add("a\u2028<b>&", "rp\x00", "\xff", "r", int64(-1), uint8(2), uint8(2), uint16(300), uint8(3))
	f.Add("x", "y", "z", "", int64(253402300799999999), uint8(3), uint8(4), uint16(7), uint8(4))
	f.Fuzz(func(t *testing.T, user, client, cred, reason string, nanos int64, kind, op uint8, pos uint16, which uint8) {
		kinds := []Kind{SignHash, CredentialEnrolled, CredentialEnabled, CredentialDisabled}
		middle := Entry{
			Time: time.Unix(0, nanos).UTC(), Kind: kinds[int(kind)%len(kinds)], User: user, Client: client,
			Credential: cred, Outcome: Refused, Reason: reason, Hashes: []string{reason}, Ref: uint64(pos),
		}
		entries := append(append([]Entry{}, seedAuditEntries[:2]...), middle, seedAuditEntries[3])
		prev := Genesis()
		stored := make([]sealedEntry, len(entries))
		for i := range entries {
			raw, err := Seal(&entries[i], uint64(i+1), prev)
			if err != nil {
				if i == 2 && errors.Is(err, storeerr.ErrInvalid) {
					return // refused at append: nothing stored
				}
				t.Fatalf("entry %d: %v", i+1, err)
			}
			stored[i], prev = sealedEntry{uint64(i + 1), raw}, entries[i].Digest
		}
		n, head, err := verify(stored)
		if err != nil || n != uint64(len(stored)) || !bytes.Equal(head, prev) {
			t.Fatalf("untouched chain: %d entries, %v (entry 3 %q)", n, err, stored[2].raw)
		}

		k := int(which) % len(stored) // the entry tampered with
		tampered := make([]sealedEntry, len(stored))
		for i := range stored {
			tampered[i] = sealedEntry{stored[i].seq, bytes.Clone(stored[i].raw)}
		}
		wantBroken := uint64(k + 1)
		switch op % 5 {
		case 0: // change one byte
			raw := tampered[k].raw
			i := int(pos) % len(raw)
			raw[i] ^= byte(pos>>8) | 1
		case 1: // re-seal changed content with a correct digest
			e := entries[k]
			e.Reason += "!"
			raw, err := Seal(&e, uint64(k+1), entries[k].Prev)
			if err != nil {
				t.Fatal(err)
			}
			tampered[k].raw = raw
			if k == len(stored)-1 {
				n, head, err := verify(tampered)
				if err != nil || n != uint64(len(stored)) || bytes.Equal(head, prev) {
					t.Fatalf("re-sealed last entry: %d, %v, head unchanged %v", n, err, bytes.Equal(head, prev))
				}
				return
			}
			wantBroken = uint64(k + 2)
		case 2: // remove an entry
			if k == len(stored)-1 {
				k--
			}
			tampered = append(tampered[:k], tampered[k+1:]...)
			wantBroken = uint64(k + 1)
		case 3: // swap two entries' contents
			j := (k + 1) % len(stored)
			tampered[k].raw, tampered[j].raw = tampered[j].raw, tampered[k].raw
			wantBroken = uint64(min(k, j) + 1)
		case 4: // cut the tail
			tampered = tampered[:k]
			n, head, err := verify(tampered)
			want := Genesis()
			if k > 0 {
				want = entries[k-1].Digest
			}
			if err != nil || n != uint64(k) || !bytes.Equal(head, want) {
				t.Fatalf("cut to %d: %d entries, %v", k, n, err)
			}
			return
		}
		_, _, err = verify(tampered)
		var broken *BrokenError
		if !errors.As(err, &broken) || broken.Seq != wantBroken || broken.Reason == "" {
			t.Fatalf("op %d on entry %d: %v, want broken at %d", op%5, k+1, err, wantBroken)
		}
	})
}
