package main

import (
	"context"
	"io"
	"log/slog"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/spf13/cobra"

	"github.com/signd/signd/admin"
	"github.com/signd/signd/cmd/signd/cli"
	"github.com/signd/signd/cmd/signd/lazytoken"
	"github.com/signd/signd/cmd/signd/reqlog"
	"github.com/signd/signd/cmd/signd/storeopen"
	"github.com/signd/signd/config"
	"github.com/signd/signd/hsm"
	"github.com/signd/signd/store"
)

// app carries what every command shares: the standard streams and the
// knobs tests turn. main builds one with the process's streams.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer

	// argon2 overrides the password hashing cost (tests); nil = defaults.
	argon2 *store.Argon2Params
	// now is the clock; nil = time.Now.
	now func() time.Time
	// ready, when set, is called by serve once both listeners accept.
	ready func(httpAddr, socket string)
	// metricsReady, when set, is called by serve with the address of the
	// metrics listener ("" when server.metrics_listen is empty).
	metricsReady func(addr string)
	// apiReady, when set, is called by serve with the address of the
	// provisioning API (admin.api_listen) once it accepts.
	apiReady func(addr string)
	// hup, when set, replaces SIGHUP for serve: each value reloads (tests).
	hup <-chan struct{}
	// adminHook, when set, is called by serve with the admin router after
	// its routes are mounted: fault injection for tests.
	adminHook func(*echo.Echo)
	// checkHook, when set, is called before each password or PIN
	// evaluation of the password checker (tests: a check held in its hash
	// while an admin command commits).
	checkHook func()
	// checkpointTicks, when set, replaces the ticker of
	// audit.checkpoint_interval (tests); the interval must still be set.
	checkpointTicks <-chan time.Time
	// stateTicks, when set, replaces the ticker of metrics.StateRefresh: each
	// value refreshes the metrics read from the store (tests).
	stateTicks <-chan time.Time
	// certStatusLoopback lets the certificate status fetches reach
	// loopback addresses, which they refuse otherwise (tests, whose
	// certstatustest CAs serve on 127.0.0.1).
	certStatusLoopback bool
}

func newApp(stdin io.Reader, stdout, stderr io.Writer) *app {
	return &app{stdin: stdin, stdout: stdout, stderr: stderr}
}

// root is the command tree (package cli) over this app: its streams, its
// clock, the store and token it opens when no daemon answers, and serve.
func (a *app) root() *cobra.Command {
	return cli.Root(cli.Deps{Stdin: a.stdin, Stdout: a.stdout, Stderr: a.stderr, Now: a.clock,
		Admin: a.localAdmin, Audit: a.localAudit, Pages: checkPages, Serve: a.serveCmd})
}

func (a *app) clock() time.Time {
	if a.now != nil {
		return a.now()
	}
	return time.Now()
}

func (a *app) hasher() (*store.Hasher, error) {
	p := store.DefaultArgon2Params()
	if a.argon2 != nil {
		p = *a.argon2
	}
	return store.NewHasher(p)
}

func newLogger(w io.Writer, cfg config.LogConfig) *slog.Logger {
	return newLeveledLogger(w, cfg.Format, cfg.SlogLevel())
}

// newLeveledLogger is newLogger with the level given apart: a
// *slog.LevelVar lets serve change it on reload.
func newLeveledLogger(w io.Writer, format string, level slog.Leveler) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	if format == "text" {
		return reqlog.WithRequestID(slog.New(slog.NewTextHandler(w, opts)))
	}
	return reqlog.WithRequestID(slog.New(slog.NewJSONHandler(w, opts)))
}

