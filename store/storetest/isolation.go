package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/signd/signd/store"
)

// overlap is how long a test that makes two transactions overlap waits for
// the other one. A backend whose readers run beside the writer (bbolt's
// MVCC, snapshots) answers at once; one that makes them wait (a lock)
// answers after the wait. The assertions hold either way, so the wait only
// bounds the test, it never decides its outcome.
const overlap = 100 * time.Millisecond

// testIsolation: a View never sees what a running Update wrote before it
// commits, nor anything of an Update that fails; and it reads the same
// values however long it runs, even while an Update commits.
func testIsolation(t *testing.T, s store.Store) {
	ctx := context.Background()
	createUsers(t, s, "alice")
	bob := newUser(t, "bob")
	errRollback := errors.New("roll back")

	written, readerDone := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(readerDone)
		<-written
		err := s.View(ctx, func(tx store.Tx) error {
			if _, err := tx.User("bob"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("a View saw bob, created by an Update that has not committed (err %v)", err)
			}
			if u, err := tx.User("alice"); err != nil || u.FailedPasswords != 0 {
				t.Errorf("a View saw alice changed by an Update that has not committed: %+v, %v", u, err)
			}
			if _, err := tx.Token(store.Fingerprint("sad")); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("a View saw a token of an Update that has not committed (err %v)", err)
			}
			if n, _, err := store.VerifyAudit(tx); err != nil || n != 0 {
				t.Errorf("a View saw %d audit entries of an Update that has not committed (err %v)", n, err)
			}
			return nil
		})
		if err != nil {
			t.Error(err)
		}
	})
	err := s.Update(ctx, func(tx store.Tx) error {
		if err := tx.CreateUser(bob); err != nil {
			return err
		}
		u, err := tx.User("alice")
		if err != nil {
			return err
		}
		u.FailedPasswords = 3
		if err := tx.PutUser(u); err != nil {
			return err
		}
		if err := tx.CreateToken(newToken("sad", store.TokenSAD, "", time.Now().Add(time.Hour))); err != nil {
			return err
		}
		if err := tx.AppendAudit(auditEntry("alice", 1)); err != nil {
			return err
		}
		close(written)
		select {
		case <-readerDone:
		case <-time.After(overlap):
		}
		return errRollback
	})
	wg.Wait()
	if !errors.Is(err, errRollback) {
		t.Fatalf("Update = %v", err)
	}

	// Repeatable reads: an Update commits while a View runs.
	inView, committed := make(chan struct{}), make(chan struct{})
	carol := newUser(t, "carol")
	wg.Go(func() {
		defer close(committed)
		<-inView
		err := s.Update(ctx, func(tx store.Tx) error {
			u, err := tx.User("alice")
			if err != nil {
				return err
			}
			u.FailedPasswords = 7
			if err := tx.PutUser(u); err != nil {
				return err
			}
			return tx.CreateUser(carol)
		})
		if err != nil {
			t.Error(err)
		}
	})
	err = s.View(ctx, func(tx store.Tx) error {
		if _, err := tx.User("alice"); err != nil {
			return err
		}
		close(inView)
		select {
		case <-committed:
		case <-time.After(overlap):
		}
		u, err := tx.User("alice")
		if err != nil {
			return err
		}
		if u.FailedPasswords != 0 {
			t.Errorf("a running View saw alice change to %d failures", u.FailedPasswords)
		}
		if _, err := tx.User("carol"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("a running View saw carol appear (err %v)", err)
		}
		users, err := tx.Users()
		if err != nil {
			return err
		}
		if len(users) != 1 {
			t.Errorf("a running View lists %d users, want 1", len(users))
		}
		return nil
	})
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if got := getUser(t, s, "alice").FailedPasswords; got != 7 {
		t.Errorf("after both: alice has %d failures, want 7", got)
	}
	getUser(t, s, "carol")
}

