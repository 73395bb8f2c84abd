package oauth

import (
	"context"
	"time"
)

// Swept counts what one Sweep removed.
type Swept struct {
	Tokens, Requests, Codes, Sessions int
}

// Sweep removes expired access tokens, SAD, pending requests, codes (and
// code tombstones) and login sessions, in one write transaction. Its cost
// follows what it removes, not what is stored.
func (s *Server) Sweep(ctx context.Context) (Swept, error) {
	var n Swept
	now := s.now()
	err := s.store.Update(ctx, func(tx Tx) (err error) {
		if n.Tokens, err = tx.DeleteExpiredTokens(now); err != nil {
			return err
		}
		if n.Requests, err = tx.DeleteExpiredAuthRequests(now); err != nil {
			return err
		}
		if n.Codes, err = tx.DeleteExpiredCodes(now); err != nil {
			return err
		}
		n.Sessions, err = tx.DeleteExpiredSessions(now)
		return err
	})
	if err != nil {
		return Swept{}, err
	}
	return n, nil
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
						"codes", n.Codes, "sessions", n.Sessions)
				}
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}
