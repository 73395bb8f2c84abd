package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/signd/signd/admin"
)

// The audit key commands and `signd audit checkpoint` (package
// checkpoint; cmd/signd wires the daemon's timer and GET /audit/checkpoint).

// auditKeyCmd is `signd audit key create|show`.
func (a *app) auditKeyCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "key", Short: "The audit signing key in the token, which signs the audit checkpoints"}
	var alg string
	show := func(v *admin.AuditKeyView) error {
		if a.jsonOut {
			return a.printJSON(v)
		}
		fmt.Fprintf(a.Stdout, "label:        %s\nid:           %s\nalgorithm:    %s\norigin:       %s\nverifier key: %s\n", v.Label, v.ID, v.Algorithm, v.Origin, v.VerifierKey)
		return nil
	}
	create := &cobra.Command{
		Use:   "create [--algorithm ed25519|ecdsa-p256]",
		Short: "Generate the audit key (audit.key_label): Ed25519 where the token has EdDSA, else ECDSA P-256",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withAdmin(cmd, func(ctx context.Context, s admin.Service, by admin.Principal) error {
				v, err := s.CreateAuditKey(ctx, by, admin.CreateAuditKeyRequest{Algorithm: alg})
				if err != nil {
					return err
				}
				return show(v)
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
				v, err := s.ShowAuditKey(ctx, by)
				if err != nil {
					return err
				}
				return show(v)
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
				v, err := s.AuditCheckpoint(ctx, by)
				if err != nil {
					return err
				}
				if a.jsonOut {
					return a.printJSON(v)
				}
				if v.Unchanged {
					fmt.Fprintf(a.Stdout, "nothing added since the latest checkpoint (%s):\n", v.File)
				} else {
					fmt.Fprintf(a.Stdout, "checkpoint of %d entries written to %s:\n", v.Size, v.File)
				}
				_, err = io.WriteString(a.Stdout, v.Note)
				return err
			})
		},
	}
}
