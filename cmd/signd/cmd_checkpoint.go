package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/spf13/cobra"

	"github.com/signd/signd/admin"
	"github.com/signd/signd/checkpoint"
	"github.com/signd/signd/cmd/signd/checkpointd"
	"github.com/signd/signd/config"
	"github.com/signd/signd/hsm"
	"github.com/signd/signd/store"
)

// Signed audit checkpoints (package checkpoint): the audit key commands,
// `signd audit checkpoint`, the daemon's timer and GET /audit/checkpoint.

var (
	_ admin.AuditKeys = (*hsm.Token)(nil)
	_ mounter         = checkpointd.Handler{}
)

// newCheckpointMaker is the checkpoint.Maker of cfg's audit.* keys over db
// and keys; nil when audit.checkpoint_dir is empty.
func newCheckpointMaker(cfg *config.Config, db store.Store, keys admin.AuditKeys, now func() time.Time, logger *slog.Logger) *checkpoint.Maker {
	if cfg.Audit.CheckpointDir == "" {
		return nil
	}
	return &checkpoint.Maker{Store: db, Key: admin.AuditKeyFor(keys, cfg.Audit.Label()),
		Origin: cfg.Audit.Origin(cfg.Server.BaseURL), Dir: cfg.Audit.CheckpointDir, Now: now, Logger: logger}
}

// serveCheckpoints is the daemon's part: the Maker the admin service
// shares, the public routes on e, and the timer of
// audit.checkpoint_interval. The returned function stops the timer.
func serveCheckpoints(cfg *config.Config, db store.Store, token *hsm.Token, e *echo.Echo, ticks <-chan time.Time, now func() time.Time, logger *slog.Logger) (*checkpoint.Maker, func(), error) {
	mk := newCheckpointMaker(cfg, db, token, now, logger.With("service", "checkpoint"))
	if mk == nil {
		return nil, func() {}, nil
	}
	h := checkpointd.Handler{Dir: mk.Dir, Logger: logger}
	if err := h.Mount(e.Group("")); err != nil {
		return nil, nil, err
	}
	every := cfg.Audit.CheckpointInterval
	if every <= 0 {
		return mk, func() {}, nil
	}
	stop := checkpointd.Every(mk, every, ticks)
	logger.Info("audit checkpoints every interval", "interval", every, "dir", mk.Dir, "origin", mk.Origin)
	return mk, stop, nil
}

// auditKeyCmd is `signd audit key create|show`.
func (a *app) auditKeyCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "key", Short: "The audit signing key in the token, which signs the audit checkpoints"}
	var alg string
	show := func(v *admin.AuditKeyView) error {
		if a.jsonOut {
			return a.printJSON(v)
		}
		fmt.Fprintf(a.stdout, "label:        %s\nid:           %s\nalgorithm:    %s\norigin:       %s\nverifier key: %s\n", v.Label, v.ID, v.Algorithm, v.Origin, v.VerifierKey)
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
					fmt.Fprintf(a.stdout, "nothing added since the latest checkpoint (%s):\n", v.File)
				} else {
					fmt.Fprintf(a.stdout, "checkpoint of %d entries written to %s:\n", v.Size, v.File)
				}
				_, err = io.WriteString(a.stdout, v.Note)
				return err
			})
		},
	}
}
