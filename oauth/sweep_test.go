package oauth_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/signd/signd/oauth"
	"github.com/signd/signd/store"
	"github.com/signd/signd/store/bolt"
	"github.com/signd/signd/store/storetest/backends"
)

// sweepSpy records, in the order the store's write lock grants them, the
// sweep transactions (with what each removed) and the other writes that
// the test marks; inSweep runs inside the i-th sweep transaction.
type sweepSpy struct {
	oauth.Store
	mu      sync.Mutex
	events  []string
	inSweep func(i int)
}

func (s *sweepSpy) record(e string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, e)
	return len(s.events)
}

func (s *sweepSpy) Update(ctx context.Context, fn func(oauth.Tx) error) error {
	return s.Store.Update(ctx, func(tx oauth.Tx) error { return fn(spyTx{tx, s}) })
}

type spyTx struct {
	oauth.Tx
	s *sweepSpy
}

func (t spyTx) SweepExpired(now time.Time, limit int) (store.Swept, error) {
	n, err := t.Tx.SweepExpired(now, limit)
	i := t.s.record(fmt.Sprintf("sweep %d", n.Total()))
	if t.s.inSweep != nil {
		t.s.inSweep(i)
	}
	return n, err
}

// TestSweepBatches: a sweep of 137 expired records with SweepBatch 10 runs
// as 14 write transactions of at most 10 records, removes every expired
// record and nothing live, and a write that queues for the store's lock
// during the second transaction (a SAD consumption) commits before the
// sweep's last transaction: the sweeper lets other writers in.
func TestSweepBatches(t *testing.T) {
	db := backends.Bolt(t, bolt.Options{})
	spy := &sweepSpy{}
	ev := buildEnv(t, db, false, func(c *oauth.Config) {
		spy.Store = c.Store
		c.Store, c.SweepBatch = spy, 10
	})
	now := ev.clock.Now()
	const tokens, sessions = 95, 42
	live := store.Fingerprint("live SAD")
	ev.update(func(tx store.Tx) error {
		for i := range tokens {
			tok := &store.Token{Hash: store.Fingerprint(fmt.Sprint("token ", i)), Kind: store.TokenAccess, ClientID: "rp",
				Username: "alice", ExpiresAt: now.Add(-time.Duration(i+1) * time.Second)}
			if err := tx.CreateToken(tok); err != nil {
				return err
			}
		}
		for i := range sessions {
			s := &store.Session{Hash: store.Fingerprint(fmt.Sprint("session ", i)), Username: "alice",
				AuthTime: now.Add(-time.Hour), ExpiresAt: now.Add(-time.Duration(i+1) * time.Second)}
			if err := tx.CreateSession(s); err != nil {
				return err
			}
		}
		return tx.CreateToken(&store.Token{Hash: live, Kind: store.TokenSAD, ClientID: "rp", Username: "alice",
			CredentialID: "cred-1", Hashes: [][]byte{make([]byte, 32)}, ExpiresAt: now.Add(time.Minute)})
	})

	var consumed sync.WaitGroup
	spy.inSweep = func(i int) {
		if i != 2 {
			return
		}
		consumed.Add(1)
		go func() { // queues for the write lock the sweep holds now
			defer consumed.Done()
			err := db.Update(context.Background(), func(tx store.Tx) error {
				spy.record("consume SAD")
				return tx.DeleteToken(live)
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	n, err := ev.srv.Sweep(context.Background())
	consumed.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if want := (oauth.Swept{Tokens: tokens, Sessions: sessions}); n != want {
		t.Errorf("swept %+v, want %+v", n, want)
	}

	var sweeps []string
	consume := -1
	for i, e := range spy.events {
		if e == "consume SAD" {
			consume = i
			continue
		}
		sweeps = append(sweeps, e)
	}
	want := slices.Repeat([]string{"sweep 10"}, 13)
	want = append(want, "sweep 7")
	if !slices.Equal(sweeps, want) {
		t.Errorf("sweep transactions %q, want %q", sweeps, want)
	}
	if last := len(spy.events) - 1; consume < 2 || consume >= last {
		t.Errorf("the SAD consumption committed at %d of %q: it did not get the lock between two sweep transactions",
			consume, strings.Join(spy.events, ", "))
	}
	ev.update(func(tx store.Tx) error {
		if _, err := tx.Token(live); err == nil {
			t.Error("the consumed SAD is still stored")
		}
		var left store.Swept
		left, err = tx.SweepExpired(now, 1000)
		if err != nil {
			return err
		}
		if left != (store.Swept{}) {
			t.Errorf("expired records left after the sweep: %+v", left)
		}
		return nil
	})
}

// TestSweepStopsWhenCanceled: a canceled sweep stops between two
// transactions and reports what the committed ones removed.
func TestSweepStopsWhenCanceled(t *testing.T) {
	spy := &sweepSpy{}
	ev := newEnv(t, func(c *oauth.Config) {
		spy.Store = c.Store
		c.Store, c.SweepBatch = spy, 5
	})
	now := ev.clock.Now()
	ev.update(func(tx store.Tx) error {
		for i := range 12 {
			s := &store.Session{Hash: store.Fingerprint(fmt.Sprint("session ", i)), Username: "alice",
				AuthTime: now.Add(-time.Hour), ExpiresAt: now.Add(-time.Second)}
			if err := tx.CreateSession(s); err != nil {
				return err
			}
		}
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	spy.inSweep = func(int) { cancel() }
	n, err := ev.srv.Sweep(ctx)
	if err == nil || n != (oauth.Swept{Sessions: 5}) {
		t.Errorf("canceled sweep = %+v, %v; want the first 5 sessions and the context's error", n, err)
	}
}
