package oauth

import (
	"context"
	"errors"
	"time"
)

// errBusy is returned when no hashing slot freed up in time.
var errBusy = errors.New("oauth: too many concurrent password checks")

// limiter bounds concurrent argon2id checks: each holds its memory cost
// (64 MiB by default) for its duration, so an unbounded number of
// concurrent logins could exhaust memory. A caller waits up to wait for a
// slot.
type limiter struct {
	slots chan struct{}
	wait  time.Duration
}

func newLimiter(n int, wait time.Duration) *limiter {
	return &limiter{slots: make(chan struct{}, n), wait: wait}
}

// do runs fn in a slot. It returns errBusy after waiting l.wait, or the
// context's error.
func (l *limiter) do(ctx context.Context, fn func()) error {
	select {
	case l.slots <- struct{}{}:
	default:
		t := time.NewTimer(l.wait)
		defer t.Stop()
		select {
		case l.slots <- struct{}{}:
		case <-t.C:
			return errBusy
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	defer func() { <-l.slots }()
	fn()
	return nil
}
