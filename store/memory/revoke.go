package memory

import "github.com/signd/signd/store"

// Revocation (store.RevokeTx) walks the party index of each expiring table.
// A party (store.Party) is one tag byte, a name and 0x00. The meta
// functions of oauth.go say which parties a record hangs on; the
// expiring tables keep the index in step with every write, so a revocation
// is one key range per table and costs what it removes.

// The RevokeTx methods: each revokes one party.

func (t *tx) RevokeUser(username string) (store.Revoked, error) {
	return t.revoke(store.PartyUser, username)
}

func (t *tx) RevokeUserSigning(username string) (store.Revoked, error) {
	return t.revoke(store.PartySigning, username)
}

func (t *tx) RevokeClient(clientID string) (store.Revoked, error) {
	return t.revoke(store.PartyClient, clientID)
}

func (t *tx) RevokeCredential(credentialID string) (store.Revoked, error) {
	return t.revoke(store.PartyCredential, credentialID)
}

// revoke removes every record filed under the party (kind, name).
func (t *tx) revoke(kind store.PartyKind, name string) (store.Revoked, error) {
	var r store.Revoked
	if err := t.writes(); err != nil {
		return r, err
	}
	if err := store.CheckRevokeName(name); err != nil {
		return r, err
	}
	p := store.Party(kind, name)
	for _, h := range t.s.tokens.filed(p) {
		if tok := t.removeToken(h); tok != nil && tok.Kind == store.TokenSAD {
			r.SADs++
		} else if tok != nil {
			r.AccessTokens++
			t.revoked(tok)
		}
	}
	r.Codes = revokeFiled(t.s.codes, p)
	r.Requests = revokeFiled(t.s.requests, p)
	r.Sessions = revokeFiled(t.s.sessions, p)
	return r, nil
}

// revokeFiled removes the records of x filed under party p and returns how
// many.
func revokeFiled[R any](x expiring[R], p string) int {
	n := 0
	for _, h := range x.filed(p) {
		if _, ok := x.remove(h); ok {
			n++
		}
	}
	return n
}
