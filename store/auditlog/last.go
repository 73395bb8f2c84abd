package auditlog

import (
	"errors"
)

// SizedRecords is Records that also tells each chain's size:
// store.AuditTx's AuditChainSize, the sequence number of the chain's
// last entry (0 when empty).
type SizedRecords interface {
	Records
	AuditChainSize(chain string) (uint64, error)
}

// lastWindow is how many entries Last reads of a chain first; each
// further read back doubles it, up to maxLastWindow.
const (
	lastWindow    = 64
	maxLastWindow = 8192
)

// errStopLast ends a window's walk at its last entry.
var errStopLast = errors.New("auditlog: end of the window")

// Last returns the last entry in cluster order (Merge's: by Rev, chain,
// Seq) for which match is true, nil when none is. It reads the chains
// backwards, a window of entries at a time from each chain's end, and
// stops reading a chain at its last match or at an entry older than the
// best match of another chain: what it reads grows with the entries
// after the one it finds, not with the log. It stops at an entry that
// does not decode (a *BrokenError); like Merge it does not check the
// chains (use Verify).
func Last(tx SizedRecords, match func(*Entry) bool) (*Entry, error) {
	chains, err := tx.AuditChains()
	if err != nil {
		return nil, err
	}
	// end is the sequence number of the chain's last entry not read yet,
	// oldest the earliest entry read.
	type cursor struct {
		chain  string
		end    uint64
		window uint64
		oldest *Entry
	}
	var live []*cursor
	for _, c := range chains {
		n, err := tx.AuditChainSize(c.Name)
		if err != nil {
			return nil, err
		}
		if n > 0 {
			live = append(live, &cursor{chain: c.Name, end: n, window: lastWindow})
		}
	}
	var best *Entry
	for len(live) > 0 {
		next := live[:0]
		for _, c := range live {
			if best != nil && c.oldest != nil && before(c.oldest, best) {
				continue // everything earlier on this chain is older still
			}
			from := uint64(1)
			if c.end > c.window {
				from = c.end - c.window + 1
			}
			var found *Entry
			err := tx.AuditChainRecords(c.chain, from, func(seq uint64, raw []byte) error {
				if seq > c.end {
					return errStopLast
				}
				e, err := Decode(raw)
				if err != nil {
					return &BrokenError{Chain: c.chain, Seq: seq, Reason: err.Error()}
				}
				if seq == from {
					c.oldest = e
				}
				if match(e) {
					found = e
				}
				return nil
			})
			if err != nil && !errors.Is(err, errStopLast) {
				return nil, err
			}
			c.end = from - 1
			c.window = min(2*c.window, maxLastWindow)
			switch {
			case found != nil:
				if best == nil || before(best, found) {
					best = found
				}
			case c.end == 0, c.oldest == nil:
			default:
				next = append(next, c)
			}
		}
		live = next
	}
	return best, nil
}

// before reports whether a comes before b in cluster order.
func before(a, b *Entry) bool {
	switch {
	case a.Rev != b.Rev:
		return a.Rev < b.Rev
	case a.Chain != b.Chain:
		return a.Chain < b.Chain
	}
	return a.Seq < b.Seq
}
