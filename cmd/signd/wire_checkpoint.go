package main

import (
	"log/slog"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/admin"
	"github.com/signd/signd/checkpoint"
	"github.com/signd/signd/cmd/signd/checkpointd"
	"github.com/signd/signd/config"
	"github.com/signd/signd/hsm"
	"github.com/signd/signd/store"
)

// Signed audit checkpoints (package checkpoint): the Maker the admin
// service and `signd audit` share, the daemon's timer and GET
// /audit/checkpoint (the commands are package cli's).

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
