package store

import (
	"fmt"
	"time"
)

// Swept counts what one sweep removed, by kind.
type Swept struct {
	Tokens, Requests, Codes, Sessions int
	// AdminRequests counts the admin requests (dual control) that
	// expired unapproved; each left a pending_expired audit entry.
	AdminRequests int
}

// Total is the number of records removed.
func (n Swept) Total() int {
	return n.Tokens + n.Requests + n.Codes + n.Sessions + n.AdminRequests
}

// Add adds m's counts to n.
func (n *Swept) Add(m Swept) {
	n.Tokens += m.Tokens
	n.Requests += m.Requests
	n.Codes += m.Codes
	n.Sessions += m.Sessions
	n.AdminRequests += m.AdminRequests
}

// SweepTx removes expired records a bounded portion at a time, so that a
// sweeper holds each write transaction briefly however much has expired.
type SweepTx interface {
	// SweepExpired removes at most limit (at least 1) records that expired
	// at or before now: access tokens and SADs first, then pending
	// requests, codes and code tombstones, then login sessions, each kind
	// by its expiry index, earliest first; then expired admin requests
	// (dual control), each with a pending_expired audit entry in the same
	// transaction. Its cost follows limit (and MaxAdminRequests), not
	// what is stored. Fewer than limit removed means nothing expired at
	// now is left.
	SweepExpired(now time.Time, limit int) (Swept, error)
}

// SweepKinds is SweepExpired over a backend's per-kind deleters: each
// removes at most its argument of one kind's expired records and returns
// how many. They are called in SweepExpired's order while the limit is not
// used up.
func SweepKinds(limit int, tokens, requests, codes, sessions func(limit int) (int, error)) (Swept, error) {
	if limit < 1 {
		return Swept{}, fmt.Errorf("%w: sweep limit %d, want at least 1", ErrInvalid, limit)
	}
	var n Swept
	left := limit
	for _, k := range []struct {
		n   *int
		del func(int) (int, error)
	}{{&n.Tokens, tokens}, {&n.Requests, requests}, {&n.Codes, codes}, {&n.Sessions, sessions}} {
		if left == 0 {
			break
		}
		removed, err := k.del(left)
		if err != nil {
			return Swept{}, err
		}
		*k.n = removed
		left -= removed
	}
	return n, nil
}
