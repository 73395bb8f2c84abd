package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/signd/signd/store"
)

// Pending authorization requests, codes and login sessions.

func newGrant(now time.Time) store.Grant {
	return store.Grant{
		ClientID: "rp", RedirectURI: "https://rp.example.com/cb", RedirectURISent: true,
		Scopes: []string{"credential"}, Profile: "credential", CredentialID: "cred-1",
		Hashes: [][]byte{bytes.Repeat([]byte{9}, 32)}, Params: map[string]string{"description": "invoice"},
		CodeChallenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM", CodeChallengeMethod: "S256",
		Nonce: "n-0S6_WzA2Mj", Lang: "en", SSO: true, Prompt: "login", MaxAge: 90 * time.Second,
		HasMaxAge: true, RequestedAt: now.Add(-time.Minute), PINVerified: true,
		Consented: store.ConsentRecord{"email": bytes.Repeat([]byte{1}, 32), "given_name": bytes.Repeat([]byte{2}, 32)},
	}
}

func newAuthRequest(handle string, now time.Time) *store.AuthRequest {
	return &store.AuthRequest{
		Hash: store.Fingerprint(handle), Grant: newGrant(now), State: "af0ifjsldkj",
		CSRFHash: store.Fingerprint("csrf-" + handle), BindingHash: store.Fingerprint("browser-" + handle),
		Stage: store.StageLogin, ExpiresAt: now.Add(time.Hour),
	}
}

func newAuthCode(code string, now time.Time) *store.AuthCode {
	g := newGrant(now)
	g.Username, g.AuthTime = "alice", now.Add(-30*time.Second)
	return &store.AuthCode{Hash: store.Fingerprint(code), Grant: g, ExpiresAt: now.Add(time.Minute)}
}

// sameGrant compares grants by instant for the times.
func sameGrant(t *testing.T, what string, got, want store.Grant) {
	t.Helper()
	if !got.AuthTime.Equal(want.AuthTime) || !got.RequestedAt.Equal(want.RequestedAt) {
		t.Errorf("%s: times %v/%v, want %v/%v", what, got.AuthTime, got.RequestedAt, want.AuthTime, want.RequestedAt)
	}
	got.AuthTime, got.RequestedAt, want.AuthTime, want.RequestedAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}

