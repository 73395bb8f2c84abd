package main

import (
	"github.com/signd/signd/csc"
	"github.com/signd/signd/oauth"
	"github.com/signd/signd/oauth/passwords"
	"github.com/signd/signd/oidc"
	"github.com/signd/signd/store"
	"github.com/signd/signd/tsa"
)

// storeViews is the store as each service sees it: one view per consumer,
// typed on the transaction interface the consumer declares.
type storeViews struct {
	oauth      *store.Scoped[oauth.Tx]
	passwords  *store.Scoped[passwords.Tx]
	credential *store.Scoped[store.CredentialReader] // csc.CredentialProfile
	csc        *store.Scoped[csc.Tx]
	oidc       *store.Scoped[oidc.Tx]
	account    *store.Scoped[csc.AccountTx]  // csc.Account (the account page)
	tsaKeys    *store.Scoped[tsa.KeyRecords] // tsa.HSMSource: the records that hold keys
}

// newStoreViews types the backend once for every service.
func newStoreViews(b store.Store) *storeViews {
	return &storeViews{
		oauth:      store.Scope(b, func(tx store.Tx) oauth.Tx { return tx }),
		passwords:  store.Scope(b, func(tx store.Tx) passwords.Tx { return tx }),
		credential: store.Scope(b, func(tx store.Tx) store.CredentialReader { return tx }),
		csc:        store.Scope(b, func(tx store.Tx) csc.Tx { return tx }),
		oidc:       store.Scope(b, func(tx store.Tx) oidc.Tx { return tx }),
		account:    store.Scope(b, func(tx store.Tx) csc.AccountTx { return tx }),
		tsaKeys:    store.Scope(b, func(tx store.Tx) tsa.KeyRecords { return tx }),
	}
}

// keyRingView is the OIDC key ring's view of the store (the daemon's and
// the admin commands' key ring).
func keyRingView(b store.Store) *store.Scoped[oidc.KeyRingTx] {
	return store.Scope(b, func(tx store.Tx) oidc.KeyRingTx { return tx })
}
