package main

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/signd/signd/store"
)

type storeOpts struct {
	config, in  string
	concurrency int
	duration    time.Duration
}

// storeBench consumes the SADs of a prepare file straight in the store, as
// signHash commits them (read the SAD, delete it, append the audit entry,
// one transaction), from o.concurrency goroutines until the SADs or
// o.duration run out: the latency of the store's commit alone, without
// HTTP and HSM.
func storeBench(ctx context.Context, o storeOpts, out io.Writer) error {
	switch {
	case o.config == "" || o.in == "":
		return errors.New("store needs --config and --in")
	case o.concurrency < 1 || o.concurrency > 256 || o.duration <= 0 || o.duration > maxDuration:
		return fmt.Errorf("--concurrency must be 1 to 256 and --duration up to %v", maxDuration)
	}
	f, err := readLoadFile(o.in)
	if err != nil {
		return err
	}
	db, err := openConfigStore(ctx, o.config)
	if err != nil {
		return err
	}
	defer db.Close()

	consume := func(it loadItem) error {
		return db.Update(ctx, func(tx store.Tx) error {
			h := store.Fingerprint(it.SAD)
			sad, err := tx.Token(h)
			if err != nil {
				return err
			}
			if err := tx.DeleteToken(h); err != nil {
				return err
			}
			return tx.AppendAudit(&store.AuditEntry{
				Kind: store.AuditSignHash, User: sad.Username, Client: sad.ClientID, Credential: sad.CredentialID,
				Hashes: []string{hex.EncodeToString(it.Hash)}, Outcome: store.AuditGranted,
			})
		})
	}
	var next atomic.Int64
	r := &result{mode: "store", concurrency: o.concurrency}
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(o.duration)
	for range o.concurrency {
		wg.Go(func() {
			var lat []time.Duration
			for time.Now().Before(deadline) && ctx.Err() == nil {
				i := next.Add(1) - 1
				if i >= int64(len(f.Items)) {
					break
				}
				t0 := time.Now()
				err := consume(f.Items[i])
				d := time.Since(t0)
				mu.Lock()
				if err != nil {
					r.errors++
					if r.firstError == "" {
						r.firstError = err.Error()
					}
				}
				mu.Unlock()
				if err == nil {
					lat = append(lat, d)
				}
			}
			mu.Lock()
			r.ok += len(lat)
			r.latencies = append(r.latencies, lat...)
			mu.Unlock()
		})
	}
	wg.Wait()
	if err := r.report(out, start, "commit"); err != nil {
		return err
	}
	return ctx.Err()
}
