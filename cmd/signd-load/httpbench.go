package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

type httpOpts struct {
	url, in     string
	concurrency int
	duration    time.Duration
	warmup      int
}

// loopback refuses anything but a loopback address: this tool fires
// thousands of requests per second.
func loopback(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("--url %q: want http(s)://127.0.0.1:PORT", raw)
	}
	host := u.Hostname()
	if host == "localhost" {
		return u, nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("--url %q: only loopback addresses are allowed", raw)
	}
	return u, nil
}

// httpBench sends signHash requests, each with its own SAD, from
// o.concurrency goroutines until the SADs or o.duration run out.
func httpBench(ctx context.Context, o httpOpts, out io.Writer) error {
	u, err := loopback(o.url)
	if err != nil {
		return err
	}
	if o.concurrency < 1 || o.concurrency > 256 || o.duration <= 0 || o.duration > maxDuration || o.warmup < 0 {
		return fmt.Errorf("--concurrency must be 1 to 256 and --duration up to %v", maxDuration)
	}
	f, err := readLoadFile(o.in)
	if err != nil {
		return err
	}
	if len(f.Items) <= o.warmup {
		return fmt.Errorf("%s has %d SADs, fewer than the warm-up", o.in, len(f.Items))
	}
	// Bodies are built before the clock starts.
	bodies := make([][]byte, len(f.Items))
	for i, it := range f.Items {
		bodies[i], _ = json.Marshal(map[string]any{
			"credentialID": f.Credential, "SAD": it.SAD, "hash": []string{base64.StdEncoding.EncodeToString(it.Hash)},
			"hashAlgo": "2.16.840.1.101.3.4.2.1", "signAlgo": "1.2.840.113549.1.1.1",
		})
	}
	path := "/" + strings.TrimPrefix(u.JoinPath("csc/v1/signatures/signHash").Path, "/")
	for i, b := range bodies {
		bodies[i] = rawRequest(path, u.Host, "Bearer "+f.Bearer, "application/json", b)
	}
	return drive(ctx, driveOpts{
		mode: "http", addr: u.Host, want: []byte(`"signatures":["`), requests: bodies,
		concurrency: o.concurrency, duration: o.duration, warmup: o.warmup,
	}, out)
}

// driveOpts is one measurement of pre-serialized requests, each sent once.
type driveOpts struct {
	mode        string   // the mode= of the result line
	addr        string   // host:port, loopback
	want        []byte   // a 200 response's body must contain it
	requests    [][]byte // serialized requests; the first warmup are not counted
	concurrency int
	duration    time.Duration
	warmup      int
}

// drive sends o.requests from o.concurrency goroutines until the requests
// or o.duration run out, and prints the result line.
func drive(ctx context.Context, o driveOpts, out io.Writer) error {
	// Each worker owns one keep-alive connection (see rawConn): the client
	// shares the machine with the daemon, so it is kept lean, like wrk.
	conns := make(chan *rawConn, o.concurrency)
	for range o.concurrency {
		conns <- &rawConn{addr: o.addr, want: o.want}
	}
	send := func(req []byte) error {
		c := <-conns
		defer func() { conns <- c }()
		return c.do(ctx, req)
	}

	var next atomic.Int64
	take := func() ([]byte, bool) {
		i := next.Add(1) - 1
		if i >= int64(len(o.requests)) {
			return nil, false
		}
		return o.requests[i], true
	}
	r := &result{mode: o.mode, concurrency: o.concurrency}
	var mu sync.Mutex
	worker := func(deadline time.Time, count bool) {
		var lat []time.Duration
		for time.Now().Before(deadline) && ctx.Err() == nil {
			body, ok := take()
			if !ok {
				break
			}
			t0 := time.Now()
			err := send(body)
			d := time.Since(t0)
			if !count {
				continue
			}
			if err != nil {
				mu.Lock()
				r.errors++
				if r.firstError == "" {
					r.firstError = err.Error()
				}
				mu.Unlock()
				continue
			}
			lat = append(lat, d)
		}
		mu.Lock()
		r.ok += len(lat)
		r.latencies = append(r.latencies, lat...)
		mu.Unlock()
	}
	// Warm up connections and the daemon, uncounted.
	var wg sync.WaitGroup
	warmEnd := time.Now().Add(o.duration)
	per := max(o.warmup/o.concurrency, 1)
	for range o.concurrency {
		wg.Go(func() {
			for range per {
				if body, ok := take(); ok && time.Now().Before(warmEnd) {
					_ = send(body)
				}
			}
		})
	}
	wg.Wait()

	start := time.Now()
	deadline := start.Add(o.duration)
	for range o.concurrency {
		wg.Go(func() { worker(deadline, true) })
	}
	wg.Wait()
	if err := r.report(out, start, "request"); err != nil {
		return err
	}
	return ctx.Err()
}

