package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/signd/signd/store"
)

// testSweepExpired sweeps 7 tokens, 5 requests, 4 codes and 3 sessions that
// have expired, besides one live record of each kind, 4 records at a time:
// every transaction but the last removes exactly 4, in the documented
// order (tokens, requests, codes, sessions; each earliest expiry first),
// and the last removes fewer, after which only the live records are left.
func testSweepExpired(t *testing.T, s store.Store) {
	now := time.Date(2030, 5, 6, 7, 8, 9, 0, time.UTC)
	counts := store.Swept{Tokens: 7, Requests: 5, Codes: 4, Sessions: 3}
	name := func(kind string, i int) string { return fmt.Sprintf("%s-%d", kind, i) }
	// Record i of a kind expired i seconds ago (a negative i is live), so
	// the earliest expiry is the highest i.
	exp := func(i int) time.Time { return now.Add(-time.Duration(i) * time.Second) }
	update(t, s, func(tx store.Tx) error {
		for i := -1; i < counts.Tokens; i++ {
			if err := tx.CreateToken(newToken(name("token", i), store.TokenAccess, "", exp(i))); err != nil {
				return err
			}
		}
		for i := -1; i < counts.Requests; i++ {
			r := newAuthRequest(name("request", i), now)
			r.ExpiresAt = exp(i)
			if err := tx.CreateAuthRequest(r); err != nil {
				return err
			}
		}
		for i := -1; i < counts.Codes; i++ {
			c := newAuthCode(name("code", i), now)
			c.ExpiresAt = exp(i)
			if err := tx.CreateCode(c); err != nil {
				return err
			}
		}
		for i := -1; i < counts.Sessions; i++ {
			sess := &store.Session{Hash: store.Fingerprint(name("session", i)), Username: "alice", AuthTime: now.Add(-time.Hour), ExpiresAt: exp(i)}
			if err := tx.CreateSession(sess); err != nil {
				return err
			}
		}
		return nil
	})

	err := s.Update(context.Background(), func(tx store.Tx) error {
		_, err := tx.SweepExpired(now, 0)
		return err
	})
	wantErr(t, "SweepExpired with limit 0", err, store.ErrInvalid)

	const limit = 4
	want := []store.Swept{
		{Tokens: 4},
		{Tokens: 3, Requests: 1},
		{Requests: 4},
		{Codes: 4},
		{Sessions: 3},
	}
	for i, w := range want {
		var n store.Swept
		update(t, s, func(tx store.Tx) (err error) {
			n, err = tx.SweepExpired(now.In(time.FixedZone("X", 3600)), limit)
			return err
		})
		if n != w {
			t.Errorf("sweep %d removed %+v, want %+v", i+1, n, w)
		}
		if i == 0 { // the four earliest tokens went first
			view(t, s, func(tx store.Tx) error {
				for j := range counts.Tokens {
					_, err := tx.Token(store.Fingerprint(name("token", j)))
					if gone := j >= counts.Tokens-limit; gone != (err != nil) {
						t.Errorf("after the first sweep, token %d: gone %v, err %v", j, gone, err)
					}
				}
				return nil
			})
		}
	}
	var n store.Swept
	update(t, s, func(tx store.Tx) (err error) {
		n, err = tx.SweepExpired(now, limit)
		return err
	})
	if n != (store.Swept{}) {
		t.Errorf("a sweep after the last removed %+v", n)
	}
	view(t, s, func(tx store.Tx) error {
		for kind, get := range map[string]func([]byte) error{
			"token":   func(h []byte) error { _, err := tx.Token(h); return err },
			"request": func(h []byte) error { _, err := tx.AuthRequest(h); return err },
			"code":    func(h []byte) error { _, err := tx.Code(h); return err },
			"session": func(h []byte) error { _, err := tx.Session(h); return err },
		} {
			if err := get(store.Fingerprint(name(kind, -1))); err != nil {
				t.Errorf("live %s: %v", kind, err)
			}
			for i := range 3 {
				if err := get(store.Fingerprint(name(kind, i))); err == nil {
					t.Errorf("expired %s %d is still stored", kind, i)
				}
			}
		}
		return nil
	})
}
