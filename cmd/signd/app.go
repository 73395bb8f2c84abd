package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/spf13/cobra"

	"github.com/signd/signd/admin"
	"github.com/signd/signd/cmd/signd/adminrpc"
	"github.com/signd/signd/cmd/signd/cliinput"
	"github.com/signd/signd/cmd/signd/lazytoken"
	"github.com/signd/signd/cmd/signd/reqlog"
	"github.com/signd/signd/cmd/signd/storeopen"
	"github.com/signd/signd/cmd/signd/version"
	"github.com/signd/signd/config"
	"github.com/signd/signd/hsm"
	"github.com/signd/signd/store"
)

// app carries what every command shares: the standard streams and the
// knobs tests turn. main builds one with the process's streams.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer

	cfgFile string
	jsonOut bool

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
	// checkpointTicks, when set, replaces the ticker of
	// audit.checkpoint_interval (tests); the interval must still be set.
	checkpointTicks <-chan time.Time
	// stateTicks, when set, replaces the ticker of metrics.StateRefresh: each
	// value refreshes the metrics read from the store (tests).
	stateTicks <-chan time.Time
}

func newApp(stdin io.Reader, stdout, stderr io.Writer) *app {
	return &app{stdin: stdin, stdout: stdout, stderr: stderr}
}

