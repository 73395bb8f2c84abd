package hsm

import (
	"context"
	"fmt"
	"time"
)

// pool is a bounded set of sessions for operations. A PKCS#11 session runs
// one operation at a time (SignInit then Sign), so each is lent to one
// goroutine. Slots start empty (handle 0, CK_INVALID_HANDLE) and are
// filled on first use. A slot holds the session with the serial of its
// C_OpenSession (see session): its number alone proves nothing once
// sessions have been closed.
//
// Sessions are taken and given back only while the Token's read lock is
// held, so under the write lock every slot is in the channel.
type pool struct {
	slots chan session
}

func newPool(size int) *pool {
	p := &pool{slots: make(chan session, size)}
	for range size {
		p.slots <- session{}
	}
	return p
}

// acquire takes a slot, waiting at most timeout or until ctx ends. The
// handle is 0 when the slot has no session yet.
func (p *pool) acquire(ctx context.Context, timeout time.Duration) (session, error) {
	select {
	case s := <-p.slots:
		return s, nil
	default:
	}
	if err := ctx.Err(); err != nil {
		return session{}, fmt.Errorf("%w: %w", ErrBusy, err)
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case s := <-p.slots:
		return s, nil
	case <-timer.C:
		return session{}, fmt.Errorf("%w: no session free after %v", ErrBusy, timeout)
	case <-ctx.Done():
		return session{}, fmt.Errorf("%w: %w", ErrBusy, ctx.Err())
	}
}

// release gives a slot back; s is zero when its session was discarded.
func (p *pool) release(s session) {
	p.slots <- s
}

// take empties the pool and returns every slot's handle (0 for empty
// slots). Only under the Token's write lock, when no slot is lent out.
func (p *pool) take() []session {
	out := make([]session, 0, cap(p.slots))
	for range cap(p.slots) {
		out = append(out, <-p.slots)
	}
	return out
}

// put refills the pool after take.
func (p *pool) put(handles []session) {
	for _, s := range handles {
		p.slots <- s
	}
}
