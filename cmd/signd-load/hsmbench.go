package main

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/signd/signd/config"
	"github.com/signd/signd/hsm"
)

type hsmOpts struct {
	config, in  string
	concurrency []int
	duration    time.Duration
	max         int
}

// hsmBench signs with the credential's key through hsm.Token, opened as the
// daemon opens it (same module, token, PIN and pool size): the ceiling the
// HTTP path is compared with.
func hsmBench(ctx context.Context, o hsmOpts, out io.Writer) error {
	if o.config == "" || o.in == "" {
		return errors.New("hsm needs --config and --in")
	}
	if o.duration <= 0 || o.duration > maxDuration || o.max < 1 {
		return fmt.Errorf("--duration must be up to %v and --max positive", maxDuration)
	}
	f, err := readLoadFile(o.in)
	if err != nil {
		return err
	}
	cfg, err := config.Load(config.Options{File: o.config})
	if err != nil {
		return err
	}
	pin, err := cfg.PKCS11.PINValue()
	if err != nil {
		return err
	}
	tok, err := hsm.Open(hsm.Config{
		Module: cfg.PKCS11.Module, TokenLabel: cfg.PKCS11.TokenLabel, PIN: pin.Reveal(),
		MaxSessions: cfg.PKCS11.MaxSessions, AcquireTimeout: cfg.PKCS11.AcquireTimeout,
	})
	if err != nil {
		return err
	}
	defer tok.Close()
	digest := random32()
	if _, err := tok.SignDigest(ctx, f.KeyID, crypto.SHA256, digest); err != nil { // warm the key cache
		return err
	}
	for _, c := range o.concurrency {
		r := &result{mode: "hsm", concurrency: c}
		var next atomic.Int64
		var mu sync.Mutex
		var wg sync.WaitGroup
		deadline := time.Now().Add(o.duration)
		start := time.Now()
		for range c {
			wg.Go(func() {
				var lat []time.Duration
				for next.Add(1) <= int64(o.max) && time.Now().Before(deadline) && ctx.Err() == nil {
					t0 := time.Now()
					_, err := tok.SignDigest(ctx, f.KeyID, crypto.SHA256, digest)
					d := time.Since(t0)
					mu.Lock()
					if err != nil {
						r.errors++
						if r.firstError == "" {
							r.firstError = err.Error()
						}
					} else {
						r.ok++
					}
					mu.Unlock()
					if err == nil {
						lat = append(lat, d)
					}
				}
				mu.Lock()
				r.latencies = append(r.latencies, lat...)
				mu.Unlock()
			})
		}
		wg.Wait()
		r.elapsed = time.Since(start)
		r.print(out)
	}
	return ctx.Err()
}