func (a *app) root() *cobra.Command {
	root := &cobra.Command{
		Use:           "signd",
		Short:         "HSM-backed remote signing appliance (CSC API v1 + OpenID Connect)",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.Version = version.Info().String()
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetIn(a.stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	pf := root.PersistentFlags()
	pf.StringVar(&a.cfgFile, "config", "", "config file (default ./signd.yaml, then /etc/signd/signd.yaml)")
	pf.BoolVar(&a.jsonOut, "json", false, "machine-readable JSON output")
	config.BindFlags(pf)
	root.AddCommand(a.serveCmd(), a.versionCmd(), a.whoamiCmd(), group(a.userCmd()), group(a.clientCmd()), group(a.credentialCmd()), group(a.oidcCmd()), group(a.tsaCmd()), group(a.hsmCmd()), group(a.auditCmd()), group(a.pendingCmd()), group(a.storeCmd()), group(a.configCmd()), a.manCmd())
	return root
}

// group makes a command that only holds subcommands refuse unknown ones
// (cobra would print help and succeed).
func group(cmd *cobra.Command) *cobra.Command {
	cmd.Args = cobra.ArbitraryArgs
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 {
			return fmt.Errorf("unknown command %q for %q", args[0], cmd.CommandPath())
		}
		return cmd.Help()
	}
	return cmd
}

func (a *app) clock() time.Time {
	if a.now != nil {
		return a.now()
	}
	return time.Now()
}

func (a *app) loadConfig(cmd *cobra.Command) (*config.Config, error) {
	return config.Load(config.Options{File: a.cfgFile, Flags: cmd.Flags()})
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

// adminService returns the daemon's admin API when it answers on the admin
// socket, else a Local service over the store and (lazily) the token, with
// the principal to pass it (this process's, localPrincipal; the daemon
// ignores it). The returned function releases what was opened.
func (a *app) adminService(cmd *cobra.Command) (admin.Service, admin.Principal, func(), error) {
	cfg, remote, err := a.dialAdmin(cmd)
	if err != nil {
		return nil, admin.Principal{}, nil, err
	}
	if remote != nil {
		return remote, admin.Principal{}, func() {}, nil
	}
	by, err := localPrincipal(cfg)
	if err != nil {
		return nil, admin.Principal{}, nil, err
	}
	db, err := storeopen.OpenCommand(cfg)
	if err != nil {
		return nil, admin.Principal{}, nil, err
	}
	h, err := a.hasher()
	if err != nil {
		db.Close()
		return nil, admin.Principal{}, nil, err
	}
	// An admin command is not the daemon: only warnings and errors of the
	// store and token reach the operator's terminal, unless debug is asked.
	logCfg := cfg.Log
	if logCfg.Level != "debug" && logCfg.Level != "error" {
		logCfg.Level = "warn"
	}
	logger := newLogger(a.stderr, logCfg)
	keys := lazytoken.New(func() (*hsm.Token, error) { return openToken(cfg, logger, nil) }, cfg.PKCS11.TokenLabel)
	local := &admin.Local{Store: db, Keys: keys, Hasher: h, Now: a.now, Logger: logger,
		OIDCKeys: newKeyRing(cfg, db, keys, a.now, logger), TSALabel: cfg.CSC.Timestamp.Label,
		DualControl: cfg.Admin.DualControlOps(), PendingTTL: cfg.Admin.PendingTTL,
		AuditKeyLabel: cfg.Audit.Label(), Checkpoints: newCheckpointMaker(cfg, db, keys, a.now, logger),
		EnrollBaseURL: cfg.Server.BaseURL, EnrollmentTTL: cfg.Admin.EnrollmentTTL}
	return local, by, func() { keys.Close(); db.Close() }, nil
}

// dialAdmin loads the configuration and returns it with the running
// daemon's admin API, or a nil API when no daemon listens on
// server.admin_socket: the commands that work where the store is ask the
// daemon first. It refuses a socket, or a process behind it, that is not
// root's, the caller's own or (with server.admin_group) the daemon's
// (admin.Trust).
func (a *app) dialAdmin(cmd *cobra.Command) (*config.Config, *adminrpc.Remote, error) {
	cfg, err := a.loadConfig(cmd)
	if err != nil {
		return nil, nil, err
	}
	gid, err := cfg.Server.AdminGID()
	if err != nil {
		return nil, nil, err
	}
	remote, err := adminrpc.Dial(cfg.Server.AdminSocket, adminrpc.TrustSelf(gid))
	return cfg, remote, err
}

// withAdmin runs fn with an admin service and releases it afterwards.
// The principal passed is this process's (localPrincipal); the daemon
// ignores it and names the caller from the socket's peer credentials.
func (a *app) withAdmin(cmd *cobra.Command, fn func(ctx context.Context, s admin.Service, by admin.Principal) error) error {
	s, by, done, err := a.adminService(cmd)
	if err != nil {
		return err
	}
	defer done()
	return fn(cmd.Context(), s, by)
}

// adminRoles resolves admin.roles (its group names to gids) into the
// roles of admin socket peers; logger (nil for none) hears of failed
// group lookups.
func adminRoles(cfg *config.Config, logger *slog.Logger) (adminrpc.Roles, error) {
	gids, err := cfg.Admin.Roles.GIDs()
	if err != nil {
		return adminrpc.Roles{}, err
	}
	m, err := admin.GroupRoleMap(gids)
	if err != nil {
		return adminrpc.Roles{}, err
	}
	return adminrpc.Roles{Map: m, Logger: logger}, nil
}

// localPrincipal is the operator running this command on the store
// directly, with no daemon. Its roles follow admin.roles exactly as the
// daemon's would for the same process (its effective gid and its user's
// groups); without admin.roles it holds every role, as every admin socket
// peer does.
func localPrincipal(cfg *config.Config) (admin.Principal, error) {
	roles, err := adminRoles(cfg, nil)
	if err != nil {
		return admin.Principal{}, err
	}
	return roles.PrincipalIDs(uint32(os.Geteuid()), uint32(os.Getegid())), nil
}

// show writes v as JSON with --json, else as text.
func show[T any](a *app, v T, text func(io.Writer, T) error) error {
	if a.jsonOut {
		return a.printJSON(v)
	}
	return text(a.stdout, v)
}

// printJSON writes v as indented JSON.
func (a *app) printJSON(v any) error {
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// readSecretFile reads a password, PIN or secret from path ("-" = stdin)
// (cliinput.ReadSecret).
func (a *app) readSecretFile(what, path string) (string, error) {
	return cliinput.ReadSecret(a.stdin, what, path)
}

// readFile reads at most limit bytes from path ("-" = stdin).
func (a *app) readFile(what, path string, limit int64) ([]byte, error) {
	return cliinput.ReadFile(a.stdin, what, path, limit)
}
