package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// delayOpts configure a delay proxy: every byte from a client of listen to
// to, and back, arrives delay later than it was sent.
type delayOpts struct {
	listen, to string
	delay      time.Duration
}

// maxDelay bounds --delay: a wide-area round trip, not a hang.
const maxDelay = 500 * time.Millisecond

func parseDelay(args []string, errOut io.Writer) (delayOpts, error) {
	var o delayOpts
	fs := flag.NewFlagSet("signd-cluster delay", flag.ContinueOnError)
	fs.SetOutput(errOut)
	fs.StringVar(&o.listen, "listen", "", "address to listen on, 127.0.0.1:PORT")
	fs.StringVar(&o.to, "to", "", "address to forward to, 127.0.0.1:PORT")
	fs.DurationVar(&o.delay, "delay", 0, "one-way latency added in each direction (1us to 500ms)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("delay: unexpected argument %q", fs.Arg(0))
	}
	if o.listen == "" || o.to == "" || o.delay == 0 {
		return o, errors.New("delay needs --listen, --to and --delay")
	}
	for _, a := range []struct{ flag, addr string }{{"--listen", o.listen}, {"--to", o.to}} {
		host, port, err := net.SplitHostPort(a.addr)
		if err != nil || port == "" {
			return o, fmt.Errorf("%s %q: want 127.0.0.1:PORT", a.flag, a.addr)
		}
		if !isLoopback(host) {
			return o, fmt.Errorf("%s %q: only loopback addresses are allowed", a.flag, a.addr)
		}
	}
	if o.listen == o.to {
		return o, fmt.Errorf("--to %q is --listen: the proxy would forward to itself", o.to)
	}
	if o.delay < time.Microsecond || o.delay > maxDelay {
		return o, fmt.Errorf("--delay %v: want 1us to 500ms", o.delay)
	}
	return o, nil
}

// runDelay listens and forwards each connection until ctx ends.
func runDelay(ctx context.Context, o delayOpts, errOut io.Writer) error {
	l, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("delay: %w", err)
	}
	fmt.Fprintf(errOut, "delay %s -> %s: %v each way\n", l.Addr(), o.to, o.delay)
	return serveDelay(ctx, l, o.to, o.delay)
}

// serveDelay forwards every connection accepted on l to the address to,
// each direction delayed by d, until ctx ends; then it closes l and every
// connection and returns nil.
func serveDelay(ctx context.Context, l net.Listener, to string, d time.Duration) error {
	var wg sync.WaitGroup
	stop := context.AfterFunc(ctx, func() { l.Close() })
	defer stop()
	defer wg.Wait()
	for {
		c, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("delay: %w", err)
		}
		wg.Go(func() { delayConn(ctx, c, to, d) })
	}
}

// delayConn forwards c to a new connection to the address to, both ways
// delayed by d, until either side closes or ctx ends.
func delayConn(ctx context.Context, c net.Conn, to string, d time.Duration) {
	defer c.Close()
	var dialer net.Dialer
	up, err := dialer.DialContext(ctx, "tcp", to)
	if err != nil {
		return
	}
	defer up.Close()
	stop := context.AfterFunc(ctx, func() { c.Close(); up.Close() })
	defer stop()
	var wg sync.WaitGroup
	wg.Go(func() { delayCopy(up, c, d) })
	wg.Go(func() { delayCopy(c, up, d) })
	wg.Wait()
}

// chunk is what one read returned, and when.
type chunk struct {
	data []byte
	at   time.Time
}

// delayCopy copies src to dst, writing each read's bytes d after the read
// returned them, in order; the end of src (EOF or an error) reaches dst d
// later too, as a half-close where it can, else a close.
func delayCopy(dst, src net.Conn, d time.Duration) {
	q := make(chan chunk, 1024)
	go func() {
		defer close(q)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				q <- chunk{buf[:n], time.Now()}
			}
			if err != nil {
				q <- chunk{nil, time.Now()} // the end
				return
			}
		}
	}()
	for ch := range q {
		time.Sleep(time.Until(ch.at.Add(d)))
		if ch.data == nil {
			break
		}
		if _, err := dst.Write(ch.data); err != nil {
			src.Close() // the reader stops at its next read
			break
		}
	}
	for range q { // let the reader finish
	}
	if tc, ok := dst.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
		return
	}
	dst.Close()
}
