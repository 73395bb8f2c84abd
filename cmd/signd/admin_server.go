package main

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"
)

// namedServer is one listener serve drains at shutdown.
type namedServer struct {
	name string
	srv  *http.Server
}

// drain shuts every server down at once within timeout: they stop
// accepting and finish the requests in flight; whatever has not finished
// when the time is up is cut (Close), so serve returns within timeout
// whatever a handler does.
func drain(ctx context.Context, timeout time.Duration, logger *slog.Logger, servers ...namedServer) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.srv.Shutdown(sctx); err != nil {
				logger.Warn(s.name+" drain incomplete: cutting the requests still running", "err", err, "timeout", timeout)
				_ = s.srv.Close()
			}
		}()
	}
	wg.Wait()
}
