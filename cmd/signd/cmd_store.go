package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"

	"github.com/labstack/echo/v4"
	"github.com/spf13/cobra"

	"github.com/signd/signd/admin"
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
			return a.withStore(cmd, func(ctx context.Context, src storeSource) error {
				rep, err := src.check(ctx)
				if err != nil {
					return err
				}
				if a.jsonOut {
					if err := a.printJSON(rep); err != nil {
						return err
					}
				} else if rep.OK {
					fmt.Fprintf(a.stdout, "store intact: %s, %d pages of %d bytes, txid %d, %d records, audit log %d entries, head digest %s\n",
						rep.File, rep.Pages, rep.PageSize, rep.TxID, rep.Records, rep.AuditEntries, rep.AuditHead)
				} else {
					for _, p := range rep.Problems {
						fmt.Fprintln(a.stdout, "problem:", p)
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
			return a.withStore(cmd, func(ctx context.Context, src storeSource) error {
				res, err := bolt.SaveBackup(ctx, path, func(w io.Writer) error { return src.backup(ctx, w) })
				if err != nil {
					return err
				}
				if a.jsonOut {
					return a.printJSON(res)
				}
				fmt.Fprintf(a.stdout, "backup written: %s, %d bytes, txid %d, audit log %d entries, head digest %s\n",
					res.File, res.Bytes, res.Check.TxID, res.Check.AuditEntries, res.Check.AuditHead)
				return nil
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

// storeSource is where check and backup run: the store file or the daemon.
type storeSource interface {
	check(ctx context.Context) (*bolt.CheckReport, error)
	backup(ctx context.Context, w io.Writer) error
}

func (a *app) withStore(cmd *cobra.Command, fn func(context.Context, storeSource) error) error {
	cfg, remote, err := a.dialAdmin(cmd)
	if err != nil {
		return err
	}
	if cfg.Store.BackendName() == config.BackendEtcd {
		return errEtcdStoreCommands
	}
	if remote != nil {
		return fn(cmd.Context(), socketStore{client: remote.HTTPClient()})
	}
	return fn(cmd.Context(), fileStore{path: cfg.Store.Path, opts: bolt.Options{Timeout: cfg.Store.OpenTimeout, ReadOnly: true}})
}

// fileStore works on the file, which no daemon holds; it opens it
// read-only, so neither command ever writes to the store.
type fileStore struct {
	path string
	opts bolt.Options
}

func (f fileStore) check(ctx context.Context) (*bolt.CheckReport, error) {
	return bolt.CheckFile(ctx, f.path, f.opts.Timeout)
}

func (f fileStore) backup(ctx context.Context, w io.Writer) error {
	db, err := bolt.Open(f.path, f.opts)
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.Backup(ctx, w)
	return err
}

// socketStore asks the running daemon.
type socketStore struct{ client *http.Client }

func (s socketStore) check(ctx context.Context) (*bolt.CheckReport, error) {
	res, err := postAdmin(ctx, s.client, "StoreCheck", struct{}{})
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	var rep bolt.CheckReport
	if err := json.NewDecoder(res.Body).Decode(&rep); err != nil {
		return nil, fmt.Errorf("admin socket: %w", err)
	}
	return &rep, nil
}

func (s socketStore) backup(ctx context.Context, w io.Writer) error {
	res, err := postAdmin(ctx, s.client, "StoreBackup", struct{}{})
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if _, err := io.Copy(w, res.Body); err != nil {
		return fmt.Errorf("admin socket: %w", err)
	}
	return nil
}

// storeAdmin is what the store methods of the admin socket need;
// *bolt.DB satisfies it.
type storeAdmin interface {
	Check(ctx context.Context) (*bolt.CheckReport, error)
	Backup(ctx context.Context, w io.Writer) (int64, error)
}

// storeAdminHandler serves the store methods on the daemon's admin socket.
type storeAdminHandler struct {
	DB     storeAdmin
	Logger *slog.Logger
}

// Mount adds the store methods to the admin socket's group g. The backup
// is streamed as it is written (one read transaction); a stream cut short
// does not check as a store, so the CLI refuses it.
func (h storeAdminHandler) Mount(g *echo.Group) error {
	db, logger := h.DB, h.Logger
	g.POST("/admin/v1/StoreCheck", func(c echo.Context) error {
		rep, err := db.Check(c.Request().Context())
		if err != nil {
			logger.Error("store check failed", "err", err)
			return c.JSON(http.StatusInternalServerError, admin.Error{Kind: admin.KindInternal, Message: "store check: " + err.Error()})
		}
		if !rep.OK {
			logger.Error("store check found a problem", "problem", rep.Problem)
		}
		return c.JSON(http.StatusOK, rep)
	})
	g.POST("/admin/v1/StoreBackup", func(c echo.Context) error {
		c.Response().Header().Set(echo.HeaderContentType, "application/octet-stream")
		c.Response().WriteHeader(http.StatusOK)
		n, err := db.Backup(c.Request().Context(), c.Response())
		if err != nil {
			logger.Error("store backup stopped", "bytes", n, "err", err)
			return nil
		}
		logger.Info("store backup streamed", "bytes", n)
		return nil
	})
	return nil
}