// openToken opens the PKCS#11 token named by the config; m (nil for none)
// receives the token's measurements.
func openToken(cfg *config.Config, logger *slog.Logger, m hsm.Metrics) (*hsm.Token, error) {
	pin, err := cfg.PKCS11.PINValue()
	if err != nil {
		return nil, err
	}
	return hsm.Open(hsm.Config{
		Module:         cfg.PKCS11.Module,
		TokenLabel:     cfg.PKCS11.TokenLabel,
		PIN:            pin.Reveal(),
		MaxSessions:    cfg.PKCS11.MaxSessions,
		AcquireTimeout: cfg.PKCS11.AcquireTimeout,
		Profile:        cfg.PKCS11.Profile,
		// RequireImmutableKeys refuses to enroll a key the token does not
		// freeze; hsm.Token.CheckKeys reports those already on it.
		RequireImmutableKeys: cfg.PKCS11.RequireImmutableKeys,
		Logger:               logger,
		Metrics:              m,
	})
}

// localAdmin is cli.Deps.Admin: admin.Local over the store and (lazily)
// the token of cfg, for an admin command run while no daemon answers.
func (a *app) localAdmin(cfg *config.Config) (*admin.Local, func(), error) {
	db, err := storeopen.OpenCommand(cfg)
	if err != nil {
		return nil, nil, err
	}
	h, err := a.hasher()
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	logger := a.commandLogger(cfg)
	roles, err := cli.AdminRoles(cfg, logger)
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	keys := lazytoken.New(func() (*hsm.Token, error) { return openToken(cfg, logger, nil) }, cfg.PKCS11.TokenLabel)
	local := admin.New(admin.Config{Store: db, Keys: keys, Hasher: h, Now: a.now, Logger: logger, RolesNow: rolesNow(roles, nil),
		OIDCKeys: newKeyRing(cfg, db, keys, a.now, logger), TSALabel: cfg.CSC.Timestamp.Label,
		DualControl: cfg.Admin.DualControlOps(), PendingTTL: cfg.Admin.PendingTTL,
		AuditKeyLabel: cfg.Audit.Label(), Checkpoints: newCheckpointMaker(cfg, db, keys, a.now, logger),
		EnrollBaseURL: cfg.Server.BaseURL, EnrollmentTTL: cfg.Admin.EnrollmentTTL})
	return local, func() { keys.Close(); db.Close() }, nil
}

// localAudit is cli.Deps.Audit: admin.Local over the store of cfg, for
// `signd audit verify` and `export` while no daemon answers.
func (a *app) localAudit(ctx context.Context, cfg *config.Config) (*admin.Local, func(), error) {
	db, err := storeopen.OpenCommand(cfg)
	if err != nil {
		return nil, nil, err
	}
	// Reading every entry of a file no daemon vouches for: judge every
	// page first, so that a damaged one is named instead of read (a bbolt
	// file; etcd checks its own pages).
	if f, ok := db.(structureChecker); ok {
		if err := f.CheckStructure(ctx); err != nil {
			db.Close()
			return nil, nil, err
		}
	}
	// The token is opened only to check a checkpoint without --key.
	logger := a.commandLogger(cfg)
	keys := lazytoken.New(func() (*hsm.Token, error) { return openToken(cfg, logger, nil) }, cfg.PKCS11.TokenLabel)
	local := admin.New(admin.Config{Store: db, Keys: keys, Now: a.now, Logger: logger,
		AuditKeyLabel: cfg.Audit.Label(), Checkpoints: newCheckpointMaker(cfg, db, keys, a.now, logger)})
	return local, func() { keys.Close(); db.Close() }, nil
}

// structureChecker is a store file whose pages can be judged before its
// records are read; *bolt.DB satisfies it.
type structureChecker interface {
	CheckStructure(ctx context.Context) error
}

// commandLogger is the logger of an admin command: it is not the daemon,
// so only warnings and errors of the store and token reach the operator's
// terminal, unless debug is asked.
func (a *app) commandLogger(cfg *config.Config) *slog.Logger {
	logCfg := cfg.Log
	if logCfg.Level != "debug" && logCfg.Level != "error" {
		logCfg.Level = "warn"
	}
	return newLogger(a.stderr, logCfg)
}

// checkPages is cli.Deps.Pages: the pages of cfg built as serve builds
// them.
func checkPages(cfg *config.Config) error {
	_, err := newPages(cfg)
	return err
}