func testAuthRequests(t *testing.T, s store.Store) {
	now := time.Now().UTC().Round(0)
	r := newAuthRequest("h1", now)
	update(t, s, func(tx store.Tx) error { return tx.CreateAuthRequest(r) })
	if r.CreatedAt.IsZero() {
		t.Error("CreateAuthRequest did not set CreatedAt")
	}
	var got *store.AuthRequest
	view(t, s, func(tx store.Tx) (err error) { got, err = tx.AuthRequest(store.Fingerprint("h1")); return err })
	sameGrant(t, "AuthRequest", got.Grant, r.Grant)
	if got.State != r.State || !bytes.Equal(got.CSRFHash, r.CSRFHash) || !bytes.Equal(got.BindingHash, r.BindingHash) ||
		got.Stage != store.StageLogin ||
		!got.ExpiresAt.Equal(r.ExpiresAt) || !got.CreatedAt.Equal(r.CreatedAt) || !got.ConsentShownAt.IsZero() {
		t.Errorf("AuthRequest = %+v, want %+v", got, r)
	}

	// Move to consent: user, auth time, consent shown, a later expiry.
	got.Stage, got.Username, got.AuthTime = store.StageConsent, "alice", now
	got.ConsentShownAt, got.ExpiresAt = now, now.Add(2*time.Hour)
	created := got.CreatedAt
	got.CreatedAt = time.Time{}
	update(t, s, func(tx store.Tx) error { return tx.PutAuthRequest(got) })
	var again *store.AuthRequest
	view(t, s, func(tx store.Tx) (err error) { again, err = tx.AuthRequest(store.Fingerprint("h1")); return err })
	if again.Stage != store.StageConsent || again.Username != "alice" || !again.AuthTime.Equal(now) ||
		!again.ConsentShownAt.Equal(now) || !again.ExpiresAt.Equal(now.Add(2*time.Hour)) || !again.CreatedAt.Equal(created) {
		t.Errorf("after PutAuthRequest: %+v", again)
	}
	// The expiry index moved: the old expiry sweeps nothing, the new one the request.
	var n int
	update(t, s, func(tx store.Tx) (err error) { n, err = tx.DeleteExpiredAuthRequests(now.Add(time.Hour)); return err })
	if n != 0 {
		t.Errorf("sweep at the old expiry removed %d", n)
	}

	ctx := context.Background()
	err := s.Update(ctx, func(tx store.Tx) error { return tx.CreateAuthRequest(newAuthRequest("h1", now)) })
	wantErr(t, "second CreateAuthRequest", err, store.ErrAlreadyExists)
	err = s.Update(ctx, func(tx store.Tx) error { return tx.PutAuthRequest(newAuthRequest("nope", now)) })
	wantErr(t, "PutAuthRequest(unknown)", err, store.ErrNotFound)
	err = s.View(ctx, func(tx store.Tx) error { return tx.DeleteAuthRequest(store.Fingerprint("h1")) })
	wantErr(t, "DeleteAuthRequest in View", err, store.ErrReadOnly)
	update(t, s, func(tx store.Tx) error { return tx.DeleteAuthRequest(store.Fingerprint("h1")) })
	err = s.Update(ctx, func(tx store.Tx) error { return tx.DeleteAuthRequest(store.Fingerprint("h1")) })
	wantErr(t, "second DeleteAuthRequest", err, store.ErrNotFound)
	err = s.View(ctx, func(tx store.Tx) error { _, err := tx.AuthRequest(store.Fingerprint("h1")); return err })
	wantErr(t, "AuthRequest after delete", err, store.ErrNotFound)

	bad := map[string]func(*store.AuthRequest){
		"short hash":           func(r *store.AuthRequest) { r.Hash = r.Hash[:4] },
		"no csrf":              func(r *store.AuthRequest) { r.CSRFHash = nil },
		"no browser binding":   func(r *store.AuthRequest) { r.BindingHash = nil },
		"short binding":        func(r *store.AuthRequest) { r.BindingHash = r.BindingHash[:31] },
		"unknown stage":        func(r *store.AuthRequest) { r.Stage = "done" },
		"consent without user": func(r *store.AuthRequest) { r.Stage = store.StageConsent },
		"no expiry":            func(r *store.AuthRequest) { r.ExpiresAt = time.Time{} },
		"no client":            func(r *store.AuthRequest) { r.ClientID = "" },
		"no redirect":          func(r *store.AuthRequest) { r.RedirectURI = "" },
		"no profile":           func(r *store.AuthRequest) { r.Profile = "" },
		"no request time":      func(r *store.AuthRequest) { r.RequestedAt = time.Time{} },
		"pkce plain":           func(r *store.AuthRequest) { r.CodeChallengeMethod = "plain" },
		"hashes without cred":  func(r *store.AuthRequest) { r.CredentialID = "" },
		"consent without name": func(r *store.AuthRequest) { r.Consented[""] = []byte{1} },
		"consent no digest":    func(r *store.AuthRequest) { r.Consented["x"] = nil },
		"consent long digest":  func(r *store.AuthRequest) { r.Consented["x"] = make([]byte, 65) },
		"consent control char": func(r *store.AuthRequest) { r.Consented["a\nb"] = []byte{1} },
		"consent too many": func(r *store.AuthRequest) {
			for i := range store.MaxConsentItems {
				r.Consented[fmt.Sprint("c", i)] = []byte{1}
			}
		},
	}
	wantInvalid(t, s, bad, func(name string) *store.AuthRequest { return newAuthRequest("bad "+name, now) }, store.Tx.CreateAuthRequest)
}

