package cli

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/signd/signd/admin"
	"github.com/signd/signd/cmd/signd/textview"
)

// oidcCmd is `signd oidc`: the OpenID Connect provider's signing keys.
func (a *app) oidcCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "oidc", Short: "Manage the OpenID Connect provider"}
	keys := group(&cobra.Command{
		Use:   "keys",
		Short: "Manage the ID-token signing keys (in the HSM)",
		Long: `ID tokens are signed by key pairs generated inside the HSM, in the
algorithm oidc.signing_alg names (RS256, PS256 or ES256), or in the one a
client registered (signd client add --id-token-alg). Each algorithm has its
own keys:

  create   publish a new key as the "next" key (in the JWKS, not yet signing)
  rotate   let the next key sign and retire the active one; the retired key
           stays in the JWKS until every ID token it signed has expired
  list     show every key with its algorithm and state

--alg picks the algorithm (default oidc.signing_alg). Create, wait until
relying parties have fetched the JWKS (10 minutes), then rotate. The daemon
creates the first key of RS256 and of oidc.signing_alg on start. To change
oidc.signing_alg without a minute in which relying parties may not know the
new key: create --alg NEW, wait, change the setting and restart; the keys of
the old algorithm stay published.`,
	})

	var createAlg string
	createCmd := &cobra.Command{
		Use: "create [--alg RS256|PS256|ES256]", Short: "Generate a key in the HSM and publish it as the next signing key", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withAdmin(cmd, func(ctx context.Context, s admin.Service, by admin.Principal) error {
				return printer(a, textview.OIDCKey)(s.CreateOIDCKey(ctx, by, admin.CreateOIDCKeyRequest{Alg: createAlg}))
			})
		},
	}
	listCmd := &cobra.Command{
		Use: "list", Short: "List the signing keys, oldest first", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withAdmin(cmd, func(ctx context.Context, s admin.Service, by admin.Principal) error {
				return printer(a, func(w io.Writer, ks []admin.OIDCKeyView) error {
					tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
					fmt.Fprintln(tw, "KID\tALG\tSTATE\tCREATED\tACTIVATED\tRETIRED\tPUBLISHED UNTIL\tLABEL")
					for _, k := range ks {
						fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.KID, k.Algorithm, k.State, textview.Stamp(&k.CreatedAt),
							textview.Stamp(k.ActivatedAt), textview.Stamp(k.RetiredAt), textview.Stamp(k.PublishedUntil), k.Label)
					}
					return tw.Flush()
				})(s.ListOIDCKeys(ctx, by))
			})
		},
	}
	var force bool
	var rotateAlg string
	rotateCmd := &cobra.Command{
		Use: "rotate [--alg RS256|PS256|ES256] [--force]", Short: "Let the next key sign and retire the active key of its algorithm", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withAdmin(cmd, func(ctx context.Context, s admin.Service, by admin.Principal) error {
				return printer(a, func(w io.Writer, r *admin.RotateOIDCKeysResult) error {
					fmt.Fprintf(w, "active:   %s\n", r.Active.KID)
					if r.Retired != nil {
						fmt.Fprintf(w, "retired:  %s (published until %s)\n", r.Retired.KID, textview.Stamp(r.Retired.PublishedUntil))
					}
					for _, kid := range r.Purged {
						fmt.Fprintf(w, "removed:  %s (its ID tokens have expired)\n", kid)
					}
					fmt.Fprintf(w, "publish the next key with `signd oidc keys create --alg %s`\n", r.Active.Algorithm)
					return nil
				})(s.RotateOIDCKeys(ctx, by, admin.RotateOIDCKeysRequest{Alg: rotateAlg, Force: force}))
			})
		},
	}
	rotateCmd.Flags().BoolVar(&force, "force", false, "rotate even if the next key was published less than 10 minutes ago")
	rotateCmd.Flags().StringVar(&rotateAlg, "alg", "", "algorithm whose keys rotate (default oidc.signing_alg)")
	createCmd.Flags().StringVar(&createAlg, "alg", "", "algorithm of the new key: RS256, PS256 or ES256 (default oidc.signing_alg)")

	keys.AddCommand(createCmd, listCmd, rotateCmd)
	cmd.AddCommand(keys)
	return cmd
}
