package store

import (
	"fmt"
	"strings"
)

// PartyKind tags what a revocation party names (RevokeTx).
type PartyKind byte

// The parties a grant hangs on.
const (
	// PartyUser: everything of the user (tokens, SADs, codes, requests
	// past the login step, sessions).
	PartyUser PartyKind = 'u'
	// PartySigning: what the user's signing PIN approved: SADs, and codes
	// and requests bound to a credential.
	PartySigning PartyKind = 's'
	// PartyClient: everything of the client.
	PartyClient PartyKind = 'c'
	// PartyCredential: SADs, codes and requests bound to the credential.
	PartyCredential PartyKind = 'k'
)

// Party names one party in a backend's revocation index: the kind's tag
// byte, the name and 0x00 (which names cannot hold), so that one party's
// entries are one key range and a name that is a prefix of another never
// reaches the other's. store/bolt keeps it in its files: it never changes.
func Party(kind PartyKind, name string) string { return string(kind) + name + "\x00" }

// GrantParties are the parties of a token, an unredeemed code or a pending
// request: its client, its user (once known), its credential, and the
// user's signing party when both are known. Empty names are left out.
func GrantParties(client, user, credential string) []string {
	var ps []string
	if client != "" {
		ps = append(ps, Party(PartyClient, client))
	}
	if user != "" {
		ps = append(ps, Party(PartyUser, user))
	}
	if credential != "" {
		ps = append(ps, Party(PartyCredential, credential))
		if user != "" {
			ps = append(ps, Party(PartySigning, user))
		}
	}
	return ps
}

// SessionParties are the parties of a login session: its user.
func SessionParties(user string) []string { return []string{Party(PartyUser, user)} }

// CheckRevokeName is the RevokeTx rule on names: a name that is empty or
// holds 0x00 is ErrInvalid.
func CheckRevokeName(name string) error {
	if name == "" || strings.IndexByte(name, 0) >= 0 {
		return fmt.Errorf("%w: revoke needs a name without NUL bytes", ErrInvalid)
	}
	return nil
}
