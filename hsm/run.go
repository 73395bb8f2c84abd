package hsm

import (
	"context"
	"errors"
	"fmt"
	"runtime/trace"
	"time"

	"github.com/miekg/pkcs11"
	"github.com/signd/signd/hsm/ckr"
	"github.com/signd/signd/hsm/module"
)

// run calls fn with a pooled session and recovers from session, login and
// device failures (see the package documentation). op names the operation
// in errors and logs. fn may run twice or three times.
func (t *Token) run(ctx context.Context, op string, fn func(s pkcs11.SessionHandle) error) error {
	var retriedSession, retriedLogin bool
	for {
		// After a dead session, the pool may hold more (CloseAllSessions):
		// the retry checks the session it draws.
		gen, err := t.attempt(ctx, retriedSession, fn)
		if err == nil {
			return nil
		}
		t.observeError(err)
		switch ckr.Classify(err) {
		case ckr.Session:
			if !retriedSession {
				retriedSession = true
				t.log.WarnContext(ctx, "hsm: session lost; replaced it, retrying", "token", t.label, "op", op, "error", err)
				continue
			}
		case ckr.Login:
			if !retriedLogin {
				retriedLogin = true
				t.log.WarnContext(ctx, "hsm: login or object handles lost; logging in again, retrying", "token", t.label, "op", op, "error", err)
				if rerr := t.recoverLogin(gen); rerr != nil {
					return t.failed(op, gen, rerr)
				}
				continue
			}
		}
		return t.failed(op, gen, err)
	}
}

// failed wraps the final error of op, starting a reconnect when it is a
// device error.
//
// An ambiguous error (confirm class) is a device error only when the
// token does not answer C_GetTokenInfo either; while it answers, the one
// operation failed and the token stays available.
func (t *Token) failed(op string, gen uint64, err error) error {
	if ckr.Classify(err) == ckr.Confirm {
		err = t.confirm(err)
	}
	if ckr.Classify(err) == ckr.Device {
		t.markUnavailable(op, gen, err)
		if !errors.Is(err, ErrTokenUnavailable) {
			return fmt.Errorf("hsm: %s: %w: %w", op, ErrTokenUnavailable, err)
		}
	}
	return fmt.Errorf("hsm: %s: %w", op, err)
}

// confirm decides an ambiguous error by asking the token for its info:
// device class (errTokenGone) when it does not answer, caller class
// (ckr.Refused) when it does.
func (t *Token) confirm(err error) error {
	_, cerr := t.readLocked(func() error {
		t.mod.Mu.RLock()
		defer t.mod.Mu.RUnlock()
		if err := t.currentLocked(); err != nil {
			return err
		}
		return t.answers()
	})
	switch {
	case cerr == nil:
		return ckr.Refused(err)
	case ckr.Classify(cerr) == ckr.Device:
		return fmt.Errorf("%w: %w (then %w)", ckr.ErrTokenGone, err, cerr)
	}
	return err // closed, or unavailable already
}

// readLocked runs fn under the read lock once the token is usable, and
// returns the generation fn ran in (0 when the token is not usable) and
// fn's error.
func (t *Token) readLocked(fn func() error) (uint64, error) {
	if err := t.unusable(); err != nil {
		return 0, err
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	if err := t.usableLocked(); err != nil {
		return 0, err
	}
	gen := t.gen.Load()
	return gen, fn()
}

// attempt runs fn once on a pooled session, under the read lock. With
// check, a pooled session is first asked for its state and replaced if it
// is dead. It returns the generation fn ran in, for recovery.
func (t *Token) attempt(ctx context.Context, check bool, fn func(s pkcs11.SessionHandle) error) (uint64, error) {
	return t.readLocked(func() error {
		start := time.Now()
		reg := trace.StartRegion(ctx, "hsm.acquire") // runtime/trace; a no-op without a trace
		s, err := t.pool.Acquire(ctx, t.acquireTimeout)
		reg.End()
		if t.metrics != nil {
			t.metrics.ObservePoolWait(time.Since(start))
		}
		if err != nil {
			return err
		}
		t.mod.Mu.RLock()
		defer t.mod.Mu.RUnlock()
		if err := t.currentLocked(); err != nil {
			t.pool.Release(s) // recovery resets the pool
			return err
		}
		if s.H != 0 && !t.mod.Ours(s) {
			s = module.Session{} // closed, and its number given to another session
		}
		if s.H != 0 && check {
			if _, err := t.lib.GetSessionInfo(s.H); ckr.Classify(err) == ckr.Session {
				t.mod.Forget(s)
				s = module.Session{}
			}
		}
		if s.H == 0 {
			s, err = t.openSession()
			if err != nil {
				t.pool.Release(module.Session{})
				return err
			}
		}
		err = fn(s.H)
		switch {
		case ckr.Closed(err):
			// The module says the session is closed: its number may be
			// handed out again at any moment, so it is forgotten, never
			// closed.
			t.mod.Forget(s)
			s = module.Session{}
		case ckr.Spoiled(err):
			// In an unknown state. closeSession closes it only while its
			// number is still its own.
			_ = t.closeSession(s)
			s = module.Session{}
		}
		t.pool.Release(s)
		return err
	})
}
