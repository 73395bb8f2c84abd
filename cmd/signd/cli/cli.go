package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/signd/signd/admin"
	"github.com/signd/signd/cmd/signd/adminrpc"
	"github.com/signd/signd/cmd/signd/cliinput"
	"github.com/signd/signd/cmd/signd/version"
	"github.com/signd/signd/config"
)

// Deps is what the commands need of the process that runs them: its
// standard streams, its clock, and how to reach the store and the token
// when no daemon answers on the admin socket. cmd/signd fills it.
type Deps struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer

	// Now is the clock; nil = time.Now.
	Now func() time.Time

	// Admin opens the admin service on the store and (lazily) the token of
	// cfg, for a command run while no daemon answers on the admin socket;
	// done releases what it opened.
	Admin func(cfg *config.Config) (s *admin.Local, done func(), err error)
	// Audit is Admin for `signd audit verify` and `export`: the store's
	// pages judged before its records are read, the token opened only to
	// check a checkpoint without --key.
	Audit func(ctx context.Context, cfg *config.Config) (s *admin.Local, done func(), err error)
	// Pages builds cfg's HTML pages as serve does (`signd config check`).
	Pages func(cfg *config.Config) error
	// Serve builds `signd serve`; load reads the configuration as every
	// command does (--config, SIGND_* environment, flags).
	Serve func(load func(cmd *cobra.Command) (*config.Config, error)) *cobra.Command
}

// app carries what every command shares: the dependencies and the root
// command's flags.
type app struct {
	Deps

	cfgFile string
	jsonOut bool
}

// Root is the command tree of signd: the root command with its persistent
// flags (--config, --json and config.BindFlags) and every subcommand.
func Root(d Deps) *cobra.Command {
	a := &app{Deps: d}
	root := &cobra.Command{
		Use:           "signd",
		Short:         "HSM-backed remote signing appliance (CSC API v1 + OpenID Connect)",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.Version = version.Info().String()
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetIn(a.Stdin)
	root.SetOut(a.Stdout)
	root.SetErr(a.Stderr)
	pf := root.PersistentFlags()
	pf.StringVar(&a.cfgFile, "config", "", "config file (default /etc/signd/signd.yaml; never ./signd.yaml)")
	pf.BoolVar(&a.jsonOut, "json", false, "machine-readable JSON output")
	config.BindFlags(pf)
	root.AddCommand(a.Serve(a.loadConfig), a.versionCmd(), a.whoamiCmd(), group(a.userCmd()), group(a.clientCmd()), group(a.credentialCmd()), group(a.oidcCmd()), group(a.tsaCmd()), group(a.hsmCmd()), group(a.auditCmd()), group(a.pendingCmd()), group(a.storeCmd()), group(a.configCmd()), a.manCmd())
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
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// loadConfig reads the configuration as every command does: --config, else
// config.DefaultSearchPaths, then SIGND_* and the flags. When that fails
// without --config next to a ./signd.yaml, the error says that the working
// directory is not searched: a file there is anyone's who can write the
// directory root runs signd in.
func (a *app) loadConfig(cmd *cobra.Command) (*config.Config, error) {
	cfg, err := config.Load(config.Options{File: a.cfgFile, Flags: cmd.Flags()})
	if err != nil && a.cfgFile == "" {
		if fi, serr := os.Stat(workDirConfig); serr == nil && fi.Mode().IsRegular() {
			err = fmt.Errorf("%w\n(%s is not read: signd does not look for its configuration in the working directory; name it with --config %s)", err, workDirConfig, workDirConfig)
		}
	}
	return cfg, err
}

// workDirConfig is the file signd once read from the working directory.
const workDirConfig = "./signd.yaml"

// adminService returns the daemon's admin API when it answers on the admin
// socket, else a Local service over the store and (lazily) the token
// (Deps.Admin), with the principal to pass it (this process's,
// LocalPrincipal; the daemon ignores it). The returned function releases
// what was opened.
func (a *app) adminService(cmd *cobra.Command) (admin.Service, admin.Principal, func(), error) {
	cfg, remote, err := a.dialAdmin(cmd)
	if err != nil {
		return nil, admin.Principal{}, nil, err
	}
	if remote != nil {
		return remote, admin.Principal{}, func() {}, nil
	}
	by, err := LocalPrincipal(cfg)
	if err != nil {
		return nil, admin.Principal{}, nil, err
	}
	local, done, err := a.Admin(cfg)
	if err != nil {
		return nil, admin.Principal{}, nil, err
	}
	return local, by, done, nil
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
// The principal passed is this process's (LocalPrincipal); the daemon
// ignores it and names the caller from the socket's peer credentials.
func (a *app) withAdmin(cmd *cobra.Command, fn func(ctx context.Context, s admin.Service, by admin.Principal) error) error {
	s, by, done, err := a.adminService(cmd)
	if err != nil {
		return err
	}
	defer done()
	return fn(cmd.Context(), s, by)
}

// AdminRoles resolves admin.roles (its group names to gids) into the
// roles of admin socket peers; logger (nil for none) hears of failed
// group lookups.
func AdminRoles(cfg *config.Config, logger *slog.Logger) (adminrpc.Roles, error) {
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

// LocalPrincipal is the operator running this command on the store
// directly, with no daemon. Its roles follow admin.roles exactly as the
// daemon's would for the same process (its effective gid and its user's
// groups); without admin.roles it holds every role, as every admin socket
// peer does.
func LocalPrincipal(cfg *config.Config) (admin.Principal, error) {
	roles, err := AdminRoles(cfg, nil)
	if err != nil {
		return admin.Principal{}, err
	}
	return roles.PrincipalIDs(uint32(os.Geteuid()), uint32(os.Getegid())), nil
}

// printer returns the printer of an admin command's answer whose text
// form text writes: printer(a, text)(s.Op(...)) gives the operation's
// error back unchanged, else writes its answer as JSON with --json and as
// text otherwise.
func printer[T any](a *app, text func(io.Writer, T) error) func(T, error) error {
	return func(v T, err error) error {
		if err != nil {
			return err
		}
		if a.jsonOut {
			return a.printJSON(v)
		}
		return text(a.Stdout, v)
	}
}

// oneArg is an admin command of one argument (use names it: "show ID"):
// fn's answer for it, printed by printer with text. fn is often a method
// expression: oneArg(a, "show ID", "Show a client", textview.Client,
// admin.Service.ShowClient).
func oneArg[T any](a *app, use, short string, text func(io.Writer, T) error,
	fn func(s admin.Service, ctx context.Context, by admin.Principal, arg string) (T, error)) *cobra.Command {
	return &cobra.Command{
		Use: use, Short: short, Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withAdmin(cmd, func(ctx context.Context, s admin.Service, by admin.Principal) error {
				return printer(a, text)(fn(s, ctx, by, args[0]))
			})
		},
	}
}

// printJSON writes v as indented JSON.
func (a *app) printJSON(v any) error {
	enc := json.NewEncoder(a.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// readSecretFile reads a password, PIN or secret from path ("-" = stdin)
// (cliinput.ReadSecret).
func (a *app) readSecretFile(what, path string) (string, error) {
	return cliinput.ReadSecret(a.Stdin, what, path)
}

// readFile reads at most limit bytes from path ("-" = stdin).
func (a *app) readFile(what, path string, limit int64) ([]byte, error) {
	return cliinput.ReadFile(a.Stdin, what, path, limit)
}
