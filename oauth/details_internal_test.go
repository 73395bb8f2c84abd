package oauth

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/signd/signd/store"
)

// TestStoreDetails: the one mapping between authorization details and the
// store's records keeps what a profile binds, restores it with the
// profile's type, binds a SAD to it, and refuses what the store cannot
// keep.
func TestStoreDetails(t *testing.T) {
	digest := bytes.Repeat([]byte{7}, 32)
	one := []AuthorizationDetail{{Type: "credential", Identifier: "c1", Digests: [][]byte{digest}}}
	for _, c := range []struct {
		name       string
		detailType string
		details    []AuthorizationDetail
		ok         bool
	}{
		{"none", "", nil, true},
		{"none, profile with a type", "credential", nil, true},
		{"one", "credential", one, true},
		{"one without digests", "credential", []AuthorizationDetail{{Type: "credential", Identifier: "c1"}}, true},
		{"two", "credential", append(one, one...), false},
		{"another type", "account", one, false},
		{"no type", "", []AuthorizationDetail{{Identifier: "c1"}}, false},
		{"no identifier", "credential", []AuthorizationDetail{{Type: "credential", Digests: [][]byte{digest}}}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := &store.Grant{Profile: "p"}
			err := StoreDetails(g, c.detailType, c.details)
			if (err == nil) != c.ok {
				t.Fatalf("storeDetails: %v, want ok %v", err, c.ok)
			}
			if !c.ok {
				if g.CredentialID != "" || g.Hashes != nil {
					t.Fatalf("refused details left %q %x in the grant", g.CredentialID, g.Hashes)
				}
				return
			}
			if got := grantDetails(g, c.detailType); !reflect.DeepEqual(got, c.details) {
				t.Fatalf("stored %+v, read back %+v", c.details, got)
			}
			tok := &store.Token{Kind: store.TokenSAD}
			err = bindToken(tok, g)
			if bindable := len(c.details) == 1 && len(c.details[0].Digests) > 0; (err == nil) != bindable {
				t.Fatalf("bindToken: %v, want ok %v", err, bindable)
			}
			if err == nil && (tok.CredentialID != g.CredentialID || !reflect.DeepEqual(tok.Hashes, g.Hashes)) {
				t.Fatalf("token bound to %q %x, grant has %q %x", tok.CredentialID, tok.Hashes, g.CredentialID, g.Hashes)
			}
		})
	}
}
