package hsm

import (
	"errors"
	"fmt"
	"time"

	"github.com/signd/signd/hsm/ckr"
	"github.com/signd/signd/hsm/module"
)

// recoverLogin re-establishes the persistent session and the login after
// an operation in generation seen lost them, then flushes the handle cache.
// Concurrent callers collapse: only the first one of a generation works.
func (t *Token) recoverLogin(seen uint64) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.usableLocked(); err != nil {
		return err
	}
	if t.gen.Load() != seen {
		return nil // recovered meanwhile
	}
	t.mod.Mu.RLock()
	defer t.mod.Mu.RUnlock()
	err := t.currentLocked()
	switch {
	case errors.Is(err, ckr.ErrStaleModule):
		// Another Token re-initialized the module: every handle is void,
		// and its number may be reused, so nothing is closed.
		t.log.Info("hsm: module was re-initialized; opening sessions again", "token", t.label)
		err = t.establishLocked()
	case err == nil:
		err = t.reloginLocked()
	}
	if errors.Is(err, ErrPIN) {
		t.fatalLocked(err)
	}
	return err
}

// reloginLocked reopens the persistent session if it died, logs in, drops
// dead pool sessions and starts a new generation. The caller holds t.mu and
// t.mod.mu.RLock.
//
// A session is alive only if its number still stands for it (module.ours)
// and answers C_GetSessionInfo: opencryptoki and tpm2-pkcs11 give the
// number of a closed session to the next one opened, so a dead persistent
// session's number may answer for a pool session, or the other way round.
func (t *Token) reloginLocked() error {
	alive := t.mod.Ours(t.persistent)
	if alive {
		if _, err := t.lib.GetSessionInfo(t.persistent.H); err != nil {
			if ckr.Classify(err) != ckr.Session {
				return ckr.Wrap("C_GetSessionInfo", err)
			}
			alive = false
			t.mod.Forget(t.persistent)
		}
	}
	if !alive {
		s, err := t.openSession()
		if err != nil {
			return fmt.Errorf("hsm: open session on token %q: %w", t.label, err)
		}
		t.persistent = s
	}
	if err := t.login(t.persistent.H); err != nil {
		return err
	}
	handles := t.pool.Take()
	for i, s := range handles {
		if s.H == 0 {
			continue
		}
		if !t.mod.Ours(s) {
			handles[i] = module.Session{} // its number is another session's now
			continue
		}
		if _, err := t.lib.GetSessionInfo(s.H); err != nil {
			t.mod.Forget(s)
			handles[i] = module.Session{}
		}
	}
	t.pool.Put(handles)
	t.gen.Add(1)
	t.flushCache()
	return nil
}

// fatalLocked makes err, a PIN error, the answer to every later call.
func (t *Token) fatalLocked(err error) {
	t.fatal = err
	t.setUnavailable(err)
	t.log.Error("hsm: token unusable until restarted", "token", t.label, "error", err)
}

// markUnavailable marks the token unavailable after a device error in
// generation seen and starts the reconnect goroutine. Only the first error
// of an outage is logged.
func (t *Token) markUnavailable(op string, seen uint64, err error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.closed || t.fatal != nil || t.gen.Load() != seen {
		return // closed, hopeless, or reconnected since
	}
	t.bgMu.Lock()
	defer t.bgMu.Unlock()
	if t.stopping {
		return
	}
	why := fmt.Errorf("%w: reconnecting to token %q after %s", ErrTokenUnavailable, t.label, ckr.Code(err))
	if t.setUnavailable(why) {
		t.outages.Add(1)
		t.log.Error("hsm: token unavailable; reconnecting in the background", "token", t.label, "op", op, "error", err)
	}
	if !t.reconnecting {
		t.reconnecting = true
		t.bgWG.Add(1)
		go t.reconnectLoop()
	}
}

// reconnectLoop calls reconnect with exponential backoff until it
// succeeds, fails for good or the Token is closed.
func (t *Token) reconnectLoop() {
	defer t.bgWG.Done()
	delay := t.backoffMin
	timer := time.NewTimer(delay)
	defer timer.Stop()
	for attempt := 1; ; attempt++ {
		select {
		case <-t.bgDone:
			return
		case <-timer.C:
		}
		done, err := t.reconnect()
		switch {
		case done && err != nil:
			t.log.Error("hsm: reconnect gave up", "token", t.label, "attempt", attempt, "error", err)
			return
		case done:
			t.log.Info("hsm: token available again", "token", t.label, "attempt", attempt)
			return
		}
		delay = min(2*delay, t.backoffMax)
		t.log.Debug("hsm: reconnect failed", "token", t.label, "attempt", attempt, "retry_in", delay, "error", err)
		timer.Reset(delay)
	}
}

// reconnect makes one attempt: close the pool sessions, finalize and
// initialize the module (no dlclose), find the slot by label, open and log
// in the persistent session. done is true when there is nothing more to
// try: success, Close, or a PIN error.
//
// Every attempt finalizes again: SoftHSM2 (and PKCS#11 modules generally)
// list only the tokens present at C_Initialize, and a token that failed
// stays failed in the process until then, so an attempt on the same
// initialization could never see the token come back.
func (t *Token) reconnect() (done bool, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return true, nil
	}
	t.mod.Mu.RLock()
	if t.mod.Initialized && t.mod.Epoch == t.epoch {
		t.closePoolLocked()
	}
	seen := t.epoch
	t.mod.Mu.RUnlock()

	if err := t.mod.Reinit(seen); err != nil {
		return false, err
	}
	t.mod.Mu.RLock()
	defer t.mod.Mu.RUnlock()
	if err := t.establishLocked(); err != nil {
		if errors.Is(err, ErrPIN) {
			t.fatalLocked(err)
			return true, err
		}
		// Nothing of this initialization is held; the next attempt
		// finalizes it.
		t.epoch, t.persistent = t.mod.Epoch, module.Session{}
		return false, err
	}
	t.bgMu.Lock()
	t.why.Store(nil)
	t.available.Store(true)
	t.reconnecting = false
	t.bgMu.Unlock()
	return true, nil
}
