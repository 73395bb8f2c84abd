package store

// Revocation: when an admin removes or disables what a grant hangs on (a
// user, a client, a credential, a password or PIN), everything issued on
// its strength must stop working in the same write transaction. Backends
// index every access token, SAD, unredeemed code, pending request and
// login session by the user, client and credential it is bound to, so a
// Revoke* call costs what it removes, not what is stored.

// Revoked counts what one Revoke* call removed, by kind of artefact.
type Revoked struct {
	AccessTokens int // Bearer access tokens
	SADs         int // Signature Activation Data
	Codes        int // unredeemed authorization codes
	Requests     int // pending authorization requests
	Sessions     int // login sessions (single sign-on)
}

// Total is the number of records removed.
func (r Revoked) Total() int {
	return r.AccessTokens + r.SADs + r.Codes + r.Requests + r.Sessions
}

// Plus returns the sum of r and o.
func (r Revoked) Plus(o Revoked) Revoked {
	return Revoked{
		AccessTokens: r.AccessTokens + o.AccessTokens, SADs: r.SADs + o.SADs,
		Codes: r.Codes + o.Codes, Requests: r.Requests + o.Requests, Sessions: r.Sessions + o.Sessions,
	}
}

// RevokeTx is the part of OAuthTx that revokes, in the caller's write
// transaction, what hangs on a user, a client or a credential. Each method
// removes the records and all their index entries and returns what it
// removed; inside View it returns ErrReadOnly, and a name that is empty or
// holds 0x00 is ErrInvalid. A name nothing hangs on revokes nothing (no
// ErrNotFound): the caller checks the user, client or credential itself.
//
// Redeemed codes (tombstones) are never revoked: they cannot be redeemed
// again, and they are kept so that a second redemption still revokes what
// the first issued. A pending request whose user has not logged in yet
// names no user; it hangs on its client and credential only (the login
// step checks the user).
type RevokeTx interface {
	// RevokeUser removes everything issued to username: access tokens,
	// SADs, unredeemed codes, pending requests past the login step and
	// login sessions, and raises the user's SecretGeneration (when the
	// user exists). For a disabled or removed user, or a new password.
	RevokeUser(username string) (Revoked, error)
	// RevokeUserSigning removes what a signing PIN of username approved or
	// is about to approve: the user's SADs, and the user's unredeemed codes
	// and pending requests that are bound to a credential, and raises the
	// user's SecretGeneration (when the user exists). For a new PIN.
	RevokeUserSigning(username string) (Revoked, error)
	// RevokeClient removes every access token, SAD, unredeemed code and
	// pending request of the client. For a removed client.
	RevokeClient(clientID string) (Revoked, error)
	// RevokeCredential removes every SAD, unredeemed code and pending
	// request bound to the credential. For a disabled or removed
	// credential.
	RevokeCredential(credentialID string) (Revoked, error)
}

// RevocationReader reads the revocation generation: a counter, stored with
// the records, that every committed write which could make a working
// access token stop working raises in its own transaction. Those writes
// are the removal of an access token (DeleteToken, DeleteTokensByCode,
// every Revoke* that removes one), a client changed or removed
// (PutClient, DeleteClient) and a user whose Status changed or who was
// removed (PutUser, DeleteUser). Consuming a SAD, sweeping expired tokens
// and counting failed logins leave it alone, so a cache of bearer
// verdicts survives the signing traffic.
//
// A reader that saw generation g together with a token, its client and
// its user may keep that verdict while the generation reads g: nothing
// that could refuse the token has committed since. The counter never goes
// down (a new store starts at 0) and is shared by every process and node
// that writes the store, so another process's revocation is seen by the
// next transaction that reads it.
type RevocationReader interface {
	// RevocationGeneration returns the current generation.
	RevocationGeneration() (uint64, error)
}
