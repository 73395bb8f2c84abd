package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/signd/signd/store"
)

// Revocation: every kind of artefact × every Revoke* method. Names are
// prefixes of each other (alice/alice2, rp/rp2, c1/c12) so that an index
// that matched by prefix would revoke too much.

// artefact is one revocable (or, for a tombstone, deliberately not
// revocable) record of the fixture.
type artefact struct {
	kind               string // access, sad, code, tombstone, request, session
	user, client, cred string // user "" = a request still at the login step
	hash               []byte
}

func (a artefact) String() string {
	return fmt.Sprintf("%s(user=%q client=%q cred=%q)", a.kind, a.user, a.client, a.cred)
}

// revokeFixture returns every combination of kind, user, client and
// credential that signd can produce.
func revokeFixture() []artefact {
	var out []artefact
	n := 0
	add := func(kind, user, client, cred string) {
		n++
		out = append(out, artefact{kind, user, client, cred, store.Fingerprint(fmt.Sprintf("%s-%d", kind, n))})
	}
	users, clients, creds := []string{"alice", "alice2"}, []string{"rp", "rp2"}, []string{"c1", "c12"}
	for _, u := range users {
		add("session", u, "", "")
		for _, c := range clients {
			add("access", u, c, "")
			add("code", u, c, "")
			add("tombstone", u, c, "")
			add("request", u, c, "")
			for _, k := range creds {
				add("sad", u, c, k)
				add("code", u, c, k)
				add("tombstone", u, c, k)
				add("request", u, c, k)
			}
		}
	}
	for _, c := range clients {
		add("request", "", c, "")
		for _, k := range creds {
			add("request", "", c, k)
		}
	}
	return out
}

func (a artefact) create(tx store.Tx, now time.Time) error {
	g := store.Grant{
		ClientID: a.client, RedirectURI: "https://rp.example.com/cb", Profile: "service",
		Scopes: []string{"service"}, Username: a.user, RequestedAt: now.Add(-time.Minute),
	}
	if a.user != "" {
		g.AuthTime = now.Add(-30 * time.Second)
	}
	if a.cred != "" {
		g.Profile, g.Scopes, g.CredentialID = "credential", []string{"credential"}, a.cred
		g.Hashes = [][]byte{bytes.Repeat([]byte{9}, 32)}
	}
	switch a.kind {
	case "access", "sad":
		t := &store.Token{Hash: a.hash, Kind: store.TokenAccess, ClientID: a.client, Username: a.user,
			Scopes: g.Scopes, ExpiresAt: now.Add(time.Hour)}
		if a.kind == "sad" {
			t.Kind, t.CredentialID, t.Hashes = store.TokenSAD, a.cred, g.Hashes
		}
		return tx.CreateToken(t)
	case "code", "tombstone":
		if err := tx.CreateCode(&store.AuthCode{Hash: a.hash, Grant: g, ExpiresAt: now.Add(time.Minute)}); err != nil {
			return err
		}
		if a.kind == "tombstone" {
			return tx.RedeemCode(a.hash, now, now.Add(time.Hour))
		}
		return nil
	case "request":
		r := &store.AuthRequest{Hash: a.hash, Grant: g, CSRFHash: store.Fingerprint("csrf"), BindingHash: store.Fingerprint("browser"),
			Stage: store.StageLogin, ExpiresAt: now.Add(time.Hour)}
		if a.user == "" {
			return tx.CreateAuthRequest(r)
		}
		// Created at the login step, moved to consent once the user logged
		// in: the index must follow the user being filled in.
		r.Username, r.AuthTime = "", time.Time{}
		if err := tx.CreateAuthRequest(r); err != nil {
			return err
		}
		r.Stage, r.Username, r.AuthTime, r.ConsentShownAt = store.StageConsent, a.user, now, now
		return tx.PutAuthRequest(r)
	case "session":
		return tx.CreateSession(&store.Session{Hash: a.hash, Username: a.user, AuthTime: now, ExpiresAt: now.Add(time.Hour)})
	}
	return fmt.Errorf("unknown artefact kind %s", a.kind)
}

