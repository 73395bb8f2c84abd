// Command signd is the signd daemon and its admin CLI.
//
//	signd serve                     run the daemon (Echo HTTP server + admin socket)
//	signd user|client|credential …  administer users, OAuth clients and credentials
//	signd store check|backup FILE   check the store file, or snapshot it
//
// See docs/CONFIG.md for the configuration keys and docs/CLI.md for every
// subcommand.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newApp(os.Stdin, os.Stdout, os.Stderr).root().ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "signd:", err)
		os.Exit(1)
	}
}
