package store

import "context"

// Tx is one transaction: every role interface below, composed. Every
// backend implements all of it; a consumer declares, in its own package, the
// narrower interface it uses (composed from the roles) and sees the store
// through [Scope].
//
// Inside View, every write returns ErrReadOnly. Returned records are copies:
// safe to keep after the transaction ends (bbolt bytes are not). A Tx must
// not be used after the function it was passed to returns, nor from another
// goroutine.
type Tx interface {
	UserTx
	ClientTx
	CredentialTx
	OAuthTx
	AuditTx
	OIDCTx
	AdminRequestTx
}

// UserReader looks up one user.
type UserReader interface {
	// User returns the user with that username, or ErrNotFound.
	User(username string) (*User, error)
}

// ProofReader reads the identity proof documents of a user.
type ProofReader interface {
	// Proof returns one proof document of a user, or ErrNotFound.
	Proof(username, id string) (*Proof, error)
}

// UserTx holds users and their identity proof documents.
type UserTx interface {
	UserReader
	ProofReader
	// Users returns every user, sorted by username.
	Users() ([]User, error)
	// CreateUser validates and stores a new user (ErrAlreadyExists if the
	// username is taken). It sets u.CreatedAt and u.UpdatedAt.
	CreateUser(u *User) error
	// PutUser replaces an existing user (ErrNotFound if absent). ID and
	// CreatedAt cannot change, and Proofs keeps the stored list; u is updated
	// to what was stored.
	PutUser(u *User) error
	// PutProof stores a proof document of an existing user, replacing one with
	// the same ID, and records its ProofRef in User.Proofs. The store computes
	// Size and SHA256 (non-zero values given must match the content). Content
	// must be 1 byte to MaxProofSize and of a Proof* content type.
	PutProof(username string, p Proof) error
	// DeleteUser removes a user and their proof documents (ErrNotFound if
	// absent). It refuses (ErrInvalid) while the user owns credentials. It
	// does not revoke: call RevokeUser in the same transaction.
	DeleteUser(username string) error
}

// ClientReader looks up one OAuth client.
type ClientReader interface {
	// Client returns the client with that ID, or ErrNotFound.
	Client(id string) (*Client, error)
}

// ClientTx holds the OAuth clients.
type ClientTx interface {
	ClientReader
	// Clients returns every client, sorted by ID.
	Clients() ([]Client, error)
	// CreateClient validates and stores a new client (ErrAlreadyExists if the
	// ID is taken). It sets c.CreatedAt and c.UpdatedAt.
	CreateClient(c *Client) error
	// PutClient replaces an existing client (ErrNotFound if absent);
	// CreatedAt is kept.
	PutClient(c *Client) error
	// DeleteClient removes a client, or returns ErrNotFound.
	DeleteClient(id string) error
}

// CredentialReader reads signing credentials.
type CredentialReader interface {
	// Credential returns the credential with that ID, or ErrNotFound.
	Credential(id string) (*Credential, error)
	// Credentials lists credentials in credential-ID order. owner == "" lists all
	// (full scan, admin only); otherwise a cursor range over the owner index.
	// after: exclusive start ID ("" = from the beginning); limit <= 0 = no limit.
	// An owner without credentials (or unknown) gives an empty list.
	Credentials(owner, after string, limit int) ([]Credential, error)
}

// CredentialTx holds the signing credentials and their owner index.
type CredentialTx interface {
	CredentialReader
	// CreateCredential validates and stores a new credential and its owner
	// index entry. The owner must exist (ErrInvalid otherwise).
	CreateCredential(c *Credential) error
	// PutCredential replaces an existing credential (ErrNotFound if absent)
	// and moves the owner index entry if Owner changed. KeyID, Algorithm,
	// KeyBits and CreatedAt cannot change.
	PutCredential(c *Credential) error
	// DeleteCredential removes a credential and its owner index entry
	// (ErrNotFound if absent). It does not revoke: call RevokeCredential in
	// the same transaction.
	DeleteCredential(id string) error
}

// Store is a transactional record store.
type Store interface {
	// View runs fn in a read-only transaction. It returns ctx.Err() without
	// calling fn if ctx is already done.
	View(ctx context.Context, fn func(Tx) error) error
	// Update runs fn in one write transaction; fn's error rolls everything back
	// (and so does a panic, which Update re-panics). Updates are serialized.
	// It returns ctx.Err() without calling fn if ctx is already done.
	Update(ctx context.Context, fn func(Tx) error) error
	// Fence runs fn in a write transaction that commits even when fn
	// writes nothing, and after which no write transaction that began
	// before it can commit: a write whose commit failed with
	// ErrOutcomeUnknown either committed before the fence, and fn reads
	// what it wrote, or never commits. What fn reads is therefore final,
	// where a View could read before such a commit, still in flight,
	// applies. Settle reads through it. fn may run more than once, as
	// Update's, and Fence fails as Update does.
	Fence(ctx context.Context, fn func(Tx) error) error
	// Close releases the store. Transactions in progress finish first;
	// View and Update after Close fail without calling fn, and closing
	// again does nothing.
	Close() error
}

// Batcher is implemented by a Store that can group concurrent write
// transactions into one commit (store/bolt: group commit). Batch has
// Update's guarantees, but fn may run more than once, so it must not have
// effects outside the transaction.
type Batcher interface {
	Batch(ctx context.Context, fn func(Tx) error) error
}