// testRollbackIndexes: a failed Update that wrote every kind of OAuth,
// OIDC and audit record leaves the records and every index as they were:
// the by-code, expiry and party indexes find exactly what they found before
// (no entry lost, none added), and the audit log continues without a gap.
func testRollbackIndexes(t *testing.T, s store.Store) {
	ctx := context.Background()
	now := time.Now().UTC().Round(0)
	fixture := revokeFixture()
	byCode := []*store.Token{
		newToken("at-code-1", store.TokenAccess, "code-x", now.Add(time.Hour)),
		newToken("at-code-2", store.TokenAccess, "code-x", now.Add(time.Hour)),
	}
	for _, tok := range byCode {
		tok.ClientID, tok.Username = "rp3", "carol" // nothing the revocations below name
	}
	key := newSigningKey("kid-a", now)
	update(t, s, func(tx store.Tx) error {
		for _, a := range fixture {
			if err := a.create(tx, now); err != nil {
				return err
			}
		}
		for _, tok := range byCode {
			if err := tx.CreateToken(tok); err != nil {
				return err
			}
		}
		if err := tx.CreateSigningKey(key); err != nil {
			return err
		}
		return tx.AppendAudit(auditEntry("alice", 1))
	})

	far := now.Add(24 * time.Hour)
	updateRolledBack(t, s, func(tx store.Tx) error {
		// New records of every kind, one of them under a code.
		extra := []artefact{
			{"access", "alice", "rp", "", store.Fingerprint("new-access")},
			{"sad", "alice", "rp", "c1", store.Fingerprint("new-sad")},
			{"code", "alice", "rp", "c1", store.Fingerprint("new-code")},
			{"request", "alice", "rp", "c1", store.Fingerprint("new-request")},
			{"session", "alice", "", "", store.Fingerprint("new-session")},
		}
		for _, a := range extra {
			if err := a.create(tx, now); err != nil {
				return err
			}
		}
		if err := tx.CreateToken(newToken("at-code-3", store.TokenAccess, "code-x", now.Add(time.Hour))); err != nil {
			return err
		}
		// Changes that move index entries: a request to another user and
		// expiry, a code redeemed (it leaves the party index).
		for _, a := range fixture {
			switch {
			case a.kind == "request" && a.user == "alice2":
				r, err := tx.AuthRequest(a.hash)
				if err != nil {
					return err
				}
				r.Username, r.ExpiresAt = "alice", far.Add(time.Hour)
				if err := tx.PutAuthRequest(r); err != nil {
					return err
				}
			case a.kind == "code" && a.user == "alice2":
				if err := tx.RedeemCode(a.hash, now, far.Add(time.Hour)); err != nil {
					return err
				}
			}
		}
		// Removals by every path.
		if _, err := tx.DeleteTokensByCode(store.Fingerprint("code-x")); err != nil {
			return err
		}
		for _, m := range revokeMethods() {
			if _, err := m.call(tx); err != nil {
				return err
			}
		}
		for _, sweep := range []func(time.Time) (int, error){
			tx.DeleteExpiredTokens, tx.DeleteExpiredCodes, tx.DeleteExpiredAuthRequests, tx.DeleteExpiredSessions,
		} {
			if _, err := sweep(far); err != nil {
				return err
			}
		}
		k := *key
		k.State, k.ActivatedAt = store.SigningKeyActive, now
		if err := tx.PutSigningKey(&k); err != nil {
			return err
		}
		if err := tx.CreateSigningKey(newSigningKey("kid-b", now)); err != nil {
			return err
		}
		return tx.AppendAudit(auditEntry("alice", 2))
	})

	// Every record is back; none of the new ones stayed.
	view(t, s, func(tx store.Tx) error {
		for _, a := range fixture {
			if ok, err := a.exists(tx); err != nil || !ok {
				t.Errorf("%v after rollback: stored %v, %v", a, ok, err)
			}
			if a.kind == "code" {
				if c, err := tx.Code(a.hash); err == nil && !c.RedeemedAt.IsZero() {
					t.Errorf("%v is redeemed after rollback", a)
				}
			}
			if a.kind == "request" && a.user == "alice2" {
				if r, err := tx.AuthRequest(a.hash); err == nil && r.Username != "alice2" {
					t.Errorf("%v belongs to %q after rollback", a, r.Username)
				}
			}
		}
		for _, v := range []string{"new-access", "new-sad", "at-code-3"} {
			if _, err := tx.Token(store.Fingerprint(v)); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("token %s after rollback: %v", v, err)
			}
		}
		if _, err := tx.Code(store.Fingerprint("new-code")); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("new code after rollback: %v", err)
		}
		if _, err := tx.AuthRequest(store.Fingerprint("new-request")); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("new request after rollback: %v", err)
		}
		if _, err := tx.Session(store.Fingerprint("new-session")); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("new session after rollback: %v", err)
		}
		ks, err := tx.SigningKeys()
		if err != nil {
			return err
		}
		if len(ks) != 1 || ks[0].KID != "kid-a" || ks[0].State != store.SigningKeyNext {
			t.Errorf("signing keys after rollback: %+v", ks)
		}
		return nil
	})

	// The indexes find exactly the fixture: each check runs in an Update
	// that is rolled back in turn, so all see the same records.
	errRollback := errors.New("roll back")
	check := func(name string, fn func(tx store.Tx) error) {
		t.Helper()
		if err := s.Update(ctx, func(tx store.Tx) error {
			if err := fn(tx); err != nil {
				return err
			}
			return errRollback
		}); !errors.Is(err, errRollback) {
			t.Errorf("%s: %v", name, err)
		}
	}
	for _, m := range revokeMethods() {
		check(m.name, func(tx store.Tx) error {
			var want store.Revoked
			for _, a := range fixture {
				if m.revokes(a) {
					count(&want, a)
				}
			}
			got, err := m.call(tx)
			if err == nil && got != want {
				t.Errorf("%s after a rolled back Update = %+v, want %+v", m.name, got, want)
			}
			return err
		})
	}
	check("DeleteTokensByCode", func(tx store.Tx) error {
		n, err := tx.DeleteTokensByCode(store.Fingerprint("code-x"))
		if err == nil && n != len(byCode) {
			t.Errorf("DeleteTokensByCode after a rolled back Update = %d, want %d", n, len(byCode))
		}
		return err
	})
	check("sweep", func(tx store.Tx) error {
		kinds := map[string]int{}
		for _, a := range fixture {
			kinds[a.kind]++
		}
		for _, sw := range []struct {
			name  string
			sweep func(time.Time) (int, error)
			want  int
		}{
			{"tokens", tx.DeleteExpiredTokens, kinds["access"] + kinds["sad"] + len(byCode)},
			{"codes", tx.DeleteExpiredCodes, kinds["code"] + kinds["tombstone"]},
			{"requests", tx.DeleteExpiredAuthRequests, kinds["request"]},
			{"sessions", tx.DeleteExpiredSessions, kinds["session"]},
		} {
			n, err := sw.sweep(far)
			if err != nil {
				return err
			}
			if n != sw.want {
				t.Errorf("sweeping %s after a rolled back Update removed %d, want %d", sw.name, n, sw.want)
			}
		}
		return nil
	})
	appendAfterRollback(t, s)
}

