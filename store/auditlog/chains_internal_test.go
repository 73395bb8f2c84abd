package auditlog

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// chainsLog is a log of several chains in memory, as a store holds them.
type chainsLog struct {
	infos  []ChainInfo
	chains map[string][]sealedEntry
}

func (l *chainsLog) AuditChains() ([]ChainInfo, error) { return l.infos, nil }

func (l *chainsLog) AuditChainRecords(chain string, from uint64, fn func(uint64, []byte) error) error {
	for _, s := range l.chains[chain] {
		if s.seq < from {
			continue
		}
		if err := fn(s.seq, s.raw); err != nil {
			return err
		}
	}
	return nil
}

// sealRevs seals one entry per rev as chain's entries 1, 2, ...
func sealRevs(t *testing.T, chain string, revs ...int64) []sealedEntry {
	t.Helper()
	prev := Genesis()
	var out []sealedEntry
	for i, rev := range revs {
		e := Entry{Time: time.Date(2030, 1, 1, 0, 0, i, 0, time.UTC), Kind: SignHash, User: chain, Outcome: Granted, Chain: chain, Rev: rev}
		raw, err := Seal(&e, uint64(i+1), prev)
		if err != nil {
			t.Fatal(err)
		}
		out, prev = append(out, sealedEntry{uint64(i + 1), raw}), e.Digest
	}
	return out
}

func threeChains(t *testing.T) *chainsLog {
	return &chainsLog{
		infos: []ChainInfo{{Name: "", Registered: true, Stored: true}, {Name: "a", Registered: true, Stored: true}, {Name: "b", Registered: true, Stored: true}},
		chains: map[string][]sealedEntry{
			"":  sealRevs(t, "", 0, 0),
			"a": sealRevs(t, "a", 5, 5, 9, 12),
			"b": sealRevs(t, "b", 3, 5, 12, 20),
		},
	}
}

// TestMergeClusterOrder: Merge interleaves the chains by (Rev, chain,
// Seq); AuditChainRecords' from applies to each chain; an error of fn
// stops it.
func TestMergeClusterOrder(t *testing.T) {
	l := threeChains(t)
	var got []string
	err := Merge(l, 1, func(e *Entry, raw []byte) error {
		if !bytes.Contains(raw, []byte(fmt.Sprintf(`"seq":%d`, e.Seq))) {
			t.Errorf("raw %s is not entry %d's", raw, e.Seq)
		}
		got = append(got, fmt.Sprintf("%s%d@%d", e.Chain, e.Seq, e.Rev))
		return nil
	})
	want := "1@0 2@0 b1@3 a1@5 a2@5 b2@5 a3@9 a4@12 b3@12 b4@20"
	if err != nil || strings.Join(got, " ") != want {
		t.Fatalf("Merge = %v, %s; want %s", err, strings.Join(got, " "), want)
	}
	got = nil
	stop := errors.New("stop")
	err = Entries(l, 3, func(e *Entry) error {
		got = append(got, fmt.Sprintf("%s%d", e.Chain, e.Seq))
		if len(got) == 2 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || strings.Join(got, " ") != "a3 a4" {
		t.Fatalf("Entries from 3 = %v, %v", err, got)
	}
	// An entry that does not decode names its chain.
	l.chains["b"][1].raw = []byte("garbage")
	err = Merge(l, 1, func(*Entry, []byte) error { return nil })
	var be *BrokenError
	if !errors.As(err, &be) || be.Chain != "b" || be.Seq != 2 {
		t.Fatalf("Merge over a garbled entry = %v", err)
	}
}

// TestVerifyChains: every chain verified from its first entry; the log's
// head is the digest of the heads, and a single chain "" keeps its own.
func TestVerifyChains(t *testing.T) {
	l := threeChains(t)
	heads, err := VerifyChains(l)
	if err != nil || len(heads) != 3 || heads[1].Size != 4 || heads[2].Size != 4 {
		t.Fatalf("VerifyChains = %+v, %v", heads, err)
	}
	n, head, err := Verify(l)
	if err != nil || n != 10 || !bytes.Equal(head, HeadsDigest(heads)) {
		t.Fatalf("Verify = %d, %x, %v", n, head, err)
	}
	one := &chainsLog{infos: l.infos[:1], chains: map[string][]sealedEntry{"": l.chains[""]}}
	n, head, err = Verify(one)
	var last Entry
	if d, derr := Decode(l.chains[""][1].raw); derr == nil {
		last = *d
	}
	if err != nil || n != 2 || !bytes.Equal(head, last.Digest) {
		t.Fatalf("Verify of chain \"\" alone = %d, %x, %v; want 2, %x", n, head, err, last.Digest)
	}
	for name, tc := range map[string]struct {
		change      func(l *chainsLog)
		chain       string
		seq         uint64
		wantContent string
	}{
		"unregistered": {func(l *chainsLog) { l.infos[2].Registered = false }, "b", 0, "not in the registry"},
		"not stored":   {func(l *chainsLog) { l.infos[1].Stored = false }, "a", 0, "no entries"},
		"empty":        {func(l *chainsLog) { l.chains["a"] = nil }, "a", 0, "no entries"},
		"rev down":     {func(l *chainsLog) { l.chains["b"] = sealRevs(t, "b", 3, 5, 4) }, "b", 3, "below the previous"},
		"moved":        {func(l *chainsLog) { l.chains["b"] = sealRevs(t, "a", 3) }, "b", 1, `sealed in chain "a"`},
	} {
		t.Run(name, func(t *testing.T) {
			l := threeChains(t)
			tc.change(l)
			_, _, err := Verify(l)
			var be *BrokenError
			if !errors.As(err, &be) || be.Chain != tc.chain || be.Seq != tc.seq || !strings.Contains(be.Reason, tc.wantContent) {
				t.Fatalf("Verify = %v; want broken at %d of chain %q (%s)", err, tc.seq, tc.chain, tc.wantContent)
			}
		})
	}
}

// TestCheckChain: chain names are short lowercase words.
func TestCheckChain(t *testing.T) {
	for _, ok := range []string{"a", "n1", "node-1.example.org", "0", "a_b", strings.Repeat("x", 63)} {
		if err := CheckChain(ok); err != nil {
			t.Errorf("CheckChain(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "-a", ".a", "_a", "A", "a/b", "a b", "a\x00", "é", strings.Repeat("x", 64)} {
		if err := CheckChain(bad); err == nil {
			t.Errorf("CheckChain(%q) accepted", bad)
		}
	}
}
