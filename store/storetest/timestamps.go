package storetest

import (
	"testing"
	"time"

	"github.com/signd/signd/store"
)

// Timestamps.

func testWallClockTimestamps(t *testing.T, s store.Store) {
	createUsers(t, s, "alice")
	before := time.Now()
	update(t, s, func(tx store.Tx) error { return tx.CreateClient(newClient("rp")) })
	after := time.Now()
	c := func() *store.Client {
		var c *store.Client
		view(t, s, func(tx store.Tx) (err error) { c, err = tx.Client("rp"); return err })
		return c
	}()
	// Stores may drop sub-microsecond precision; allow a second of slack.
	if c.CreatedAt.Before(before.Add(-time.Second)) || c.CreatedAt.After(after.Add(time.Second)) {
		t.Errorf("CreatedAt %v not within [%v, %v]", c.CreatedAt, before, after)
	}
	if !c.UpdatedAt.Equal(c.CreatedAt) {
		t.Errorf("UpdatedAt %v != CreatedAt %v after create", c.UpdatedAt, c.CreatedAt)
	}
	created := c.CreatedAt
	time.Sleep(2 * time.Millisecond) // only the wall-clock variant sleeps; RunClock does not
	c.CreatedAt = time.Unix(0, 0)
	update(t, s, func(tx store.Tx) error { return tx.PutClient(c) })
	c2 := func() *store.Client {
		var c *store.Client
		view(t, s, func(tx store.Tx) (err error) { c, err = tx.Client("rp"); return err })
		return c
	}()
	if !c2.CreatedAt.Equal(created) || !c2.UpdatedAt.After(created) {
		t.Errorf("after PutClient: CreatedAt %v (want %v), UpdatedAt %v", c2.CreatedAt, created, c2.UpdatedAt)
	}
}

func testTimestamps(t *testing.T, s store.Store, c *Clock) {
	t0 := c.Now()
	u := newUser(t, "alice")
	cl := newClient("rp")
	cr := newCredential("c1", "alice")
	u.CreatedAt, cl.UpdatedAt, cr.CreatedAt = time.Unix(1, 0), time.Unix(2, 0), time.Unix(3, 0) // ignored
	update(t, s, func(tx store.Tx) error {
		if err := tx.CreateUser(u); err != nil {
			return err
		}
		if err := tx.CreateClient(cl); err != nil {
			return err
		}
		return tx.CreateCredential(cr)
	})
	check := func(what string, created, updated, wantCreated, wantUpdated time.Time) {
		t.Helper()
		if !created.Equal(wantCreated) || !updated.Equal(wantUpdated) {
			t.Errorf("%s: CreatedAt %v, UpdatedAt %v; want %v, %v", what, created, updated, wantCreated, wantUpdated)
		}
	}
	// checkSet checks the times op (Create or Put) set on the three
	// records passed to it.
	checkSet := func(op string, wantCreated, wantUpdated time.Time) {
		t.Helper()
		check("user set by "+op+"User", u.CreatedAt, u.UpdatedAt, wantCreated, wantUpdated)
		check("client set by "+op+"Client", cl.CreatedAt, cl.UpdatedAt, wantCreated, wantUpdated)
		check("credential set by "+op+"Credential", cr.CreatedAt, cr.UpdatedAt, wantCreated, wantUpdated)
	}
	checkSet("Create", t0, t0)

	c.Advance(time.Hour)
	t1 := c.Now()
	update(t, s, func(tx store.Tx) error {
		u.FailedPINs = 1
		u.CreatedAt = t1 // ignored
		if err := tx.PutUser(u); err != nil {
			return err
		}
		cl.Name = "renamed"
		if err := tx.PutClient(cl); err != nil {
			return err
		}
		cr.Description = "renamed"
		return tx.PutCredential(cr)
	})
	checkSet("Put", t0, t1)

	c.Advance(time.Minute)
	t2 := c.Now()
	update(t, s, func(tx store.Tx) error {
		return tx.PutProof("alice", store.Proof{ProofRef: store.ProofRef{ID: "p", ContentType: store.ProofPDF}, Content: []byte("%PDF")})
	})
	view(t, s, func(tx store.Tx) error {
		u, err := tx.User("alice")
		if err != nil {
			return err
		}
		check("stored user after PutProof", u.CreatedAt, u.UpdatedAt, t0, t2)
		cl, err := tx.Client("rp")
		if err != nil {
			return err
		}
		check("stored client", cl.CreatedAt, cl.UpdatedAt, t0, t1)
		cr, err := tx.Credential("c1")
		if err != nil {
			return err
		}
		check("stored credential", cr.CreatedAt, cr.UpdatedAt, t0, t1)
		return nil
	})
}
