package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/signd/signd/admin"
	"github.com/signd/signd/cmd/signd/adminrpc"
	"github.com/signd/signd/cmd/signd/daemonaudit"
	"github.com/signd/signd/config"
	"github.com/signd/signd/store"
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
				res, err := src.saveBackup(ctx, path)
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
	// saveBackup writes a snapshot of the store to path (bolt.SaveBackup)
	// and has it recorded in the audit log (store_backup).
	saveBackup(ctx context.Context, path string) (*bolt.BackupResult, error)
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
	by, err := localPrincipal(cfg)
	if err != nil {
		return err
	}
	return fn(cmd.Context(), fileStore{path: cfg.Store.Path, opts: bolt.Options{Timeout: cfg.Store.OpenTimeout, ReadOnly: true},
		by: by, now: a.clock})
}

// fileStore works on the file, which no daemon holds. check opens it
// read-only; backup opens it for writing, to append its audit entry.
type fileStore struct {
	path string
	opts bolt.Options
	by   admin.Principal // the operator running the command (localPrincipal)
	now  func() time.Time
}

func (f fileStore) check(ctx context.Context) (*bolt.CheckReport, error) {
	return bolt.CheckFile(ctx, f.path, f.opts.Timeout)
}

// saveBackup writes the snapshot and then appends its store_backup entry,
// naming the operator running the command (f.by) and the file.
// A backup whose entry cannot be written is removed: no backup leaves the
// store unrecorded.
func (f fileStore) saveBackup(ctx context.Context, path string) (*bolt.BackupResult, error) {
	opts := f.opts
	opts.ReadOnly = false
	db, err := bolt.Open(f.path, opts)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	sum := sha256.New()
	res, err := bolt.SaveBackup(ctx, path, func(w io.Writer) error {
		sum.Reset()
		_, err := db.Backup(ctx, io.MultiWriter(w, sum))
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := daemonaudit.Append(ctx, db, backupEntry(f.by, path, res.Bytes, sum, nil, f.now())); err != nil {
		if rerr := os.Remove(path); rerr != nil {
			return nil, fmt.Errorf("backup %s: recording it in the audit log: %w (and removing it: %v)", path, err, rerr)
		}
		return nil, fmt.Errorf("backup %s: recording it in the audit log: %w; the backup was removed", path, err)
	}
	return res, nil
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

// saveBackup has the daemon stream the snapshot, which it records in its
// audit log with the socket peer as actor.
func (s socketStore) saveBackup(ctx context.Context, path string) (*bolt.BackupResult, error) {
	return bolt.SaveBackup(ctx, path, func(w io.Writer) error { return s.backup(ctx, w) })
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

// backupEntry is the audit entry of a store backup by: its size and the
// SHA-256 of the snapshot as written (sum), and path where the command
// wrote the file itself ("" when the daemon streamed it to the command,
// which names the file). A backup that stopped (err) is recorded as
// failed. The snapshot is taken before its entry is appended: a backup
// never holds its own entry.
func backupEntry(by admin.Principal, path string, n int64, sum hash.Hash, err error, now time.Time) *store.AuditEntry {
	e := &store.AuditEntry{Time: now, Kind: store.AuditStoreBackup, Actor: by.Actor, Outcome: store.AuditOK,
		Fields: map[string]string{"bytes": strconv.FormatInt(n, 10)}}
	if path != "" {
		// A file name need not be UTF-8; the audit log's text must be.
		e.Fields["path"] = strings.ToValidUTF8(path, "\uFFFD")
	}
	if err != nil {
		e.Outcome, e.Reason = store.AuditFailed, "the snapshot stopped before its end"
		return e
	}
	e.Fields["sha256"] = hex.EncodeToString(sum.Sum(nil))
	return e
}

// storeAdmin is what the store methods of the admin socket need;
// *bolt.DB satisfies it.
type storeAdmin interface {
	Check(ctx context.Context) (*bolt.CheckReport, error)
	Backup(ctx context.Context, w io.Writer) (int64, error)
}

// storeAdminHandler serves the store methods on the daemon's admin socket.
type storeAdminHandler struct {
	DB storeAdmin
	// Audit is the store whose audit log records each backup (the same
	// file as DB); Principal names the socket peer who asked.
	Audit     store.Store
	Principal func(cred *unix.Ucred) admin.Principal
	Now       func() time.Time
	Logger    *slog.Logger
}

// Mount adds the store methods to the admin socket's group g. The backup
// is streamed as it is written (one read transaction); a stream cut short
// does not check as a store, so the CLI refuses it.
func (h storeAdminHandler) Mount(g *echo.Group) error {
	if h.Audit == nil || h.Principal == nil {
		return errors.New("store admin: Audit and Principal are required")
	}
	if h.Now == nil {
		h.Now = time.Now
	}
	db, logger := h.DB, h.Logger
	gate := &admin.Local{Store: h.Audit, Now: h.Now, Logger: logger}
	// authorize names the peer and checks its roles: a backup copies every
	// record and hash the roles guard, so it is the security officer's; a
	// check reports only the file's health, to any role.
	authorize := func(c echo.Context, op string, roles []admin.Role) (admin.Principal, error) {
		cred, ok := adminrpc.Peer(c.Request().Context())
		if !ok {
			return admin.Principal{}, c.JSON(http.StatusForbidden, &admin.Error{Kind: admin.KindForbidden, Message: "admin socket: the peer's credentials are unknown"})
		}
		by := h.Principal(cred)
		if err := gate.Authorize(c.Request().Context(), by, op, roles); err != nil {
			return by, c.JSON(http.StatusForbidden, err)
		}
		return by, nil
	}
	g.POST("/admin/v1/StoreCheck", func(c echo.Context) error {
		if _, err := authorize(c, "StoreCheck", admin.Roles()); err != nil || c.Response().Committed {
			return err
		}
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
		ctx := c.Request().Context()
		by, err := authorize(c, "StoreBackup", []admin.Role{admin.RoleSecurityOfficer})
		if err != nil || c.Response().Committed {
			return err
		}
		c.Response().Header().Set(echo.HeaderContentType, "application/octet-stream")
		c.Response().WriteHeader(http.StatusOK)
		sum := sha256.New()
		n, err := db.Backup(ctx, io.MultiWriter(c.Response(), sum))
		entry := backupEntry(by, "", n, sum, err, h.Now())
		if aerr := daemonaudit.Append(ctx, h.Audit, entry); aerr != nil {
			logger.Error("store backup: the audit entry could not be written", "actor", by.Actor, "err", aerr)
		}
		if err != nil {
			logger.Error("store backup stopped", "bytes", n, "actor", by.Actor, "err", err)
			return nil
		}
		logger.Info("store backup streamed", "bytes", n, "actor", by.Actor, "sha256", entry.Fields["sha256"])
		return nil
	})
	return nil
}
