package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/signd/signd/admin"
	"github.com/signd/signd/checkpoint"
	"github.com/signd/signd/cmd/signd/lazytoken"
	"github.com/signd/signd/cmd/signd/storeopen"
	"github.com/signd/signd/hsm"
)

// `signd audit verify` and `signd audit export` read the audit log where it
// is: through the daemon's admin service while it runs (it holds the store's
// lock), else from the store file. Either way the daemon or the CLI walks
// the stored entries itself (admin.Local), so a verification never trusts a
// copy.

func (a *app) auditCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "audit", Short: "Check and export the tamper-evident audit log"}
	var cpFile, cpKey string
	verify := &cobra.Command{
		Use:   "verify [--checkpoint FILE [--key VKEY]]",
		Short: "Check the whole hash chain; names the first broken entry and exits 1 when there is one; with --checkpoint, also that the log extends that signed checkpoint",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cpFile != "" {
				return a.verifyCheckpoint(cmd, cpFile, cpKey)
			}
			if cpKey != "" {
				return errors.New("--key needs --checkpoint")
			}
			return a.withAudit(cmd, func(ctx context.Context, src auditor, by admin.Principal) error {
				res, err := src.AuditVerify(ctx, by)
				if err != nil {
					return err
				}
				if a.jsonOut {
					if err := a.printJSON(res); err != nil {
						return err
					}
				} else if res.OK {
					fmt.Fprintf(a.stdout, "audit log intact: %d entries, head digest %s\n", res.Entries, res.Head)
				}
				if !res.OK {
					return fmt.Errorf("audit log broken at entry %d: %s (%d entries before it verify)", res.BrokenAt, res.Reason, res.Entries)
				}
				return nil
			})
		},
	}
	var since, until, actor, target string
	var kinds []string
	export := &cobra.Command{
		Use:   "export [--since T] [--until T] [--kind K]... [--actor A] [--target T]",
		Short: "Write the audit log as JSON lines (the stored entries, oldest first), filtered",
		Long: `Write the audit log as JSON lines: the stored entries, oldest first, each in
its stored canonical encoding, so that every line verifies. The output is
always JSON lines. The filters combine (an entry must match all given):
--since and --until bound the time (since <= time < until), --kind selects
kinds (repeatable), --actor selects the actors containing the text
("uid:1001" matches "uid:1001 (alice)"), --target selects one target
("user:alice", "client:rp", "credential:ID", "oidc-key:KID", "tsa-key:HEX";
for user:, client: and credential: also the entries naming that user,
client or credential, such as signHash). The export is itself audited
(admin_read).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			req := admin.AuditExportRequest{Kinds: kinds, Actor: actor, Target: target}
			var err error
			if since != "" {
				if req.Since, err = parseTime("--since", since); err != nil {
					return err
				}
			}
			if until != "" {
				if req.Until, err = parseTime("--until", until); err != nil {
					return err
				}
			}
			return a.withAudit(cmd, func(ctx context.Context, src auditor, by admin.Principal) error {
				w := bufio.NewWriter(a.stdout)
				err := src.AuditExport(ctx, by, req, w)
				if ferr := w.Flush(); err == nil {
					err = ferr
				}
				return err
			})
		},
	}
	export.Flags().StringVar(&since, "since", "", "only entries at or after T (RFC 3339, e.g. 2026-01-02T15:04:05Z, or a date YYYY-MM-DD in UTC)")
	export.Flags().StringVar(&until, "until", "", "only entries before T (as --since); must be after --since")
	export.Flags().StringArrayVar(&kinds, "kind", nil, "only entries of kind K (repeatable: any of them), e.g. credential_removed, user_password_set, login")
	export.Flags().StringVar(&actor, "actor", "", "only entries whose actor contains A, e.g. uid:1001")
	export.Flags().StringVar(&target, "target", "", "only entries about T: user:NAME, client:ID, credential:ID, oidc-key:KID, tsa-key:HEX")
	verify.Flags().StringVar(&cpFile, "checkpoint", "", "a signed checkpoint saved earlier (a file of audit.checkpoint_dir, or fetched from /audit/checkpoint); - = stdin")
	verify.Flags().StringVar(&cpKey, "key", "", "verifier key to check the checkpoint's signature with (<origin>+<key ID>+<base64>, from signd audit key show); default: the audit key in the token")
	cmd.AddCommand(verify, export, a.auditKeyCmd(), a.auditCheckpointCmd())
	return cmd
}

// parseTime reads the time of flag: RFC 3339, or a date in UTC.
func parseTime(flag, s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%s %q: want RFC 3339 (2026-01-02T15:04:05Z) or a date (2026-01-02)", flag, s)
}

// verifyCheckpoint is `signd audit verify --checkpoint FILE [--key VKEY]`.
func (a *app) verifyCheckpoint(cmd *cobra.Command, file, key string) error {
	data, err := a.readFile("--checkpoint", file, checkpoint.MaxNote)
	if err != nil {
		return err
	}
	return a.withAudit(cmd, func(ctx context.Context, src auditor, by admin.Principal) error {
		res, err := src.AuditVerifyCheckpoint(ctx, by, admin.AuditVerifyCheckpointRequest{Checkpoint: string(data), Key: key})
		if err != nil {
			return fmt.Errorf("checkpoint %s: %w", file, err)
		}
		if a.jsonOut {
			if err := a.printJSON(res); err != nil {
				return err
			}
		} else if res.OK {
			fmt.Fprintf(a.stdout, "audit log extends the checkpoint of %d entries (%s, signed by %s): %d entries, head digest %s\n",
				res.Size, res.Origin, res.Key, res.Entries, res.Head)
		}
		switch {
		case !res.Extends:
			return fmt.Errorf("audit log does not extend checkpoint %s: %s", file, res.Problem)
		case res.BrokenAt != 0:
			return fmt.Errorf("audit log extends checkpoint %s, but is broken at entry %d after it: %s", file, res.BrokenAt, res.Reason)
		}
		return nil
	})
}

// auditor is what `signd audit` needs of the admin service: adminrpc.Remote
// while the daemon runs, else admin.Local on the store file.
type auditor interface {
	AuditVerify(ctx context.Context, by admin.Principal) (*admin.AuditReport, error)
	AuditExport(ctx context.Context, by admin.Principal, req admin.AuditExportRequest, w io.Writer) error
	AuditVerifyCheckpoint(ctx context.Context, by admin.Principal, req admin.AuditVerifyCheckpointRequest) (*admin.CheckpointReport, error)
}

func (a *app) withAudit(cmd *cobra.Command, fn func(context.Context, auditor, admin.Principal) error) error {
	cfg, remote, err := a.dialAdmin(cmd)
	if err != nil {
		return err
	}
	if remote != nil {
		return fn(cmd.Context(), remote, admin.Principal{})
	}
	by, err := localPrincipal(cfg)
	if err != nil {
		return err
	}
	db, err := storeopen.OpenCommand(cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	// Reading every entry of a file no daemon vouches for: judge every
	// page first, so that a damaged one is named instead of read (a bbolt
	// file; etcd checks its own pages).
	if f, ok := db.(structureChecker); ok {
		if err := f.CheckStructure(cmd.Context()); err != nil {
			return err
		}
	}
	// The token is opened only to check a checkpoint without --key.
	logCfg := cfg.Log
	if logCfg.Level != "debug" && logCfg.Level != "error" {
		logCfg.Level = "warn"
	}
	logger := newLogger(a.stderr, logCfg)
	keys := lazytoken.New(func() (*hsm.Token, error) { return openToken(cfg, logger, nil) }, cfg.PKCS11.TokenLabel)
	defer keys.Close()
	local := &admin.Local{Store: db, Keys: keys, Now: a.now, Logger: logger,
		AuditKeyLabel: cfg.Audit.Label(), Checkpoints: newCheckpointMaker(cfg, db, keys, a.now, logger)}
	return fn(cmd.Context(), local, by)
}

// structureChecker is a store file whose pages can be judged before its
// records are read; *bolt.DB satisfies it.
type structureChecker interface {
	CheckStructure(ctx context.Context) error
}
