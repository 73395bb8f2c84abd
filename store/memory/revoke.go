package memory

import (
	"fmt"
	"strings"

	"github.com/signd/signd/store"
)

// Revocation (store.RevokeTx) walks the party index of each expiring table.
// A party is one tag byte, a name and 0x00 (which names cannot hold):
//
//	'u' username     everything of the user (tokens, SADs, codes, requests
//	                 past the login step, sessions)
//	's' username     what the user's signing PIN approved: SADs, and codes
//	                 and requests bound to a credential
//	'c' client ID    everything of the client
//	'k' credential   SADs, codes and requests bound to the credential
//
// The meta functions of oauth.go say which parties a record hangs on; the
// expiring tables keep the index in step with every write, so a revocation
// is one key range per table and costs what it removes.

const (
	partyUser       = 'u'
	partySigning    = 's'
	partyClient     = 'c'
	partyCredential = 'k'
)

func party(tag byte, name string) string { return string(tag) + name + "\x00" }

// grantParties are the parties of a token, an unredeemed code or a pending
// request: its client, its user (once known), its credential, and the
// user's signing party when both are known. Empty names are left out.
func grantParties(client, user, credential string) []string {
	ps := make([]string, 0, 4)
	if client != "" {
		ps = append(ps, party(partyClient, client))
	}
	if user != "" {
		ps = append(ps, party(partyUser, user))
	}
	if credential != "" {
		ps = append(ps, party(partyCredential, credential))
		if user != "" {
			ps = append(ps, party(partySigning, user))
		}
	}
	return ps
}

// RevokeUser implements store.RevokeTx.
func (t *tx) RevokeUser(username string) (store.Revoked, error) {
	return t.revoke(partyUser, username)
}

// RevokeUserSigning implements store.RevokeTx.
func (t *tx) RevokeUserSigning(username string) (store.Revoked, error) {
	return t.revoke(partySigning, username)
}

// RevokeClient implements store.RevokeTx.
func (t *tx) RevokeClient(clientID string) (store.Revoked, error) {
	return t.revoke(partyClient, clientID)
}

// RevokeCredential implements store.RevokeTx.
func (t *tx) RevokeCredential(credentialID string) (store.Revoked, error) {
	return t.revoke(partyCredential, credentialID)
}

// revoke removes every record filed under the party (tag, name).
func (t *tx) revoke(tag byte, name string) (store.Revoked, error) {
	var r store.Revoked
	if err := t.writes(); err != nil {
		return r, err
	}
	if name == "" || strings.IndexByte(name, 0) >= 0 {
		return r, fmt.Errorf("%w: revoke needs a name without NUL bytes", store.ErrInvalid)
	}
	p := party(tag, name)
	for _, h := range t.s.tokens.filed(p) {
		if tok := t.removeToken(h); tok != nil && tok.Kind == store.TokenSAD {
			r.SADs++
		} else if tok != nil {
			r.AccessTokens++
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