// testCopiesOAuth is testCopies for tokens, pending requests, codes,
// sessions and signing keys: neither what was passed in nor what was read
// aliases what is stored.
func testCopiesOAuth(t *testing.T, s store.Store) {
	now := time.Now().UTC().Round(0)
	exp := now.Add(time.Hour)
	sad := newToken("sad", store.TokenSAD, "code", exp)
	at := newToken("at", store.TokenAccess, "code", exp)
	req := newAuthRequest("request", now)
	code := newAuthCode("code", now)
	sess := &store.Session{Hash: store.Fingerprint("session"), Username: "alice", AuthTime: now, ExpiresAt: exp}
	key := newSigningKey("kid", now)
	wantKey := bytes.Clone(key.PublicKey)
	update(t, s, func(tx store.Tx) error {
		for _, err := range []error{
			tx.CreateToken(sad), tx.CreateToken(at), tx.CreateAuthRequest(req), tx.CreateCode(code),
			tx.CreateSession(sess), tx.CreateSigningKey(key),
		} {
			if err != nil {
				return err
			}
		}
		return nil
	})

	// mutate changes every slice and map a record holds.
	mutateGrant := func(g *store.Grant) {
		g.Scopes[0] = "admin"
		g.Hashes[0][0] ^= 0xff
		g.Params["description"] = "forged"
		g.Consented["email"][0] ^= 0xff
		g.Consented["forged"] = []byte{1}
	}
	mutate := func(sad, at *store.Token, r *store.AuthRequest, c *store.AuthCode, s *store.Session, k *store.SigningKey) {
		for _, tok := range []*store.Token{sad, at} {
			tok.Hash[0] ^= 0xff
			tok.Scopes[0] = "admin"
			tok.CodeHash[0] ^= 0xff
		}
		sad.Hashes[0][0] ^= 0xff
		at.Consented["email"][0] ^= 0xff
		at.Consented["forged"] = []byte{1}
		r.Hash[0] ^= 0xff
		r.CSRFHash[0] ^= 0xff
		r.BindingHash[0] ^= 0xff
		mutateGrant(&r.Grant)
		c.Hash[0] ^= 0xff
		mutateGrant(&c.Grant)
		s.Hash[0] ^= 0xff
		k.KeyID[0] ^= 0xff
		k.PublicKey[0] ^= 0xff
	}
	// What was passed in.
	mutate(sad, at, req, code, sess, key)
	// What was read, inside the transaction (and kept after it).
	read := func(change bool) (sad, at *store.Token, r *store.AuthRequest, c *store.AuthCode, ss *store.Session, k *store.SigningKey) {
		view(t, s, func(tx store.Tx) (err error) {
			if sad, err = tx.Token(store.Fingerprint("sad")); err != nil {
				return err
			}
			if at, err = tx.Token(store.Fingerprint("at")); err != nil {
				return err
			}
			if r, err = tx.AuthRequest(store.Fingerprint("request")); err != nil {
				return err
			}
			if c, err = tx.Code(store.Fingerprint("code")); err != nil {
				return err
			}
			if ss, err = tx.Session(store.Fingerprint("session")); err != nil {
				return err
			}
			ks, err := tx.SigningKeys()
			if err != nil {
				return err
			}
			if len(ks) != 1 {
				t.Fatalf("%d signing keys", len(ks))
			}
			k = &ks[0]
			if change {
				mutate(sad, at, r, c, ss, k)
			}
			return nil
		})
		return
	}
	mutate(read(true))

	gotSAD, gotAT, gotReq, gotCode, gotSess, gotKey := read(false)
	wantSAD, wantAT := newToken("sad", store.TokenSAD, "code", exp), newToken("at", store.TokenAccess, "code", exp)
	for _, tc := range []struct{ got, want *store.Token }{{gotSAD, wantSAD}, {gotAT, wantAT}} {
		if !bytes.Equal(tc.got.Hash, tc.want.Hash) || tc.got.Scopes[0] != tc.want.Scopes[0] ||
			!bytes.Equal(tc.got.CodeHash, tc.want.CodeHash) || len(tc.got.Hashes) != len(tc.want.Hashes) ||
			len(tc.got.Consented) != len(tc.want.Consented) {
			t.Errorf("mutating a token changed the store: %+v", tc.got)
		}
	}
	if !bytes.Equal(gotSAD.Hashes[0], wantSAD.Hashes[0]) {
		t.Errorf("mutating a SAD changed its hashes: %x", gotSAD.Hashes)
	}
	if !gotAT.Consented.Equal("email", wantAT.Consented["email"]) {
		t.Errorf("mutating a token changed its consent record: %v", gotAT.Consented)
	}
	wantReq, wantCode := newAuthRequest("request", now), newAuthCode("code", now)
	sameGrant(t, "request after mutations", gotReq.Grant, wantReq.Grant)
	sameGrant(t, "code after mutations", gotCode.Grant, wantCode.Grant)
	if !bytes.Equal(gotReq.Hash, wantReq.Hash) || !bytes.Equal(gotReq.CSRFHash, wantReq.CSRFHash) ||
		!bytes.Equal(gotReq.BindingHash, wantReq.BindingHash) || !bytes.Equal(gotCode.Hash, wantCode.Hash) {
		t.Errorf("mutating a request or code changed its hashes: %x %x %x %x", gotReq.Hash, gotReq.CSRFHash, gotReq.BindingHash, gotCode.Hash)
	}
	if !bytes.Equal(gotSess.Hash, store.Fingerprint("session")) {
		t.Errorf("mutating a session changed its hash: %x", gotSess.Hash)
	}
	if string(gotKey.KeyID) != "hsm-kid" || !bytes.Equal(gotKey.PublicKey, wantKey) {
		t.Errorf("mutating a signing key changed the store: %q %x", gotKey.KeyID, gotKey.PublicKey)
	}
}