// rawRequest serializes one HTTP/1.1 POST request; auth "" sends no
// Authorization header.
func rawRequest(path, host, auth, contentType string, body []byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "POST %s HTTP/1.1\r\nHost: %s\r\n", path, host)
	if auth != "" {
		fmt.Fprintf(&b, "Authorization: %s\r\n", auth)
	}
	fmt.Fprintf(&b, "Content-Type: %s\r\nContent-Length: %d\r\n\r\n", contentType, len(body))
	b.Write(body)
	return b.Bytes()
}

// rawConn is a minimal HTTP/1.1 keep-alive client for pre-serialized
// requests: it needs a Content-Length in the response (net/http sets one
// for small bodies) and redials when the server closes.
type rawConn struct {
	addr string
	want []byte // a 200 response's body must contain it
	conn net.Conn
	r    *bufio.Reader
}

func (c *rawConn) do(ctx context.Context, req []byte) error {
	if c.conn == nil {
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", c.addr)
		if err != nil {
			return err
		}
		c.conn, c.r = conn, bufio.NewReaderSize(conn, 4096)
	}
	_ = c.conn.SetDeadline(time.Now().Add(30 * time.Second))
	err := c.roundTrip(req)
	if err != nil && c.conn != nil {
		c.conn.Close()
		c.conn = nil
	}
	return err
}

func (c *rawConn) roundTrip(req []byte) error {
	if _, err := c.conn.Write(req); err != nil {
		return err
	}
	line, err := c.r.ReadSlice('\n')
	if err != nil {
		return err
	}
	status := string(bytes.TrimSpace(line))
	length, chunked, closing := -1, false, false
	for {
		line, err := c.r.ReadSlice('\n')
		if err != nil {
			return err
		}
		if len(line) <= 2 {
			break
		}
		k, v, _ := strings.Cut(strings.TrimSpace(string(line)), ":")
		switch strings.ToLower(k) {
		case "content-length":
			length, _ = strconv.Atoi(strings.TrimSpace(v))
		case "transfer-encoding":
			chunked = strings.EqualFold(strings.TrimSpace(v), "chunked")
		case "connection":
			closing = strings.EqualFold(strings.TrimSpace(v), "close")
		}
	}
	var body []byte
	switch {
	case chunked:
		if body, err = readChunked(c.r); err != nil {
			return err
		}
	case length >= 0:
		body = make([]byte, length)
		if _, err := io.ReadFull(c.r, body); err != nil {
			return err
		}
	case closing:
		body, _ = io.ReadAll(io.LimitReader(c.r, 4096))
	default:
		return fmt.Errorf("%s: response without Content-Length or chunked encoding", status)
	}
	if closing {
		c.conn.Close()
		c.conn = nil
	}
	if !strings.HasPrefix(status, "HTTP/1.1 200 ") {
		return fmt.Errorf("%s: %s", status, bytes.TrimSpace(body))
	}
	if !bytes.Contains(body, c.want) {
		// The body is not echoed: a token response carries bearer values.
		return fmt.Errorf("200 without %s (%d bytes)", c.want, len(body))
	}
	return nil
}

// readChunked reads a chunked body (RFC 9112 §7.1) without trailers.
func readChunked(r *bufio.Reader) ([]byte, error) {
	var body []byte
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return nil, err
		}
		size, err := strconv.ParseInt(strings.TrimSpace(strings.SplitN(string(line), ";", 2)[0]), 16, 32)
		if err != nil || size < 0 {
			return nil, fmt.Errorf("bad chunk size %q", line)
		}
		if size == 0 {
			_, err := r.ReadSlice('\n') // the empty line after the last chunk
			return body, err
		}
		chunk := make([]byte, size+2) // data and CRLF
		if _, err := io.ReadFull(r, chunk); err != nil {
			return nil, err
		}
		body = append(body, chunk[:size]...)
	}
}
