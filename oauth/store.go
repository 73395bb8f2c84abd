package oauth

import (
	"context"

	"github.com/signd/signd/store"
)

// Tx is what the authorization server uses of a store transaction: the
// running flows and the tokens they issue, the client and user they are for,
// and the failed-login counters on the user.
type Tx interface {
	// TokenTx: access tokens and SADs (issue, revoke, sweep, code reuse).
	store.TokenTx
	// AuthFlowTx: pending requests, codes and login sessions.
	store.AuthFlowTx
	// SweepTx: the sweeper's bounded removal of expired records.
	store.SweepTx
	// ClientReader: the client of each request.
	store.ClientReader
	// UserReader: the user logging in, and the user of a redeemed code.
	store.UserReader
	// RevocationReader: the bearer check's cache (BearerTx).
	store.RevocationReader
	// PutUser records failed logins and the lockout (store.UserTx).
	PutUser(u *store.User) error
	// AuditAppender: logins, their locks and logouts (passwords, browser).
	store.AuditAppender
}

// Store is the authorization server's view of the store; store.Scope makes
// one from any backend.
type Store interface {
	View(ctx context.Context, fn func(Tx) error) error
	Update(ctx context.Context, fn func(Tx) error) error
	// Batch is Update in a transaction the backend may share with
	// concurrent Batch calls (group commit, store.Batcher); fn may run more
	// than once. The token endpoint redeems codes with it.
	Batch(ctx context.Context, fn func(Tx) error) error
}

// BearerTx is what RequireBearer reads of a store transaction: the token,
// its client and its user, and the revocation generation its cache of
// accepted tokens is checked against.
type BearerTx interface {
	store.TokenReader
	store.ClientReader
	store.UserReader
	store.RevocationReader
}

// BearerStore is RequireBearer's view of the store: store.Scope makes one
// from a backend, store.ViewAs from a consumer's wider view.
type BearerStore interface {
	View(ctx context.Context, fn func(BearerTx) error) error
}

var (
	_ Store       = (*store.Scoped[Tx])(nil)
	_ BearerStore = (*store.Scoped[BearerTx])(nil)
	_ BearerTx    = Tx(nil) // the authorization server's view covers the bearer check
)
