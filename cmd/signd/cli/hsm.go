package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/signd/signd/admin"
	"github.com/signd/signd/cmd/signd/textview"
)

// hsmCmd is `signd hsm`: what the PKCS#11 token is and can do.
func (a *app) hsmCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "hsm", Short: "Inspect the PKCS#11 token"}
	cmd.AddCommand(&cobra.Command{
		Use:   "info",
		Short: "Show the token's capabilities and whether it freezes its keys",
		Long: `Shows what the token said of itself when it was opened (module, Cryptoki
version, manufacturer, model, firmware, PIN lengths, session limits, the
mechanisms signd uses with their key sizes, the key-template profile) and
every key on it, each with what the token does not freeze: a label a
C_SetAttributeValue can rewrite, or a usage beyond signing (decrypt,
unwrap, derive). Asks the running daemon when one listens on the admin
socket, else opens the token itself.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withAdmin(cmd, func(ctx context.Context, s admin.Service, by admin.Principal) error {
				return printer(a, textview.HSMInfo)(s.HSMInfo(ctx, by))
			})
		},
	})
	return cmd
}
