package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/signd/signd/cmd/signd/storeadmin"
	"github.com/signd/signd/config"
	"github.com/signd/signd/store/bolt"
)

// `signd store check` and `signd store backup FILE` work where the store
// is: through the daemon's admin socket while it runs (it holds the
// file's lock), else on the file directly.

func (a *app) storeCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "store", Short: "Check and back up the store file"}
	check := &cobra.Command{
		Use:   "check",
		Short: "Check the store's pages, records and audit chain; names the first problem and exits 1 when there is one",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withStore(cmd, func(ctx context.Context, src storeadmin.Source) error {
				rep, err := src.Check(ctx)
				if err != nil {
					return err
				}
				if a.jsonOut {
					if err := a.printJSON(rep); err != nil {
						return err
					}
				} else if rep.OK {
					fmt.Fprintf(a.Stdout, "store intact: %s, %d pages of %d bytes, txid %d, %d records, audit log %d entries, head digest %s\n",
						rep.File, rep.Pages, rep.PageSize, rep.TxID, rep.Records, rep.AuditEntries, rep.AuditHead)
				} else {
					for _, p := range rep.Problems {
						fmt.Fprintln(a.Stdout, "problem:", p)
					}
				}
				if !rep.OK {
					return fmt.Errorf("store check: %s: %s", rep.File, rep.Problem)
				}
				return nil
			})
		},
	}
	backup := &cobra.Command{
		Use:   "backup FILE",
		Short: "Write a consistent snapshot of the store to FILE (new, mode 0600); restore by pointing store.path at it",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path, err := filepath.Abs(args[0])
			if err != nil {
				return err
			}
			return a.withStore(cmd, func(ctx context.Context, src storeadmin.Source) error {
				return printer(a, func(w io.Writer, res *bolt.BackupResult) error {
					fmt.Fprintf(w, "backup written: %s, %d bytes, txid %d, audit log %d entries, head digest %s\n",
						res.File, res.Bytes, res.Check.TxID, res.Check.AuditEntries, res.Check.AuditHead)
					return nil
				})(src.SaveBackup(ctx, path))
			})
		},
	}
	cmd.AddCommand(check, backup)
	return cmd
}

// errEtcdStoreCommands refuses store check and backup on etcd: they work on
// the bbolt file.
var errEtcdStoreCommands = errors.New("store check and backup work on the bbolt file (store.backend bolt); " +
	"on etcd, back up with `etcdctl snapshot save` and check the audit chain with `signd audit verify`")

func (a *app) withStore(cmd *cobra.Command, fn func(context.Context, storeadmin.Source) error) error {
	cfg, remote, err := a.dialAdmin(cmd)
	if err != nil {
		return err
	}
	if cfg.Store.BackendName() == config.BackendEtcd {
		return errEtcdStoreCommands
	}
	if remote != nil {
		return fn(cmd.Context(), storeadmin.Socket{Client: remote.HTTPClient()})
	}
	by, err := LocalPrincipal(cfg)
	if err != nil {
		return err
	}
	return fn(cmd.Context(), storeadmin.File{Path: cfg.Store.Path, Options: bolt.Options{Timeout: cfg.Store.OpenTimeout, ReadOnly: true},
		By: by, Now: a.clock})
}
