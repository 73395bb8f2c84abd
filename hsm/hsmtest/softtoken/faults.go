package softtoken

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/signd/signd/hsm"
)

// Fault is what an injected call does.
type Fault struct {
	// Err is the error the call fails with (wrapped; errors.Is finds it);
	// nil lets the call through after Delay.
	Err error
	// Delay is latency added before the call, or before the failure. The
	// call holds its session meanwhile and, like a PKCS#11 call, does not
	// watch its context.
	Delay time.Duration
	// Times is how many calls the fault applies to; 0 means every call
	// until Clear.
	Times int
	// Signed, for SignDigest, says the error came after the device made a
	// signature (an unknown outcome): hsm.NotSigned reports false.
	Signed bool
}

// faults is the injection state of a Token, guarded by Token.mu.
type faults struct {
	faults map[string]*Fault
	hook   func(op string) error
	calls  map[string]int
	gone   bool // the device is gone
	down   bool // a call found it gone: calls fail at once until SetGone(false)
}

func newFaults() faults {
	return faults{faults: make(map[string]*Fault), calls: make(map[string]int)}
}

func checkOp(op string) {
	if !slices.Contains(operations, op) {
		panic(fmt.Sprintf("softtoken: unknown operation %q", op))
	}
}

// Inject makes calls of op behave as flt, replacing an earlier fault for
// op. An unknown op panics.
func (t *Token) Inject(op string, flt Fault) {
	checkOp(op)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.faults.faults[op] = &flt
}

// FailOnce makes the next call of op fail with err.
func (t *Token) FailOnce(op string, err error) { t.Inject(op, Fault{Err: err, Times: 1}) }

// FailAlways makes every call of op fail with err until Clear.
func (t *Token) FailAlways(op string, err error) { t.Inject(op, Fault{Err: err}) }

// Hook installs fn, asked before every call that reaches the device (after
// the token-gone check, before injected faults): a non-nil error fails the
// call. nil removes it. fn runs without the Token's lock, so it may inject
// faults, remove itself or SetGone.
func (t *Token) Hook(fn func(op string) error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.hook = fn
}

// SetGone makes the token vanish (true), as a removed token or a
// powered-off HSM does, or come back (false). While it is gone the first
// call that reaches the device fails with hsm.ErrTokenUnavailable and
// marks the token unavailable; from then on every call fails so at once.
// CheckKey and Key of a known key do not reach the device.
func (t *Token) SetGone(gone bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.gone = gone
	if !gone {
		t.down = false
	}
}

// Clear removes every injected fault, the hook and the token-gone state.
// Call counts stay.
func (t *Token) Clear() {
	t.mu.Lock()
	defer t.mu.Unlock()
	clear(t.faults.faults)
	t.hook = nil
	t.gone, t.down = false, false
}

// Calls returns how many times op was called, failed calls included.
func (t *Token) Calls(op string) int {
	checkOp(op)
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.calls[op]
}

// signedError marks an injected SignDigest failure after which a
// signature may exist (Fault.Signed).
type signedError struct{ err error }

func (e *signedError) Error() string { return e.err.Error() }
func (e *signedError) Unwrap() error { return e.err }

func unavailable(op string) error {
	return fmt.Errorf("softtoken: %s: %w: the software token is gone", op, hsm.ErrTokenUnavailable)
}

// begin starts a call of op: it counts it, fails it when the token is
// closed or known unavailable, takes a session and applies the outage,
// the hook and an injected fault. cached is the ID of the key a CheckKey
// or Key call asks for: when it exists the call does not reach the
// device. The returned function releases the session.
func (t *Token) begin(ctx context.Context, op string, cached []byte) (func(), error) {
	if err := t.count(op); err != nil {
		return nil, err
	}
	release, err := t.acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("softtoken: %s: %w", op, err)
	}
	if err := t.inject(op, cached); err != nil {
		release()
		return nil, err
	}
	return release, nil
}

// next goes on with another call of op on the session a begun call
// holds: it counts it, fails it when the token was closed or found
// unavailable meanwhile, and applies the outage, the hook and an injected
// fault.
func (t *Token) next(op string) error {
	if err := t.count(op); err != nil {
		return err
	}
	return t.inject(op, nil)
}

// count counts a call of op and fails it when the token was closed or
// found unavailable.
func (t *Token) count(op string) error {
	t.mu.Lock()
	t.calls[op]++
	closed, down := t.closed, t.down
	t.mu.Unlock()
	switch {
	case closed:
		return fmt.Errorf("softtoken: %s: %w", op, hsm.ErrClosed)
	case down:
		return unavailable(op)
	}
	return nil
}

// inject applies the outage, the hook and the fault of op.
func (t *Token) inject(op string, cached []byte) error {
	t.mu.Lock()
	_, isCached := t.keys[string(cached)]
	if t.gone && !(cached != nil && isCached) {
		t.down = true
		t.mu.Unlock()
		return unavailable(op)
	}
	hook := t.hook
	t.mu.Unlock()
	if hook != nil {
		if err := hook(op); err != nil {
			return fmt.Errorf("softtoken: %s: %w", op, err)
		}
	}
	t.mu.Lock()
	var flt Fault
	if p := t.faults.faults[op]; p != nil {
		flt = *p
		if p.Times > 0 {
			if p.Times--; p.Times == 0 {
				delete(t.faults.faults, op)
			}
		}
	}
	t.mu.Unlock()
	if flt.Delay > 0 {
		time.Sleep(flt.Delay)
	}
	if flt.Err == nil {
		return nil
	}
	err := fmt.Errorf("softtoken: %s: %w", op, flt.Err)
	if flt.Signed {
		return &signedError{err: err}
	}
	return err
}

// acquire takes a session as hsm's pool does: at once when one is free,
// else waiting at most AcquireTimeout or until ctx ends (hsm.ErrBusy).
func (t *Token) acquire(ctx context.Context) (func(), error) {
	if t.sessions == nil {
		return func() {}, nil
	}
	release := func() { <-t.sessions }
	select {
	case t.sessions <- struct{}{}:
		return release, nil
	default:
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", hsm.ErrBusy, err)
	}
	timer := time.NewTimer(t.acquireTimeout)
	defer timer.Stop()
	select {
	case t.sessions <- struct{}{}:
		return release, nil
	case <-timer.C:
		return nil, fmt.Errorf("%w: no session free after %v", hsm.ErrBusy, t.acquireTimeout)
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: %w", hsm.ErrBusy, ctx.Err())
	}
}