// testReadOnlyAll: every write method of store.Tx fails with ErrReadOnly
// inside View, even with valid arguments, and changes nothing.
func testReadOnlyAll(t *testing.T, s store.Store) {
	now := time.Now().UTC().Round(0)
	exp := now.Add(time.Hour)
	createUsers(t, s, "alice", "bob")
	key := newSigningKey("kid", now)
	update(t, s, func(tx store.Tx) error {
		for _, err := range []error{
			tx.CreateClient(newClient("rp")),
			tx.CreateCredential(newCredential("c1", "alice")),
			tx.CreateToken(newToken("sad", store.TokenSAD, "code", now)), // expires now: sweepable
			tx.CreateAuthRequest(newAuthRequest("request", now.Add(-2*time.Hour))),
			tx.CreateCode(newAuthCode("code", now.Add(-time.Hour))),
			tx.CreateSession(&store.Session{Hash: store.Fingerprint("session"), Username: "alice", AuthTime: now, ExpiresAt: now}),
			tx.CreateSigningKey(key),
		} {
			if err != nil {
				return err
			}
		}
		return nil
	})
	put := func(tx store.Tx) error {
		r, err := tx.AuthRequest(store.Fingerprint("request"))
		if err != nil {
			return err
		}
		r.Stage, r.Username, r.AuthTime = store.StageConsent, "alice", now
		return tx.PutAuthRequest(r)
	}
	n := func(f func(time.Time) (int, error)) error { _, err := f(exp); return err }
	r := func(f func(string) (store.Revoked, error), name string) error { _, err := f(name); return err }
	writes := []struct {
		name string
		fn   func(tx store.Tx) error
	}{
		{"DeleteUser", func(tx store.Tx) error { return tx.DeleteUser("bob") }},
		{"DeleteCredential", func(tx store.Tx) error { return tx.DeleteCredential("c1") }},
		{"CreateToken", func(tx store.Tx) error { return tx.CreateToken(newToken("at", store.TokenAccess, "", exp)) }},
		{"DeleteToken", func(tx store.Tx) error { return tx.DeleteToken(store.Fingerprint("sad")) }},
		{"DeleteTokensByCode", func(tx store.Tx) error { _, err := tx.DeleteTokensByCode(store.Fingerprint("code")); return err }},
		{"DeleteExpiredTokens", func(tx store.Tx) error { return n(tx.DeleteExpiredTokens) }},
		{"CreateAuthRequest", func(tx store.Tx) error { return tx.CreateAuthRequest(newAuthRequest("other", now)) }},
		{"PutAuthRequest", put},
		{"DeleteAuthRequest", func(tx store.Tx) error { return tx.DeleteAuthRequest(store.Fingerprint("request")) }},
		{"DeleteExpiredAuthRequests", func(tx store.Tx) error { return n(tx.DeleteExpiredAuthRequests) }},
		{"CreateCode", func(tx store.Tx) error { return tx.CreateCode(newAuthCode("other", now)) }},
		{"RedeemCode", func(tx store.Tx) error { return tx.RedeemCode(store.Fingerprint("code"), now, exp) }},
		{"DeleteExpiredCodes", func(tx store.Tx) error { return n(tx.DeleteExpiredCodes) }},
		{"CreateSession", func(tx store.Tx) error {
			return tx.CreateSession(&store.Session{Hash: store.Fingerprint("other"), Username: "alice", AuthTime: now, ExpiresAt: exp})
		}},
		{"DeleteSession", func(tx store.Tx) error { return tx.DeleteSession(store.Fingerprint("session")) }},
		{"DeleteExpiredSessions", func(tx store.Tx) error { return n(tx.DeleteExpiredSessions) }},
		{"SweepExpired", func(tx store.Tx) error { _, err := tx.SweepExpired(exp, 10); return err }},
		{"CreateSigningKey", func(tx store.Tx) error { return tx.CreateSigningKey(newSigningKey("other", now)) }},
		{"PutSigningKey", func(tx store.Tx) error {
			k := *key
			k.State, k.ActivatedAt = store.SigningKeyActive, now
			return tx.PutSigningKey(&k)
		}},
		{"DeleteSigningKey", func(tx store.Tx) error { return tx.DeleteSigningKey("kid") }},
		{"AppendAudit", func(tx store.Tx) error { return tx.AppendAudit(auditEntry("alice", 1)) }},
		{"RevokeUser", func(tx store.Tx) error { return r(tx.RevokeUser, "alice") }},
		{"RevokeUserSigning", func(tx store.Tx) error { return r(tx.RevokeUserSigning, "alice") }},
		{"RevokeClient", func(tx store.Tx) error { return r(tx.RevokeClient, "rp") }},
		{"RevokeCredential", func(tx store.Tx) error { return r(tx.RevokeCredential, "cred-1") }},
	}
	for _, w := range writes {
		t.Run(w.name, func(t *testing.T) {
			wantErr(t, w.name+" in View", s.View(context.Background(), w.fn), store.ErrReadOnly)
		})
	}
	// Nothing changed: the records are as created.
	view(t, s, func(tx store.Tx) error {
		if _, err := tx.User("bob"); err != nil {
			t.Errorf("user: %v", err)
		}
		if _, err := tx.Credential("c1"); err != nil {
			t.Errorf("credential: %v", err)
		}
		if _, err := tx.Token(store.Fingerprint("sad")); err != nil {
			t.Errorf("token: %v", err)
		}
		for _, h := range []string{"at", "other"} {
			if _, err := tx.Token(store.Fingerprint(h)); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("token %s: %v", h, err)
			}
		}
		if r, err := tx.AuthRequest(store.Fingerprint("request")); err != nil || r.Stage != store.StageLogin {
			t.Errorf("request: %+v, %v", r, err)
		}
		if c, err := tx.Code(store.Fingerprint("code")); err != nil || !c.RedeemedAt.IsZero() {
			t.Errorf("code: %+v, %v", c, err)
		}
		if _, err := tx.Session(store.Fingerprint("session")); err != nil {
			t.Errorf("session: %v", err)
		}
		if ks, err := tx.SigningKeys(); err != nil || len(ks) != 1 || ks[0].State != store.SigningKeyNext {
			t.Errorf("signing keys: %+v, %v", ks, err)
		}
		if n, _, err := store.VerifyAudit(tx); err != nil || n != 0 {
			t.Errorf("audit: %d entries, %v", n, err)
		}
		return nil
	})
	// The same writes are accepted in an Update, so the refusals above were
	// the read-only rule and nothing else. Each runs alone and is rolled
	// back.
	errRollback := errors.New("roll back")
	for _, w := range writes {
		err := s.Update(context.Background(), func(tx store.Tx) error {
			if err := w.fn(tx); err != nil {
				return err
			}
			return errRollback
		})
		if !errors.Is(err, errRollback) {
			t.Errorf("%s in Update: %v", w.name, err)
		}
	}
}

