package storeadmin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/signd/signd/admin"
	"github.com/signd/signd/cmd/signd/adminrpc"
	"github.com/signd/signd/cmd/signd/daemonaudit"
	"github.com/signd/signd/store"
	"github.com/signd/signd/store/bolt"
	"golang.org/x/sys/unix"
)

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

// Backend is what the store methods of the admin socket need; *bolt.DB
// satisfies it.
type Backend interface {
	Check(ctx context.Context) (*bolt.CheckReport, error)
	Backup(ctx context.Context, w io.Writer) (int64, error)
}

// Handler serves the store methods on the daemon's admin socket.
type Handler struct {
	DB Backend
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
func (h Handler) Mount(g *echo.Group) error {
	if h.Audit == nil || h.Principal == nil {
		return errors.New("store admin: Audit and Principal are required")
	}
	if h.Now == nil {
		h.Now = time.Now
	}
	db, logger := h.DB, h.Logger
	gate := admin.New(admin.Config{Store: h.Audit, Now: h.Now, Logger: logger})
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
