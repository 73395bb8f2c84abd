package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "signd-cluster:", err)
		os.Exit(2)
	}
}

const usage = "usage: signd-cluster etcd|front|delay|ports|pick [flags] (see go doc ./cmd/signd-cluster)"

func run(ctx context.Context, args []string, out, errOut io.Writer) error {
	if len(args) == 0 {
		return errors.New(usage)
	}
	switch args[0] {
	case "etcd":
		o, err := parseMember(args[1:], errOut)
		if err != nil {
			return err
		}
		return runMember(ctx, o, errOut)
	case "front":
		o, err := parseFront(args[1:], errOut)
		if err != nil {
			return err
		}
		return runFront(ctx, o, errOut)
	case "delay":
		o, err := parseDelay(args[1:], errOut)
		if err != nil {
			return err
		}
		return runDelay(ctx, o, errOut)
	case "ports":
		if len(args) != 2 {
			return errors.New("usage: signd-cluster ports N (N from 1 to 64)")
		}
		n, err := strconv.Atoi(args[1])
		if err != nil || n < 1 || n > 64 {
			return fmt.Errorf("ports %q: want a number from 1 to 64", args[1])
		}
		ports, err := freePorts(n)
		if err != nil {
			return err
		}
		for _, p := range ports {
			fmt.Fprintln(out, p)
		}
		return nil
	case "pick":
		if len(args) < 2 || len(args) > 65 {
			return errors.New("usage: signd-cluster pick PORT... (1 to 64 ports)")
		}
		var want []int
		for _, a := range args[1:] {
			p, err := strconv.Atoi(a)
			if err != nil || p < 1 || p > 65535 {
				return fmt.Errorf("pick %q: want a port from 1 to 65535", a)
			}
			want = append(want, p)
		}
		ports, err := pickPorts(want)
		if err != nil {
			return err
		}
		for _, p := range ports {
			fmt.Fprintln(out, p)
		}
		return nil
	}
	return errors.New(usage)
}

// pickPorts returns, for each port in want, that port if 127.0.0.1:port
// could be listened on a moment ago, else (and for 0) a loopback port the
// kernel chose; no two the same (every listener stays open until all are
// picked).
func pickPorts(want []int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for _, p := range want {
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			if l, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
				return nil, err
			}
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// freePorts returns n loopback ports that were free a moment ago.
func freePorts(n int) ([]int, error) {
	return pickPorts(make([]int, n))
}
