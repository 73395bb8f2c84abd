package main

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/signd/signd/cmd/signd/admin"
)

// oidcCmd is `signd oidc`: the OpenID Connect provider's signing keys.
func (a *app) oidcCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "oidc", Short: "Manage the OpenID Connect provider"}
	keys := group(&cobra.Command{
		Use:   "keys",
		Short: "Manage the ID-token signing keys (in the HSM)",
		Long: `ID tokens are signed RS256 by a key pair generated inside the HSM.

  create   publish a new key as the "next" key (in the JWKS, not yet signing)
  rotate   let the next key sign and retire the active one; the retired key
           stays in the JWKS until every ID token it signed has expired
  list     show every key with its state

Create, wait until relying parties have fetched the JWKS (10 minutes), then
rotate. The daemon creates the first key on start.`,
	})

	createCmd := &cobra.Command{
		Use: "create", Short: "Generate a key in the HSM and publish it as the next signing key", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withAdmin(cmd, func(ctx context.Context, s admin.Service) error {
				k, err := s.CreateOIDCKey(ctx)
				if err != nil {
					return err
				}
				return a.printOIDCKey(k)
			})
		},
	}
	listCmd := &cobra.Command{
		Use: "list", Short: "List the signing keys, oldest first", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withAdmin(cmd, func(ctx context.Context, s admin.Service) error {
				ks, err := s.ListOIDCKeys(ctx)
				if err != nil {
					return err
				}
				if a.jsonOut {
					return a.printJSON(ks)
				}
				tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "KID\tSTATE\tCREATED\tACTIVATED\tRETIRED\tPUBLISHED UNTIL\tLABEL")
				for _, k := range ks {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.KID, k.State, stamp(&k.CreatedAt),
						stamp(k.ActivatedAt), stamp(k.RetiredAt), stamp(k.PublishedUntil), k.Label)
				}
				return tw.Flush()
			})
		},
	}
	var force bool
	rotateCmd := &cobra.Command{
		Use: "rotate [--force]", Short: "Let the next key sign and retire the active key", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withAdmin(cmd, func(ctx context.Context, s admin.Service) error {
				r, err := s.RotateOIDCKeys(ctx, admin.RotateOIDCKeysRequest{Force: force})
				if err != nil {
					return err
				}
				if a.jsonOut {
					return a.printJSON(r)
				}
				fmt.Fprintf(a.stdout, "active:   %s\n", r.Active.KID)
				if r.Retired != nil {
					fmt.Fprintf(a.stdout, "retired:  %s (published until %s)\n", r.Retired.KID, stamp(r.Retired.PublishedUntil))
				}
				for _, kid := range r.Purged {
					fmt.Fprintf(a.stdout, "removed:  %s (its ID tokens have expired)\n", kid)
				}
				fmt.Fprintln(a.stdout, "publish the next key with `signd oidc keys create`")
				return nil
			})
		},
	}
	rotateCmd.Flags().BoolVar(&force, "force", false, "rotate even if the next key was published less than 10 minutes ago")

	keys.AddCommand(createCmd, listCmd, rotateCmd)
	cmd.AddCommand(keys)
	return cmd
}

func (a *app) printOIDCKey(k *admin.OIDCKeyView) error {
	if a.jsonOut {
		return a.printJSON(k)
	}
	w := a.stdout
	fmt.Fprintf(w, "kid:        %s\n", k.KID)
	fmt.Fprintf(w, "state:      %s\n", k.State)
	fmt.Fprintf(w, "algorithm:  %s\n", k.Algorithm)
	fmt.Fprintf(w, "label:      %s\n", k.Label)
	fmt.Fprintf(w, "key id:     %s\n", k.KeyID)
	fmt.Fprintf(w, "created:    %s\n", stamp(&k.CreatedAt))
	if k.ActivatedAt != nil {
		fmt.Fprintf(w, "activated:  %s\n", stamp(k.ActivatedAt))
	}
	return nil
}

// stamp formats an optional time in UTC, "-" when absent.
func stamp(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02T15:04:05Z")
}
