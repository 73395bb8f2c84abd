package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/signd/signd/admin"
	"github.com/signd/signd/cmd/signd/textview"
)

// The audit key commands and `signd audit checkpoint` (package
// checkpoint; cmd/signd wires the daemon's timer and GET /audit/checkpoint).

// auditKeyCmd is `signd audit key create|show`.
func (a *app) auditKeyCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "key", Short: "The audit signing key in the token, which signs the audit checkpoints"}
	var alg string
	create := &cobra.Command{
		Use:   "create [--algorithm ed25519|ecdsa-p256]",
		Short: "Generate the audit key (audit.key_label): Ed25519 where the token has EdDSA, else ECDSA P-256",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withAdmin(cmd, func(ctx context.Context, s admin.Service, by admin.Principal) error {
				return printer(a, textview.AuditKey)(s.CreateAuditKey(ctx, by, admin.CreateAuditKeyRequest{Algorithm: alg}))
			})
		},
	}
	create.Flags().StringVar(&alg, "algorithm", "", "ed25519 or ecdsa-p256; default: Ed25519 where the token has CKM_EDDSA, else ECDSA P-256")
	showCmd := &cobra.Command{
		Use:   "show",
		Short: "Print the audit key and its verifier key (for witnesses and signd audit verify --key)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withAdmin(cmd, func(ctx context.Context, s admin.Service, by admin.Principal) error {
				return printer(a, textview.AuditKey)(s.ShowAuditKey(ctx, by))
			})
		},
	}
	cmd.AddCommand(create, showCmd)
	return cmd
}

// auditCheckpointCmd is `signd audit checkpoint`.
func (a *app) auditCheckpointCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "checkpoint",
		Short: "Sign a checkpoint of the audit log now, write it to audit.checkpoint_dir and print it",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withAdmin(cmd, func(ctx context.Context, s admin.Service, by admin.Principal) error {
				return printer(a, func(w io.Writer, v *admin.CheckpointView) error {
					if v.Unchanged {
						fmt.Fprintf(w, "nothing added since the latest checkpoint (%s):\n", v.File)
					} else {
						fmt.Fprintf(w, "checkpoint of %d entries written to %s:\n", v.Size, v.File)
					}
					_, err := io.WriteString(w, v.Note)
					return err
				})(s.AuditCheckpoint(ctx, by))
			})
		},
	}
}
