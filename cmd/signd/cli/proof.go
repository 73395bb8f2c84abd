package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/signd/signd/admin"
	"github.com/signd/signd/cmd/signd/textview"
	"github.com/signd/signd/store"
)

// addProofCmd is `signd user add-proof`: it stores a proof document
// (released as <ns>.proof with scope <ns>.proof).
func (a *app) addProofCmd() *cobra.Command {
	var id, contentType, file string
	cmd := &cobra.Command{
		Use:   "add-proof USERNAME --id ID --content-type T --file F",
		Short: "Store a proof document of a user (image/jpeg, image/png or application/pdf, at most 10 MiB)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			content, err := a.readFile("proof", file, store.MaxProofSize)
			if err != nil {
				return err
			}
			req := admin.AddProofRequest{Username: args[0], ID: id, ContentType: contentType, Content: content}
			return a.withAdmin(cmd, func(ctx context.Context, s admin.Service, by admin.Principal) error {
				return printer(a, textview.User)(s.AddProof(ctx, by, req))
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&id, "id", "", "identifier of the document (stored and released with it; the same ID replaces it)")
	f.StringVar(&contentType, "content-type", "", "image/jpeg, image/png or application/pdf (checked against the file)")
	f.StringVar(&file, "file", "", "the document (- = stdin)")
	for _, n := range []string{"id", "content-type", "file"} {
		_ = cmd.MarkFlagRequired(n)
	}
	return cmd
}
