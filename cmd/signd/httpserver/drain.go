package httpserver

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"
)

// Named is one server Drain shuts down, named for the log.
type Named struct {
	Name   string
	Server *http.Server
}

// Drain shuts every server down at once within timeout: they stop
// accepting and finish the requests in flight; whatever has not finished
// when the time is up is cut (Close), so signd serve returns within
// timeout whatever a handler does.
func Drain(ctx context.Context, timeout time.Duration, logger *slog.Logger, servers ...Named) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.Server.Shutdown(sctx); err != nil {
				logger.Warn(s.Name+" drain incomplete: cutting the requests still running", "err", err, "timeout", timeout)
				_ = s.Server.Close()
			}
		}()
	}
	wg.Wait()
}