// testClose: Close waits for a running transaction, which commits; after
// Close, View and Update fail without calling fn. (The backend's test
// closes the store again at cleanup: a second Close must succeed.)
func testClose(t *testing.T, s store.Store) {
	ctx := context.Background()
	createUsers(t, s, "alice")
	bob := newUser(t, "bob")
	entered, release := make(chan struct{}), make(chan struct{})
	updated, closed := make(chan error, 1), make(chan error, 1)
	go func() {
		updated <- s.Update(ctx, func(tx store.Tx) error {
			close(entered)
			<-release
			return tx.CreateUser(bob)
		})
	}()
	<-entered
	go func() { closed <- s.Close() }()
	var closeErr error
	early := false
	select {
	case closeErr = <-closed:
		t.Errorf("Close returned (%v) while an Update was running", closeErr)
		early = true
	case <-time.After(overlap):
	}
	close(release)
	if err := <-updated; err != nil {
		t.Errorf("the Update running at Close: %v", err)
	}
	if !early {
		closeErr = <-closed
	}
	if closeErr != nil {
		t.Errorf("Close: %v", closeErr)
	}
	called := false
	fn := func(store.Tx) error { called = true; return nil }
	if err := s.View(ctx, fn); err == nil {
		t.Error("View after Close succeeded")
	}
	if err := s.Update(ctx, fn); err == nil {
		t.Error("Update after Close succeeded")
	}
	if called {
		t.Error("fn ran after Close")
	}
}

