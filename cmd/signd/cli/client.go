package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/signd/signd/admin"
	"github.com/signd/signd/cmd/signd/textview"
)

func (a *app) clientCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "client", Short: "Manage OAuth clients (signature applications, relying parties)"}

	var add struct {
		redirectURIs, scopes []string
		name, secretFile     string
		sector, idTokenAlg   string
		requirePKCE          bool
	}
	addCmd := &cobra.Command{
		Use:   "add CLIENT_ID --redirect-uri URI [--redirect-uri URI ...] [--name N] [--secret-file F] [--scope S ...] [--sector-identifier S] [--require-pkce] [--id-token-alg RS256|PS256|ES256]",
		Short: "Register a client; prints a generated secret once when --secret-file is not given",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := admin.AddClientRequest{
				ID: args[0], Name: add.name, RedirectURIs: add.redirectURIs, Scopes: add.scopes,
				SectorIdentifier: add.sector, RequirePKCE: add.requirePKCE, IDTokenAlg: add.idTokenAlg,
			}
			if cmd.Flags().Changed("id-token-alg") && add.idTokenAlg == "" {
				return fmt.Errorf("--id-token-alg is empty: give RS256, PS256 or ES256, or leave the flag out for oidc.signing_alg")
			}
			if add.secretFile != "" {
				s, err := a.readSecretFile("client secret", add.secretFile)
				if err != nil {
					return err
				}
				req.Secret = s
			}
			return a.withAdmin(cmd, func(ctx context.Context, s admin.Service, by admin.Principal) error {
				return printer(a, func(w io.Writer, res *admin.AddClientResult) error {
					if err := textview.Client(w, &res.Client); err != nil {
						return err
					}
					if res.GeneratedSecret != "" {
						fmt.Fprintf(w, "client_secret:     %s\n", res.GeneratedSecret)
						fmt.Fprintln(a.Stderr, "The client secret is shown once and stored only as a hash: keep it now.")
					}
					return nil
				})(s.AddClient(ctx, by, req))
			})
		},
	}
	f := addCmd.Flags()
	f.StringArrayVar(&add.redirectURIs, "redirect-uri", nil, "registered redirect URI, exact match (repeatable)")
	f.StringVar(&add.name, "name", "", "display name shown on the consent page")
	f.StringVar(&add.secretFile, "secret-file", "", "file holding the client secret, ≥32 bytes (- = stdin); default: generate one")
	f.StringArrayVar(&add.scopes, "scope", nil, "allowed scope (repeatable; default service and credential)")
	f.StringVar(&add.sector, "sector-identifier", "", "OIDC pairwise sector (default: host of the redirect URIs)")
	f.BoolVar(&add.requirePKCE, "require-pkce", false, "refuse authorization requests without PKCE (S256)")
	f.StringVar(&add.idTokenAlg, "id-token-alg", "", "id_token_signed_response_alg: RS256, PS256 or ES256 (default oidc.signing_alg); makes the provider's first key of it")
	_ = addCmd.MarkFlagRequired("redirect-uri")

	listCmd := &cobra.Command{
		Use: "list", Short: "List clients", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withAdmin(cmd, func(ctx context.Context, s admin.Service, by admin.Principal) error {
				return printer(a, func(w io.Writer, cs []admin.ClientView) error {
					tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
					fmt.Fprintln(tw, "CLIENT_ID\tNAME\tSCOPES\tPKCE\tREDIRECT_URIS")
					for _, c := range cs {
						fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", c.ID, c.Name, strings.Join(c.Scopes, ","), textview.YesNo(c.RequirePKCE), strings.Join(c.RedirectURIs, " "))
					}
					return tw.Flush()
				})(s.ListClients(ctx, by))
			})
		},
	}
	showCmd := oneArg(a, "show CLIENT_ID", "Show a client", textview.Client, admin.Service.ShowClient)
	removeCmd := &cobra.Command{
		Use: "remove CLIENT_ID", Short: "Remove a client and revoke its tokens, SADs, codes and pending requests", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withAdmin(cmd, func(ctx context.Context, s admin.Service, by admin.Principal) error {
				res, err := s.RemoveClient(ctx, by, args[0])
				if err != nil {
					return err
				}
				return a.printRemoved("client", res)
			})
		},
	}
	cmd.AddCommand(addCmd, listCmd, showCmd, removeCmd)
	return cmd
}
