package passwords

import (
	"context"
	"time"
)

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

// do runs fn in a slot. It returns ErrBusy after waiting l.wait, or the
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
			return ErrBusy
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	defer func() { <-l.slots }()
	fn()
	return nil
}
