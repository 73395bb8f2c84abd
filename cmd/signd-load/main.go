package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "signd-load:", err)
		os.Exit(1)
	}
}

const usage = "usage: signd-load prepare|hsm|http|store|codes|token|phases [flags] (see go doc ./cmd/signd-load)"

func run(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 {
		return errors.New(usage)
	}
	fs := flag.NewFlagSet("signd-load "+args[0], flag.ContinueOnError)
	// Each subcommand declares its flags and what it runs once they parse.
	var cmd func() error
	switch args[0] {
	case "prepare":
		var p prepareOpts
		fs.StringVar(&p.config, "config", "", "signd config file (store.path is used)")
		fs.StringVar(&p.user, "user", "", "username the tokens are issued to")
		fs.StringVar(&p.client, "client", "", "client ID the tokens are issued to")
		fs.StringVar(&p.credential, "credential", "", "credential the SADs are bound to")
		fs.IntVar(&p.count, "count", 1000, "number of SADs (1 to 1000000)")
		fs.StringVar(&p.out, "out", "", "file to write the bearer values to")
		cmd = func() error { return prepare(ctx, p, out) }
	case "hsm":
		var h hsmOpts
		var conc string
		fs.StringVar(&h.config, "config", "", "signd config file (the pkcs11.* keys are used)")
		fs.StringVar(&h.in, "in", "", "file written by prepare (for the key ID)")
		fs.StringVar(&conc, "concurrency", "1,2,8,32", "comma-separated goroutine counts")
		fs.DurationVar(&h.duration, "duration", defaultDuration, "measuring time per concurrency (at most 5m)")
		fs.IntVar(&h.max, "max", 1000000, "most signatures per concurrency")
		cmd = func() error {
			var err error
			if h.concurrency, err = parseList(conc); err != nil {
				return err
			}
			return hsmBench(ctx, h, out)
		}
	case "http":
		var h httpOpts
		fs.StringVar(&h.url, "url", "", "base URL of the daemon (loopback only)")
		fs.StringVar(&h.in, "in", "", "file written by prepare")
		fs.IntVar(&h.concurrency, "concurrency", 1, "parallel requests (1 to 256)")
		fs.DurationVar(&h.duration, "duration", defaultDuration, "measuring time (at most 5m)")
		fs.IntVar(&h.warmup, "warmup", 50, "requests sent and not counted before measuring")
		cmd = func() error { return httpBench(ctx, h, out) }
	case "store":
		var s storeOpts
		fs.StringVar(&s.config, "config", "", "signd config file (the store.* keys are used)")
		fs.StringVar(&s.in, "in", "", "file written by prepare")
		fs.IntVar(&s.concurrency, "concurrency", 1, "parallel transactions (1 to 256)")
		fs.DurationVar(&s.duration, "duration", defaultDuration, "measuring time (at most 5m)")
		cmd = func() error { return storeBench(ctx, s, out) }
	case "codes":
		var c codesOpts
		fs.StringVar(&c.url, "url", "", "issuer URL of the OpenID provider (loopback only)")
		fs.StringVar(&c.client, "client", "", "client ID")
		fs.StringVar(&c.redirectURI, "redirect-uri", "", "registered redirect URI (read from the redirect, never visited)")
		fs.StringVar(&c.user, "user", "", "username for the login form")
		fs.StringVar(&c.passwordFile, "password-file", "", "file holding the user's password (first line)")
		fs.IntVar(&c.count, "count", 1000, "number of codes (1 to 100000)")
		fs.IntVar(&c.concurrency, "concurrency", 4, "browsers minting in parallel, each with its own login session (1 to 64)")
		fs.DurationVar(&c.duration, "duration", time.Minute, "time bound (at most 5m); the codes minted by then are written")
		fs.StringVar(&c.out, "out", "", "file to write the codes and PKCE verifiers to (mode 0600)")
		cmd = func() error { return mintCodes(ctx, c, out) }
	case "phases":
		var p phasesOpts
		fs.StringVar(&p.trace, "trace", "", "execution trace file (runtime/trace: go test -trace, signd serve --trace)")
		fs.StringVar(&p.task, "task", "signHash", "trace task type to tabulate")
		cmd = func() error { return phases(p, out) }
	case "token":
		var t tokenOpts
		fs.StringVar(&t.in, "in", "", "file written by codes")
		fs.StringVar(&t.secretFile, "secret-file", "", "file holding the client secret (first line)")
		fs.StringVar(&t.auth, "auth", "basic", "client authentication: basic (client_secret_basic) or post (client_secret_post)")
		fs.IntVar(&t.concurrency, "concurrency", 16, "parallel requests (1 to 256)")
		fs.DurationVar(&t.duration, "duration", defaultDuration, "measuring time (at most 5m)")
		fs.IntVar(&t.warmup, "warmup", 50, "codes exchanged and not counted before measuring")
		fs.StringVar(&t.alg, "alg", "", "count only ID tokens whose header starts {\"alg\":\"ALG\", (RS256, PS256, ES256); empty: any")
		cmd = func() error { return tokenBench(ctx, t, out) }
	default:
		return errors.New(usage)
	}
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	return cmd()
}

func parseList(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 256 {
			return nil, fmt.Errorf("concurrency %q: want numbers from 1 to 256", f)
		}
		out = append(out, n)
	}
	return out, nil
}
