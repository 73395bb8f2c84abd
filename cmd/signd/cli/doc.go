// Package cli is signd's command tree (cobra): the root command with its
// persistent flags (--config, --json and the config.BindFlags overrides),
// and the admin commands — user, client, credential, oidc, tsa, hsm, audit,
// pending, store, config, whoami, version and the hidden man.
//
// Root builds the tree from Deps, what the commands need of the process:
// its standard streams and clock, how to open the admin service on the
// store and the token when no daemon answers on the admin socket (Admin,
// Audit), how serve builds its pages (Pages, for `signd config check`) and
// `signd serve` itself (Serve). cmd/signd fills Deps with its wiring; its
// main runs the tree.
//
// An admin command asks the running daemon first, over the admin socket
// (adminrpc.Remote); while none answers, it works on the store directly as
// the operator running it (LocalPrincipal, whose roles follow admin.roles
// as the daemon's AdminRoles would judge the same process). Either way it
// calls admin.Service, so a command behaves the same with or without a
// daemon. Text output is package textview's, input from files package
// cliinput's; --json writes the admin service's views as they are.
package cli
