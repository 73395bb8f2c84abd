package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

type frontOpts struct {
	listen   string
	backends []*url.URL
	check    time.Duration
}

// urlList is a repeatable flag.
type urlList []string

func (l *urlList) String() string     { return fmt.Sprint(*l) }
func (l *urlList) Set(s string) error { *l = append(*l, s); return nil }

func parseFront(args []string, errOut io.Writer) (frontOpts, error) {
	o := frontOpts{}
	var backends urlList
	fs := flag.NewFlagSet("signd-cluster front", flag.ContinueOnError)
	fs.SetOutput(errOut)
	fs.StringVar(&o.listen, "listen", "", "address to listen on, 127.0.0.1:PORT")
	fs.Var(&backends, "backend", "a signd node, http://127.0.0.1:PORT (repeat for each node)")
	fs.DurationVar(&o.check, "check", time.Second, "interval of the /readyz health check (100ms to 1m)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("front: unexpected argument %q", fs.Arg(0))
	}
	if o.listen == "" || len(backends) == 0 {
		return o, errors.New("front needs --listen and at least one --backend")
	}
	host, port, err := net.SplitHostPort(o.listen)
	if err != nil || port == "" {
		return o, fmt.Errorf("--listen %q: want 127.0.0.1:PORT", o.listen)
	}
	if !isLoopback(host) {
		return o, fmt.Errorf("--listen %q: only loopback addresses are allowed", o.listen)
	}
	if o.check < 100*time.Millisecond || o.check > time.Minute {
		return o, fmt.Errorf("--check %v: want 100ms to 1m", o.check)
	}
	if len(backends) > 64 {
		return o, errors.New("at most 64 --backend")
	}
	seen := map[string]bool{}
	for _, b := range backends {
		u, err := loopbackURL("--backend", b)
		if err != nil {
			return o, err
		}
		if seen[u.String()] {
			return o, fmt.Errorf("--backend %s given twice", u)
		}
		seen[u.String()] = true
		o.backends = append(o.backends, u)
	}
	return o, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// backend is one node and whether it is in the rotation.
type backend struct {
	url     *url.URL
	healthy atomic.Bool
}

// front is a round-robin reverse proxy over the healthy backends.
type front struct {
	backends []*backend
	next     atomic.Uint64
	client   *http.Client
	logger   *log.Logger
}

func newFront(o frontOpts, errOut io.Writer) *front {
	f := &front{client: &http.Client{Timeout: o.check}, logger: log.New(errOut, "front: ", log.LstdFlags)}
	for _, u := range o.backends {
		b := &backend{url: u}
		b.healthy.Store(true) // until the first check says otherwise
		f.backends = append(f.backends, b)
	}
	return f
}

// pick returns the next healthy backend in turn, or nil when none is.
func (f *front) pick() *backend {
	n := uint64(len(f.backends))
	start := f.next.Add(1) - 1
	for i := range n {
		b := f.backends[(start+i)%n]
		if b.healthy.Load() {
			return b
		}
	}
	return nil
}

type ctxKey struct{}

func (f *front) handler() http.Handler {
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			b := r.In.Context().Value(ctxKey{}).(*backend)
			r.SetURL(b.url)
			r.Out.Host = r.In.Host // the nodes' base_url is the front's address
			r.SetXForwarded()
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			b := r.Context().Value(ctxKey{}).(*backend)
			var op *net.OpError
			if errors.As(err, &op) && op.Op == "dial" && b.healthy.Swap(false) {
				f.logger.Printf("%s is down (%v); out of the rotation until /readyz answers", b.url, err)
			}
			http.Error(w, "bad gateway", http.StatusBadGateway)
		},
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := f.pick()
		if b == nil {
			http.Error(w, "no healthy signd node", http.StatusServiceUnavailable)
			return
		}
		rp.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, b)))
	})
}

// checkAll asks every backend's /readyz once, in parallel.
func (f *front) checkAll(ctx context.Context) {
	var wg sync.WaitGroup
	for _, b := range f.backends {
		wg.Go(func() {
			ok := false
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.url.JoinPath("readyz").String(), nil)
			if err == nil {
				if resp, err := f.client.Do(req); err == nil {
					_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
					resp.Body.Close()
					ok = resp.StatusCode == http.StatusOK
				}
			}
			if was := b.healthy.Swap(ok); was != ok && ctx.Err() == nil {
				state := map[bool]string{true: "healthy, back in the rotation", false: "not ready, out of the rotation"}[ok]
				f.logger.Printf("%s %s", b.url, state)
			}
		})
	}
	wg.Wait()
}

// runFront serves until ctx ends.
func runFront(ctx context.Context, o frontOpts, errOut io.Writer) error {
	f := newFront(o, errOut)
	l, err := net.Listen("tcp", o.listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: f.handler(), ReadHeaderTimeout: 10 * time.Second, ErrorLog: f.logger}
	go func() {
		t := time.NewTicker(o.check)
		defer t.Stop()
		for {
			f.checkAll(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	f.logger.Printf("listening on %s, %d backends", l.Addr(), len(f.backends))
	if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
