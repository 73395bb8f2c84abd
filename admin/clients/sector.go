package clients

import (
	"slices"

	"github.com/signd/signd/admin/act"
	"github.com/signd/signd/admin/ops"
	"github.com/signd/signd/oidc"
	"github.com/signd/signd/store"
)

// checkSector refuses an OIDC client whose pairwise sector cannot be
// derived: redirect URIs on several hosts (or private-use schemes) and no
// sector identifier.
func checkSector(c *store.Client) error {
	if !slices.Contains(c.Scopes, oidc.ScopeOpenID) || len(c.RedirectURIs) == 0 {
		return nil // not OIDC, or the store refuses it anyway
	}
	if _, err := oidc.Sector(c); err != nil {
		return act.Errorf(ops.KindInvalid, "client %q: its redirect URIs do not share one host, so pairwise subjects need --sector-identifier (for example the host name of the relying party)", c.ID)
	}
	return nil
}
