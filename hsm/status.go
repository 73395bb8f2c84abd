package hsm

import (
	"context"
	"errors"
	"fmt"

	"github.com/miekg/pkcs11"
	"github.com/signd/signd/hsm/ckr"
)

// Available reports whether the token is usable: false while it is being
// reconnected after a device error, after a PIN error and after Close.
func (t *Token) Available() bool { return t.available.Load() }

// Status is the token's health as /readyz and the metrics report it
// (compare Vault's seal status).
type Status struct {
	Available bool
	// Reason says why the token is unavailable, for operators: "token
	// unavailable, reconnecting", "PIN refused, restart needed", "token
	// closed"; "" while available. It holds no PKCS#11 detail; the logs
	// and signd_hsm_errors_total have the return codes.
	Reason string
	// Outages counts the times a device-class error made the token
	// unavailable since Open.
	Outages uint64
}

// Status reports the token's health without calling the module.
func (t *Token) Status() Status {
	st := Status{Available: t.available.Load(), Outages: t.outages.Load()}
	if st.Available {
		return st
	}
	err := t.unusable()
	switch {
	case errors.Is(err, ErrClosed):
		st.Reason = "token closed"
	case errors.Is(err, ErrPIN):
		st.Reason = "PIN refused, restart needed"
	default:
		st.Reason = "token unavailable, reconnecting"
	}
	return st
}

// unusable returns why operations cannot start, nil when they can. It takes
// no lock, so calls fail fast during an outage even while the reconnect
// goroutine holds t.mu; usableLocked is the authoritative check.
func (t *Token) unusable() error {
	if t.available.Load() {
		return nil
	}
	if p := t.why.Load(); p != nil {
		return *p
	}
	return fmt.Errorf("%w: token %q", ErrTokenUnavailable, t.label)
}

// setUnavailable records why calls fail from now on and clears Available.
// It reports whether the token was available until now.
func (t *Token) setUnavailable(why error) bool {
	t.why.Store(&why)
	return t.available.Swap(false)
}

// Ping checks that the persistent session is alive and logged in
// (C_GetSessionInfo) and that the token answers (C_GetTokenInfo). A lost
// session or login is recovered once; a device error starts a reconnect.
// ctx is checked before each attempt; PKCS#11 calls cannot be cancelled.
func (t *Token) Ping(ctx context.Context) error {
	for retried := false; ; retried = true {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("hsm: ping token %q: %w", t.label, err)
		}
		gen, err := t.ping()
		if err == nil {
			return nil
		}
		t.observeError(err)
		switch ckr.Classify(err) {
		case ckr.Session, ckr.Login:
			if !retried {
				t.log.Warn("hsm: persistent module.Session lost; logging in again", "token", t.label, "error", err)
				if rerr := t.recoverLogin(gen); rerr != nil {
					return t.failed("ping", gen, rerr)
				}
				continue
			}
		}
		return t.failed("ping", gen, err)
	}
}

func (t *Token) ping() (uint64, error) {
	return t.readLocked(func() error {
		t.mod.Mu.RLock()
		defer t.mod.Mu.RUnlock()
		if err := t.currentLocked(); err != nil {
			return err
		}
		if !t.mod.Ours(t.persistent) {
			// Closed, and its number handed out again: recover.
			return ckr.Wrap("C_GetSessionInfo", pkcs11.Error(pkcs11.CKR_SESSION_HANDLE_INVALID))
		}
		if err := t.checkLoggedIn(t.persistent.H); err != nil {
			return err
		}
		if _, err := t.lib.GetTokenInfo(t.slot); err != nil {
			return ckr.Wrap("C_GetTokenInfo", err)
		}
		return nil
	})
}

// usableLocked returns why operations cannot start, if they cannot. The
// caller holds t.mu.
func (t *Token) usableLocked() error {
	switch {
	case t.closed:
		return ErrClosed
	case t.fatal != nil:
		return t.fatal
	case !t.available.Load():
		return fmt.Errorf("%w: reconnecting to token %q", ErrTokenUnavailable, t.label)
	}
	return nil
}

// currentLocked reports whether the Token's sessions and handles belong to
// the module's current initialization. The caller holds t.mu and
// t.mod.mu.RLock.
func (t *Token) currentLocked() error {
	if !t.mod.Initialized {
		return ckr.ErrNotInitialized
	}
	if t.mod.Epoch != t.epoch {
		return ckr.ErrStaleModule
	}
	return nil
}
