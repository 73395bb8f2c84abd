package protocol

import (
	"context"

	"github.com/signd/signd/oauth"
	"github.com/signd/signd/store"
)

// Tx is what the CSC API uses of a store transaction: the credentials, the
// SAD with its client and user, the SAD's consumption (and its return when
// no signature was made) together with its audit entry.
type Tx interface {
	// CredentialReader: credentials/list, credentials/info and the SAD's
	// credential.
	store.CredentialReader
	// TokenReader, ClientReader, UserReader: the SAD and whether its
	// client and user still may sign (and the bearer check).
	store.TokenReader
	store.ClientReader
	store.UserReader
	// RevocationReader: the bearer check's cache of accepted tokens.
	store.RevocationReader
	// DeleteToken consumes a SAD (store.TokenTx).
	DeleteToken(hash []byte) error
	// CreateToken gives a SAD back when signing failed before any
	// signature was made (store.TokenTx).
	CreateToken(t *store.Token) error
	// AuditAppender: the signHash entry, in the SAD's transaction.
	store.AuditAppender
}

// Store is the CSC API's view of the store (store.Scope makes one): read
// transactions, and Batch — a write transaction that may be grouped with
// concurrent ones and whose function may run more than once (store/bolt
// implements it as group commit).
type Store interface {
	View(ctx context.Context, fn func(Tx) error) error
	Batch(ctx context.Context, fn func(Tx) error) error
}

var (
	_ Store          = (*store.Scoped[Tx])(nil)
	_ oauth.BearerTx = Tx(nil)
)
