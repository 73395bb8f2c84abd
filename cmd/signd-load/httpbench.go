package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
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
	endpoint := u.JoinPath("/csc/v1/signatures/signHash").String()
	client := &http.Client{
		Timeout:   30 * time.Second,
		Transport: &http.Transport{MaxIdleConns: o.concurrency, MaxIdleConnsPerHost: o.concurrency, IdleConnTimeout: time.Minute},
	}
	auth := "Bearer " + f.Bearer
	send := func(body []byte) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", auth)
		res, err := client.Do(req)
		if err != nil {
			return err
		}
		data, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %s", res.Status, bytes.TrimSpace(data))
		}
		return nil
	}

	var next atomic.Int64
	take := func() ([]byte, bool) {
		i := next.Add(1) - 1
		if i >= int64(len(bodies)) {
			return nil, false
		}
		return bodies[i], true
	}
	r := &result{mode: "http", concurrency: o.concurrency}
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
	r.elapsed = time.Since(start)
	r.print(out)
	if r.ok == 0 {
		return errors.New("no request succeeded")
	}
	return ctx.Err()
}
