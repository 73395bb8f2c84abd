package oauth

import (
	"context"
	"time"

	"github.com/signd/signd/store"
)

// Swept counts what one Sweep removed.
type Swept = store.Swept

// defaultSweepBatch bounds one sweep transaction. Its cost is mostly the
// commit: token fingerprints are random, so every removed token dirties
// its own leaf pages (record, party and expiry indexes). 32 keep a sweep
// transaction near the cost of one signHash commit (docs/BENCHMARKS.md,
// "Sweeping").
const defaultSweepBatch = 32

// Sweep removes expired access tokens, SAD, pending requests, codes (and
// code tombstones) and login sessions. It works in write transactions of
// at most Config.SweepBatch records (store.SweepTx) until a transaction
// finds fewer, so it never holds the store's write lock for long however
// much has expired; between two transactions it waits as long as the last
// one took, so the writes of requests (signHash, token issue) waiting for
// the lock get it. Its cost follows what it removes, not what is stored.
// On an error, what earlier transactions removed stays removed and is
// counted.
func (s *Server) Sweep(ctx context.Context) (Swept, error) {
	var total Swept
	now := s.now()
	for {
		var n Swept
		start := time.Now() // the pause measures the lock's real hold time, not the store clock
		err := s.store.Update(ctx, func(tx Tx) (err error) {
			n, err = tx.SweepExpired(now, s.cfg.SweepBatch)
			return err
		})
		if err != nil {
			return total, err
		}
		total.Add(n)
		if n.Total() < s.cfg.SweepBatch {
			return total, nil
		}
		pause := time.NewTimer(time.Since(start))
		select {
		case <-ctx.Done():
			pause.Stop()
			return total, ctx.Err()
		case <-pause.C:
		}
	}
}

// StartSweeper runs Sweep every interval in the background until the
// returned stop function is called; stop waits for a running sweep.
func (s *Server) StartSweeper(interval time.Duration) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				n, err := s.Sweep(ctx)
				switch {
				case err != nil && ctx.Err() == nil:
					s.log.Error("sweep failed", "err", err)
				case n != Swept{}:
					s.log.Debug("swept expired records", "tokens", n.Tokens, "requests", n.Requests,
						"codes", n.Codes, "sessions", n.Sessions, "admin_requests", n.AdminRequests)
				}
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}