func testCodes(t *testing.T, s store.Store) {
	now := time.Now().UTC().Round(0)
	c := newAuthCode("code-1", now)
	update(t, s, func(tx store.Tx) error { return tx.CreateCode(c) })
	var got *store.AuthCode
	view(t, s, func(tx store.Tx) (err error) { got, err = tx.Code(store.Fingerprint("code-1")); return err })
	sameGrant(t, "Code", got.Grant, c.Grant)
	if !got.ExpiresAt.Equal(c.ExpiresAt) || !got.RedeemedAt.IsZero() || got.CreatedAt.IsZero() {
		t.Errorf("Code = %+v", got)
	}

	ctx := context.Background()
	err := s.Update(ctx, func(tx store.Tx) error { return tx.CreateCode(newAuthCode("code-1", now)) })
	wantErr(t, "second CreateCode", err, store.ErrAlreadyExists)

	// Redeem, keeping the tombstone an hour past the code's expiry.
	keep := now.Add(time.Hour)
	update(t, s, func(tx store.Tx) error { return tx.RedeemCode(store.Fingerprint("code-1"), now, keep) })
	view(t, s, func(tx store.Tx) (err error) { got, err = tx.Code(store.Fingerprint("code-1")); return err })
	if !got.RedeemedAt.Equal(now) || !got.ExpiresAt.Equal(keep) {
		t.Errorf("after RedeemCode: redeemed %v expires %v, want %v and %v", got.RedeemedAt, got.ExpiresAt, now, keep)
	}
	err = s.Update(ctx, func(tx store.Tx) error { return tx.RedeemCode(store.Fingerprint("code-1"), now, keep) })
	wantErr(t, "second RedeemCode", err, store.ErrCodeRedeemed)
	err = s.Update(ctx, func(tx store.Tx) error { return tx.RedeemCode(store.Fingerprint("nope"), now, keep) })
	wantErr(t, "RedeemCode(unknown)", err, store.ErrNotFound)
	err = s.View(ctx, func(tx store.Tx) error { return tx.RedeemCode(store.Fingerprint("code-1"), now, keep) })
	wantErr(t, "RedeemCode in View", err, store.ErrReadOnly)

	// The tombstone outlives the code's own expiry and goes at keepUntil.
	var n int
	update(t, s, func(tx store.Tx) (err error) { n, err = tx.DeleteExpiredCodes(c.ExpiresAt); return err })
	if n != 0 {
		t.Errorf("sweep at the code's expiry removed %d tombstones", n)
	}
	update(t, s, func(tx store.Tx) (err error) { n, err = tx.DeleteExpiredCodes(keep); return err })
	if n != 1 {
		t.Errorf("sweep at keepUntil removed %d, want 1", n)
	}
	err = s.View(ctx, func(tx store.Tx) error { _, err := tx.Code(store.Fingerprint("code-1")); return err })
	wantErr(t, "Code after sweep", err, store.ErrNotFound)

	// A keepUntil before the expiry keeps the expiry.
	update(t, s, func(tx store.Tx) error { return tx.CreateCode(newAuthCode("code-2", now)) })
	update(t, s, func(tx store.Tx) error { return tx.RedeemCode(store.Fingerprint("code-2"), now, now) })
	view(t, s, func(tx store.Tx) (err error) { got, err = tx.Code(store.Fingerprint("code-2")); return err })
	if !got.ExpiresAt.Equal(now.Add(time.Minute)) {
		t.Errorf("tombstone expiry %v, want the code's %v", got.ExpiresAt, now.Add(time.Minute))
	}

	bad := map[string]func(*store.AuthCode){
		"short hash":   func(c *store.AuthCode) { c.Hash = c.Hash[:4] },
		"no user":      func(c *store.AuthCode) { c.Username = "" },
		"no auth time": func(c *store.AuthCode) { c.AuthTime = time.Time{} },
		"no expiry":    func(c *store.AuthCode) { c.ExpiresAt = time.Time{} },
		"redeemed":     func(c *store.AuthCode) { c.RedeemedAt = now },
		"no client":    func(c *store.AuthCode) { c.ClientID = "" },
		"bad consent":  func(c *store.AuthCode) { c.Consented["x"] = nil },
	}
	wantInvalid(t, s, bad, func(name string) *store.AuthCode { return newAuthCode("bad "+name, now) }, store.Tx.CreateCode)
}

