package auditlog

import (
	"errors"
	"fmt"
	"testing"
)

func (l *chainsLog) AuditChainSize(chain string) (uint64, error) {
	return uint64(len(l.chains[chain])), nil
}

// countingLog counts the entries a walk hands out.
type countingLog struct {
	*chainsLog
	read int
}

func (l *countingLog) AuditChainRecords(chain string, from uint64, fn func(uint64, []byte) error) error {
	return l.chainsLog.AuditChainRecords(chain, from, func(seq uint64, raw []byte) error {
		l.read++
		return fn(seq, raw)
	})
}

func name(e *Entry) string {
	if e == nil {
		return "none"
	}
	return fmt.Sprintf("%s%d@%d", e.Chain, e.Seq, e.Rev)
}

// TestLastClusterOrder: Last is the last match in Merge's order, by
// (Rev, chain, Seq), across the chains.
func TestLastClusterOrder(t *testing.T) {
	l := threeChains(t)
	tests := []struct {
		name  string
		match func(*Entry) bool
		want  string
	}{
		{"every entry", func(*Entry) bool { return true }, "b4@20"},
		{"up to rev 12: b after a", func(e *Entry) bool { return e.Rev <= 12 }, "b3@12"},
		{"one chain", func(e *Entry) bool { return e.Chain == "a" }, "a4@12"},
		{"chain \"\" only", func(e *Entry) bool { return e.Chain == "" }, "2@0"},
		{"an early entry", func(e *Entry) bool { return e.Chain == "b" && e.Seq == 1 }, "b1@3"},
		{"none", func(*Entry) bool { return false }, "none"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := Last(l, tt.match)
			if err != nil || name(e) != tt.want {
				t.Fatalf("Last = %s, %v; want %s", name(e), err, tt.want)
			}
		})
	}
	l.chains["a"][3].raw = []byte("garbage")
	_, err := Last(l, func(e *Entry) bool { return e.Chain == "a" })
	var be *BrokenError
	if !errors.As(err, &be) || be.Chain != "a" || be.Seq != 4 {
		t.Fatalf("Last over a garbled entry = %v", err)
	}
}

// TestLastReadsBackwards: Last reads what comes after the entry it finds,
// not the log: a match near the end of a long chain reads one window; a
// chain with no match stops at the first entry older than another chain's
// match; no match at all reads every entry once.
func TestLastReadsBackwards(t *testing.T) {
	const n = 20000
	revs := make([]int64, n)
	for i := range revs {
		revs[i] = int64(10 + i)
	}
	one := &countingLog{chainsLog: &chainsLog{infos: []ChainInfo{{Name: "", Registered: true, Stored: true}},
		chains: map[string][]sealedEntry{"": sealRevs(t, "", revs...)}}}
	e, err := Last(one, func(e *Entry) bool { return e.Seq == n-10 })
	if err != nil || e == nil || e.Seq != n-10 || one.read > lastWindow {
		t.Fatalf("Last near the end = %s, %v after reading %d entries; want entry %d within %d", name(e), err, one.read, n-10, lastWindow)
	}
	one.read = 0
	if e, err := Last(one, func(*Entry) bool { return false }); err != nil || e != nil || one.read < n || one.read > n+32 {
		t.Fatalf("Last without a match = %s, %v after reading %d entries; want none after %d", name(e), err, one.read, n)
	}

	// Chain "a" has no match and every entry older than b's match.
	two := &countingLog{chainsLog: &chainsLog{
		infos:  []ChainInfo{{Name: "", Registered: true, Stored: true}, {Name: "a", Registered: true, Stored: true}, {Name: "b", Registered: true, Stored: true}},
		chains: map[string][]sealedEntry{"a": sealRevs(t, "a", revs...), "b": sealRevs(t, "b", 1, n+100)},
	}}
	e, err = Last(two, func(e *Entry) bool { return e.Chain == "b" })
	if err != nil || name(e) != fmt.Sprintf("b2@%d", n+100) || two.read > lastWindow+2 {
		t.Fatalf("Last = %s, %v after reading %d entries; want b2 within %d", name(e), err, two.read, lastWindow+2)
	}
}