// exists reports whether the artefact is still stored.
func (a artefact) exists(tx store.Tx) (bool, error) {
	var err error
	switch a.kind {
	case "access", "sad":
		_, err = tx.Token(a.hash)
	case "code", "tombstone":
		_, err = tx.Code(a.hash)
	case "request":
		_, err = tx.AuthRequest(a.hash)
	case "session":
		_, err = tx.Session(a.hash)
	}
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// revokeMethod is one Revoke* call and the rule of what it must remove.
type revokeMethod struct {
	name    string
	call    func(tx store.Tx) (store.Revoked, error)
	revokes func(a artefact) bool
}

func revokeMethods() []revokeMethod {
	live := func(a artefact) bool { return a.kind != "tombstone" }
	return []revokeMethod{
		{"RevokeUser(alice)", func(tx store.Tx) (store.Revoked, error) { return tx.RevokeUser("alice") },
			func(a artefact) bool { return live(a) && a.user == "alice" }},
		{"RevokeUserSigning(alice)", func(tx store.Tx) (store.Revoked, error) { return tx.RevokeUserSigning("alice") },
			func(a artefact) bool { return live(a) && a.user == "alice" && a.cred != "" }},
		{"RevokeClient(rp)", func(tx store.Tx) (store.Revoked, error) { return tx.RevokeClient("rp") },
			func(a artefact) bool { return live(a) && a.client == "rp" }},
		{"RevokeCredential(c1)", func(tx store.Tx) (store.Revoked, error) { return tx.RevokeCredential("c1") },
			func(a artefact) bool { return live(a) && a.cred == "c1" }},
	}
}

// count adds a to r under its kind.
func count(r *store.Revoked, a artefact) {
	switch a.kind {
	case "access":
		r.AccessTokens++
	case "sad":
		r.SADs++
	case "code":
		r.Codes++
	case "request":
		r.Requests++
	case "session":
		r.Sessions++
	}
}

// testRevoke runs each method on a fresh fixture: exactly what the rule
// says is gone, the counts say so, everything else is untouched; then every
// other method still finds exactly its remaining share (the first one left
// no index entry behind that would be counted again).
func testRevoke(t *testing.T, s store.Store) {
	now := time.Now().UTC().Round(0)
	fixture := revokeFixture()
	update(t, s, func(tx store.Tx) error {
		for _, a := range fixture {
			if err := a.create(tx, now); err != nil {
				return fmt.Errorf("%v: %w", a, err)
			}
		}
		return nil
	})
	// Each method in its own transaction that is rolled back, so all run on
	// the same fixture.
	errRollback := errors.New("roll back")
	for _, m := range revokeMethods() {
		t.Run(m.name, func(t *testing.T) {
			err := s.Update(context.Background(), func(tx store.Tx) error {
				got, err := m.call(tx)
				if err != nil {
					return err
				}
				var want store.Revoked
				for _, a := range fixture {
					ok, err := a.exists(tx)
					if err != nil {
						return err
					}
					gone := m.revokes(a)
					if gone {
						count(&want, a)
					}
					if ok == gone {
						t.Errorf("%v: stored %v after %s, want %v", a, ok, m.name, !gone)
					}
				}
				if got != want {
					t.Errorf("%s = %+v, want %+v", m.name, got, want)
				}
				if got.Total() == 0 {
					t.Errorf("%s revoked nothing: the fixture is wrong", m.name)
				}
				// The others, one after the other, find exactly what those
				// before them left.
				gone := map[int]bool{}
				for i, a := range fixture {
					gone[i] = m.revokes(a)
				}
				for _, o := range revokeMethods() {
					if o.name == m.name {
						continue
					}
					var want store.Revoked
					for i, a := range fixture {
						if o.revokes(a) && !gone[i] {
							count(&want, a)
							gone[i] = true
						}
					}
					got, err := o.call(tx)
					if err != nil {
						return err
					}
					if got != want {
						t.Errorf("%s after %s = %+v, want %+v", o.name, m.name, got, want)
					}
				}
				return errRollback
			})
			if !errors.Is(err, errRollback) {
				t.Fatal(err)
			}
		})
	}
	// The rollbacks left everything in place.
	view(t, s, func(tx store.Tx) error {
		for _, a := range fixture {
			if ok, err := a.exists(tx); err != nil || !ok {
				t.Errorf("%v after rolled back revocations: stored %v, %v", a, ok, err)
			}
		}
		return nil
	})
}

// testRevokeAfterDelete: records removed or redeemed by the ordinary paths
// (revocation of one token, SAD consumption, answering a request, logout,
// redemption, the sweeper) are not revoked again, and the rest is still
// found.
func testRevokeAfterDelete(t *testing.T, s store.Store) {
	now := time.Now().UTC().Round(0)
	fixture := revokeFixture()
	update(t, s, func(tx store.Tx) error {
		for _, a := range fixture {
			if err := a.create(tx, now); err != nil {
				return err
			}
		}
		return nil
	})
	update(t, s, func(tx store.Tx) error {
		for _, a := range fixture {
			if a.user != "alice" {
				continue
			}
			var err error
			switch a.kind {
			case "access", "sad":
				err = tx.DeleteToken(a.hash)
			case "request":
				err = tx.DeleteAuthRequest(a.hash)
			case "session":
				err = tx.DeleteSession(a.hash)
			case "code":
				err = tx.RedeemCode(a.hash, now, now.Add(time.Hour))
			}
			if err != nil {
				return fmt.Errorf("%v: %w", a, err)
			}
		}
		return nil
	})
	update(t, s, func(tx store.Tx) error {
		if got, err := tx.RevokeUser("alice"); err != nil || got != (store.Revoked{}) {
			t.Errorf("RevokeUser(alice) after her records went = %+v, %v; want nothing", got, err)
		}
		var want store.Revoked
		for _, a := range fixture {
			if a.client == "rp" && a.user != "alice" && a.kind != "tombstone" {
				count(&want, a)
			}
		}
		if got, err := tx.RevokeClient("rp"); err != nil || got != want {
			t.Errorf("RevokeClient(rp) = %+v, %v; want %+v", got, err, want)
		}
		return nil
	})
	// The sweeper removes the rest; nothing is left to revoke.
	update(t, s, func(tx store.Tx) error {
		for _, sweep := range []func(time.Time) (int, error){
			tx.DeleteExpiredTokens, tx.DeleteExpiredCodes, tx.DeleteExpiredAuthRequests, tx.DeleteExpiredSessions,
		} {
			if _, err := sweep(now.Add(24 * time.Hour)); err != nil {
				return err
			}
		}
		for _, n := range []string{"alice", "alice2", "rp", "rp2", "c1", "c12"} {
			for _, call := range []func(string) (store.Revoked, error){tx.RevokeUser, tx.RevokeUserSigning, tx.RevokeClient, tx.RevokeCredential} {
				if got, err := call(n); err != nil || got != (store.Revoked{}) {
					t.Errorf("revoke %s after the sweep = %+v, %v; want nothing", n, got, err)
				}
			}
		}
		return nil
	})
}

// testRevokeInvalid: read-only transactions, empty names and NUL bytes are
// refused; unknown names revoke nothing.
func testRevokeInvalid(t *testing.T, s store.Store) {
	calls := func(tx store.Tx) map[string]func(string) (store.Revoked, error) {
		return map[string]func(string) (store.Revoked, error){
			"RevokeUser": tx.RevokeUser, "RevokeUserSigning": tx.RevokeUserSigning,
			"RevokeClient": tx.RevokeClient, "RevokeCredential": tx.RevokeCredential,
		}
	}
	view(t, s, func(tx store.Tx) error {
		for name, call := range calls(tx) {
			_, err := call("alice")
			wantErr(t, name+" in View", err, store.ErrReadOnly)
		}
		return nil
	})
	update(t, s, func(tx store.Tx) error {
		for name, call := range calls(tx) {
			for _, bad := range []string{"", "al\x00ice"} {
				_, err := call(bad)
				wantErr(t, fmt.Sprintf("%s(%q)", name, bad), err, store.ErrInvalid)
			}
			if got, err := call("nobody"); err != nil || got != (store.Revoked{}) {
				t.Errorf("%s(nobody) = %+v, %v; want nothing", name, got, err)
			}
		}
		return nil
	})
}

// testDeleteUserAndCredential: DeleteUser refuses while credentials are
// owned and takes the proofs along; DeleteCredential frees the owner.
func testDeleteUserAndCredential(t *testing.T, s store.Store) {
	createUsers(t, s, "alice", "bob")
	update(t, s, func(tx store.Tx) error {
		if err := tx.PutProof("alice", store.Proof{ProofRef: store.ProofRef{ID: "p1", ContentType: store.ProofPNG}, Content: []byte("png")}); err != nil {
			return err
		}
		return tx.CreateCredential(newCredential("c1", "alice"))
	})
	err := s.Update(context.Background(), func(tx store.Tx) error { return tx.DeleteUser("alice") })
	wantErr(t, "DeleteUser of an owner", err, store.ErrInvalid)
	getUser(t, s, "alice") // still there
	update(t, s, func(tx store.Tx) error { return tx.DeleteCredential("c1") })
	if cs := listCredentials(t, s, "alice", "", 0); len(cs) != 0 {
		t.Errorf("credentials of alice after DeleteCredential: %v", credentialIDs(cs))
	}
	if cs := listCredentials(t, s, "", "", 0); len(cs) != 0 {
		t.Errorf("credentials after DeleteCredential: %v", credentialIDs(cs))
	}
	update(t, s, func(tx store.Tx) error { return tx.DeleteUser("alice") })
	view(t, s, func(tx store.Tx) error {
		_, err := tx.User("alice")
		wantErr(t, "User after DeleteUser", err, store.ErrNotFound)
		_, err = tx.Proof("alice", "p1")
		wantErr(t, "Proof after DeleteUser", err, store.ErrNotFound)
		_, err = tx.Credential("c1")
		wantErr(t, "Credential after DeleteCredential", err, store.ErrNotFound)
		if _, err := tx.User("bob"); err != nil {
			t.Errorf("bob after DeleteUser(alice): %v", err)
		}
		return nil
	})
	// The name is free again, and the proof did not come back with it.
	createUsers(t, s, "alice")
	if u := getUser(t, s, "alice"); len(u.Proofs) != 0 {
		t.Errorf("a new alice has proofs %v", u.Proofs)
	}
	wantErr(t, "DeleteUser(nobody)", s.Update(context.Background(), func(tx store.Tx) error { return tx.DeleteUser("nobody") }), store.ErrNotFound)
	wantErr(t, "DeleteCredential(nope)", s.Update(context.Background(), func(tx store.Tx) error { return tx.DeleteCredential("nope") }), store.ErrNotFound)
	view(t, s, func(tx store.Tx) error {
		wantErr(t, "DeleteUser in View", tx.DeleteUser("alice"), store.ErrReadOnly)
		wantErr(t, "DeleteCredential in View", tx.DeleteCredential("c1"), store.ErrReadOnly)
		return nil
	})
}
