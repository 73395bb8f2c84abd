package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/spf13/cobra"

	"github.com/signd/signd/admin"
	"github.com/signd/signd/checkpoint"
	"github.com/signd/signd/config"
	"github.com/signd/signd/hsm"
	"github.com/signd/signd/store"
)

// Signed audit checkpoints (package checkpoint): the audit key commands,
// `signd audit checkpoint`, the daemon's timer and GET /audit/checkpoint.

var (
	_ admin.AuditKeys = (*hsm.Token)(nil)
	_ mounter         = checkpointHandler{}
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
	h := checkpointHandler{Dir: mk.Dir, Logger: logger}
	if err := h.Mount(e.Group("")); err != nil {
		return nil, nil, err
	}
	every := cfg.Audit.CheckpointInterval
	if every <= 0 {
		return mk, func() {}, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	ticker := time.NewTicker(every)
	if ticks == nil {
		ticks = ticker.C
	}
	done := make(chan struct{})
	go func() { defer close(done); mk.Run(ctx, ticks) }()
	logger.Info("audit checkpoints every interval", "interval", every, "dir", mk.Dir, "origin", mk.Origin)
	return mk, func() { cancel(); ticker.Stop(); <-done }, nil
}

// checkpointHandler serves the latest checkpoint of Dir to witnesses at
// GET /audit/checkpoint (text/plain, the signed note as written) and the
// verifier key at GET /audit/checkpoint.key (Dir's copy, written with
// each checkpoint and at the key's creation: a public request never asks
// the token anything): 404 while there is none, 503 when it cannot be
// read now.
type checkpointHandler struct {
	Dir    string
	Logger *slog.Logger
}

// Mount implements mounter.
func (h checkpointHandler) Mount(g *echo.Group) error {
	if h.Dir == "" {
		return errors.New("checkpoint handler without a directory")
	}
	g.GET("/audit/checkpoint", func(c echo.Context) error {
		return h.serveFile(c, checkpoint.LatestName, "no audit checkpoint has been signed yet", "the audit checkpoint cannot be read now")
	})
	g.GET("/audit/checkpoint.key", func(c echo.Context) error {
		return h.serveFile(c, checkpoint.KeyName, "no audit key has been created yet", "the audit key cannot be read now")
	})
	return nil
}

func textError(c echo.Context, status int, msg string) error {
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.String(status, msg+"\n")
}

// serveFile answers the file name of Dir as text/plain with an ETag and
// Last-Modified (a witness's conditional GET of an unchanged one gets
// 304), missing when there is none (404), unreadable when it cannot be
// read or is larger than a checkpoint may be (503).
func (h checkpointHandler) serveFile(c echo.Context, name, missing, unreadable string) error {
	path := filepath.Join(h.Dir, name)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return textError(c, http.StatusNotFound, missing)
	}
	if err != nil {
		h.Logger.Error("audit checkpoint file unreadable", "file", path, "err", err)
		return textError(c, http.StatusServiceUnavailable, unreadable)
	}
	defer f.Close()
	st, err := f.Stat()
	var data []byte
	if err == nil {
		data, err = io.ReadAll(io.LimitReader(f, checkpoint.MaxNote+1))
	}
	if err == nil && len(data) > checkpoint.MaxNote {
		err = fmt.Errorf("larger than %d bytes", checkpoint.MaxNote)
	}
	if err != nil {
		h.Logger.Error("audit checkpoint file unreadable", "file", path, "err", err)
		return textError(c, http.StatusServiceUnavailable, unreadable)
	}
	sum := sha256.Sum256(data)
	w := c.Response()
	w.Header().Set(echo.HeaderContentType, "text/plain; charset=utf-8")
	// Witnesses poll: each asks again, and a 304 answers an unchanged one.
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("ETag", `"`+hex.EncodeToString(sum[:16])+`"`)
	http.ServeContent(w, c.Request(), "", st.ModTime(), bytes.NewReader(data))
	return nil
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