func testSessions(t *testing.T, s store.Store) {
	now := time.Now().UTC().Round(0)
	sess := &store.Session{Hash: store.Fingerprint("cookie"), Username: "alice", AuthTime: now, ExpiresAt: now.Add(8 * time.Hour)}
	update(t, s, func(tx store.Tx) error { return tx.CreateSession(sess) })
	var got *store.Session
	view(t, s, func(tx store.Tx) (err error) { got, err = tx.Session(store.Fingerprint("cookie")); return err })
	if got.Username != "alice" || !got.AuthTime.Equal(now) || !got.ExpiresAt.Equal(sess.ExpiresAt) ||
		got.CreatedAt.IsZero() || !bytes.Equal(got.Hash, sess.Hash) {
		t.Errorf("Session = %+v", got)
	}
	ctx := context.Background()
	err := s.Update(ctx, func(tx store.Tx) error {
		return tx.CreateSession(&store.Session{Hash: store.Fingerprint("cookie"), Username: "bob", AuthTime: now, ExpiresAt: now})
	})
	wantErr(t, "second CreateSession", err, store.ErrAlreadyExists)
	for name, bad := range map[string]*store.Session{
		"short hash": {Hash: []byte{1}, Username: "a", AuthTime: now, ExpiresAt: now},
		"no user":    {Hash: store.Fingerprint("x"), AuthTime: now, ExpiresAt: now},
		"no expiry":  {Hash: store.Fingerprint("x"), Username: "a", AuthTime: now},
	} {
		err := s.Update(ctx, func(tx store.Tx) error { return tx.CreateSession(bad) })
		wantErr(t, name, err, store.ErrInvalid)
	}
	update(t, s, func(tx store.Tx) error { return tx.DeleteSession(store.Fingerprint("cookie")) })
	err = s.Update(ctx, func(tx store.Tx) error { return tx.DeleteSession(store.Fingerprint("cookie")) })
	wantErr(t, "second DeleteSession", err, store.ErrNotFound)
}

// testExpiredFlows sweeps requests, codes and sessions around their expiry:
// at or before now goes, later stays; the time zone of now does not matter.
func testExpiredFlows(t *testing.T, s store.Store) {
	now := time.Date(2030, 5, 6, 7, 8, 9, 0, time.UTC)
	offsets := []time.Duration{-time.Hour, -time.Second, 0, time.Nanosecond, time.Hour}
	name := func(i int) string { return string(rune('a' + i)) }
	update(t, s, func(tx store.Tx) error {
		for i, d := range offsets {
			r := newAuthRequest(name(i), now)
			r.ExpiresAt = now.Add(d)
			if err := tx.CreateAuthRequest(r); err != nil {
				return err
			}
			c := newAuthCode(name(i), now)
			c.ExpiresAt = now.Add(d)
			if err := tx.CreateCode(c); err != nil {
				return err
			}
			sess := &store.Session{Hash: store.Fingerprint(name(i)), Username: "alice", AuthTime: now, ExpiresAt: now.Add(d)}
			if err := tx.CreateSession(sess); err != nil {
				return err
			}
		}
		return nil
	})
	var nr, nc, ns int
	update(t, s, func(tx store.Tx) (err error) {
		at := now.In(time.FixedZone("X", 5*3600))
		if nr, err = tx.DeleteExpiredAuthRequests(at); err != nil {
			return err
		}
		if nc, err = tx.DeleteExpiredCodes(at); err != nil {
			return err
		}
		ns, err = tx.DeleteExpiredSessions(at)
		return err
	})
	if nr != 3 || nc != 3 || ns != 3 {
		t.Errorf("swept %d requests, %d codes, %d sessions; want 3 each", nr, nc, ns)
	}
	view(t, s, func(tx store.Tx) error {
		for i := range offsets {
			h := store.Fingerprint(name(i))
			alive := i >= 3
			_, er := tx.AuthRequest(h)
			_, ec := tx.Code(h)
			_, es := tx.Session(h)
			for what, err := range map[string]error{"request": er, "code": ec, "session": es} {
				if alive != (err == nil) {
					t.Errorf("%s %d: alive %v, err %v", what, i, alive, err)
				}
			}
		}
		return nil
	})
}

// testConcurrentRedeem shows the single-use gate: of N goroutines redeeming
// the same code, each in its own Update, exactly one succeeds.
func testConcurrentRedeem(t *testing.T, s store.Store) {
	now := time.Now()
	update(t, s, func(tx store.Tx) error { return tx.CreateCode(newAuthCode("once", now)) })
	const n = 20
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins, redeemed := 0, 0
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.Update(context.Background(), func(tx store.Tx) error {
				return tx.RedeemCode(store.Fingerprint("once"), time.Now(), time.Time{})
			})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				wins++
			case errors.Is(err, store.ErrCodeRedeemed):
				redeemed++
			default:
				t.Errorf("redeem: %v", err)
			}
		}()
	}
	wg.Wait()
	if wins != 1 || redeemed != n-1 {
		t.Errorf("wins %d, already redeemed %d; want 1 and %d", wins, redeemed, n-1)
	}
}