// testConsistentReads: every Update creates a user and appends an audit
// entry; Views running meanwhile, listing both, always see whole
// transactions (as many users as entries) and an intact chain.
func testConsistentReads(t *testing.T, s store.Store) {
	const writers, updates, readers = 4, 10, 4
	ctx := context.Background()
	start, done := make(chan struct{}), make(chan struct{})
	users := make([][]*store.User, writers)
	for w := range writers {
		for i := range updates {
			users[w] = append(users[w], newUser(t, fmt.Sprintf("user%d-%d", w, i)))
		}
	}
	var writing, reading sync.WaitGroup
	for w := range writers {
		writing.Go(func() {
			<-start
			for i, u := range users[w] {
				err := s.Update(ctx, func(tx store.Tx) error {
					if err := tx.CreateUser(u); err != nil {
						return err
					}
					return tx.AppendAudit(auditEntry(u.Username, i))
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for range readers {
		reading.Go(func() {
			<-start
			for {
				err := s.View(ctx, func(tx store.Tx) error {
					us, err := tx.Users()
					if err != nil {
						return err
					}
					n, _, err := store.VerifyAudit(tx)
					if err != nil {
						return err
					}
					if uint64(len(us)) != n {
						t.Errorf("a View saw %d users and %d audit entries: part of a transaction", len(us), n)
					}
					return nil
				})
				if err != nil {
					t.Error(err)
				}
				select {
				case <-done:
					return
				default:
				}
			}
		})
	}
	close(start)
	writing.Wait()
	close(done)
	reading.Wait()
	if n, _ := verifyAudit(t, s); n != writers*updates {
		t.Errorf("%d audit entries, want %d", n, writers*updates)
	}
}
