package module

import (
	"context"
	"fmt"
	"time"

	"github.com/signd/signd/hsm/ckr"
)

// Pool is a bounded set of sessions for operations. A PKCS#11 session runs
// one operation at a time (SignInit then Sign), so each is lent to one
// goroutine. Slots start empty (handle 0, CK_INVALID_HANDLE) and are
// filled on first use. A slot holds the session with the serial of its
// C_OpenSession (see Session): its number alone proves nothing once
// sessions have been closed.
//
// Sessions are taken and given back only while the Token's read lock is
// held, so under the write lock every slot is in the channel.
type Pool struct {
	slots chan Session
}

func NewPool(size int) *Pool {
	p := &Pool{slots: make(chan Session, size)}
	for range size {
		p.slots <- Session{}
	}
	return p
}

// Acquire takes a slot, waiting at most timeout or until ctx ends. The
// handle is 0 when the slot has no session yet.
func (p *Pool) Acquire(ctx context.Context, timeout time.Duration) (Session, error) {
	select {
	case s := <-p.slots:
		return s, nil
	default:
	}
	if err := ctx.Err(); err != nil {
		return Session{}, fmt.Errorf("%w: %w", ckr.ErrBusy, err)
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case s := <-p.slots:
		return s, nil
	case <-timer.C:
		return Session{}, fmt.Errorf("%w: no session free after %v", ckr.ErrBusy, timeout)
	case <-ctx.Done():
		return Session{}, fmt.Errorf("%w: %w", ckr.ErrBusy, ctx.Err())
	}
}

// Release gives a slot back; s is zero when its session was discarded.
func (p *Pool) Release(s Session) {
	p.slots <- s
}

// Take empties the pool and returns every slot's handle (0 for empty
// slots). Only under the Token's write lock, when no slot is lent out.
func (p *Pool) Take() []Session {
	out := make([]Session, 0, cap(p.slots))
	for range cap(p.slots) {
		out = append(out, <-p.slots)
	}
	return out
}

// Put refills the pool after Take.
func (p *Pool) Put(handles []Session) {
	for _, s := range handles {
		p.slots <- s
	}
}
