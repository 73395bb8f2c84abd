package oidc

import (
	"context"

	"github.com/signd/signd/oauth"
	"github.com/signd/signd/store"
)

// Tx is what the provider's endpoints read of a store transaction: the
// access token of a /userinfo request, its client, its user and the user's
// identity proofs (the profile claims), and what the bearer check reads.
type Tx interface {
	store.TokenReader
	store.ClientReader
	store.UserReader
	store.ProofReader
	store.RevocationReader // the bearer check's cache of accepted tokens
}

// Store is the provider's view of the store (store.Scope makes one).
type Store interface {
	View(ctx context.Context, fn func(Tx) error) error
}

// KeyRingTx is the KeyRing's transaction: the signing keys (store.OIDCTx),
// read and rotated as a set in one transaction, and the audit log, where
// a Recorder appends the entry of each change in the transaction that
// makes it.
type KeyRingTx interface {
	store.OIDCTx
	store.AuditAppender
}

// KeyRingStore is the KeyRing's view of the store.
type KeyRingStore interface {
	View(ctx context.Context, fn func(KeyRingTx) error) error
	Update(ctx context.Context, fn func(KeyRingTx) error) error
	// Fence is store.Store's: settle reads through it.
	Fence(ctx context.Context, fn func(KeyRingTx) error) error
}

var (
	_ Store          = (*store.Scoped[Tx])(nil)
	_ KeyRingStore   = (*store.Scoped[KeyRingTx])(nil)
	_ oauth.BearerTx = Tx(nil)
)
