package hsm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/pkcs11"
)

// Config says which token to open and how. cmd fills it from the
// configuration file.
type Config struct {
	Module            string        // absolute path of the PKCS#11 module
	TokenLabel        string        // CKA_LABEL of the token; slots are never configured by number
	PIN               string        // user PIN; never logged, never in an error
	MaxSessions       int           // pool size; 0 = runtime.GOMAXPROCS(0)
	AcquireTimeout    time.Duration // longest wait for a pool session; 0 = 2s
	MinRSABits        int           // smallest RSA key accepted for signing; 0 = 2048
	AllowImportedKeys bool          // tests only: accept keys that were not generated inside the token
	Logger            *slog.Logger  // nil = discard
	Metrics           Metrics       // nil = none
	// Wrap, tests only, wraps the loaded module for fault injection (see
	// package hsmtest). nil = the module as it is.
	Wrap func(Ctx) Ctx
}

// String describes c with the PIN redacted.
func (c Config) String() string {
	return fmt.Sprintf("hsm.Config{Module:%q TokenLabel:%q PIN:%s MaxSessions:%d AcquireTimeout:%v MinRSABits:%d AllowImportedKeys:%v}",
		c.Module, c.TokenLabel, redacted(c.PIN), c.MaxSessions, c.AcquireTimeout, c.MinRSABits, c.AllowImportedKeys)
}

// GoString is String, so %#v redacts too.
func (c Config) GoString() string { return c.String() }

// LogValue logs c with the PIN redacted.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("module", c.Module),
		slog.String("token_label", c.TokenLabel),
		slog.String("pin", redacted(c.PIN)),
		slog.Int("max_sessions", c.MaxSessions),
		slog.Duration("acquire_timeout", c.AcquireTimeout),
		slog.Int("min_rsa_bits", c.MinRSABits),
		slog.Bool("allow_imported_keys", c.AllowImportedKeys),
	)
}

func redacted(pin string) string {
	if pin == "" {
		return `""`
	}
	return "[REDACTED]"
}

// Metrics receives measurements; cmd adapts it to Prometheus. All methods
// must be safe for concurrent use and must not block.
type Metrics interface {
	// ObserveSign is called after every SignDigest (and Key.Sign) with
	// its total duration, pool wait included, and its error.
	ObserveSign(d time.Duration, err error)
	// ObservePoolWait is called after every wait for a pool session.
	ObservePoolWait(d time.Duration)
	// ObserveError is called with the CKR name (see ReturnCode) of every
	// failed PKCS#11 call, including those recovered from.
	ObserveError(code string)
}

// Defaults for zero Config fields, and the reconnect backoff: 100 ms,
// doubling up to 2 s, so a token that comes back is in use again within
// about 2 s plus one reconnect, with no probe traffic.
const (
	defaultAcquireTimeout = 2 * time.Second
	defaultMinRSABits     = 2048
	defaultBackoffMin     = 100 * time.Millisecond
	defaultBackoffMax     = 2 * time.Second
)

const sessionFlags = pkcs11.CKF_SERIAL_SESSION | pkcs11.CKF_RW_SESSION

// Token is a logged-in PKCS#11 token. It is safe for concurrent use.
type Token struct {
	label          string
	pin            string
	log            *slog.Logger
	metrics        Metrics
	poolSize       int
	acquireTimeout time.Duration
	minRSABits     int
	allowImported  bool
	backoffMin     time.Duration
	backoffMax     time.Duration

	mod *module
	lib p11 // mod.lib, or a fault-injecting wrapper in tests

	// mu: operations hold the read lock for as long as they use a session
	// or a handle; recovery, reconnect and Close hold the write lock, which
	// also collapses concurrent recoveries into one.
	mu         sync.RWMutex
	slot       uint
	persistent pkcs11.SessionHandle // logged in, never lent out
	epoch      uint64               // module epoch of persistent, pool and cache
	pool       *pool
	closed     bool
	fatal      error         // a PIN error: nothing is tried any more
	gen        atomic.Uint64 // bumped when handles may have become void; written under mu
	available  atomic.Bool   // false while reconnecting, after a PIN error and after Close
	// why is the error calls fail with while !available, so they can fail
	// without taking mu (a reconnect holds it for as long as the module
	// takes to answer).
	why     atomic.Pointer[error]
	outages atomic.Uint64 // device outages since Open

	cacheMu sync.Mutex
	cache   map[string]cachedKey // key ID → handle; flushed when gen changes

	genMu sync.Mutex // serializes GenerateRSA and ImportCertificate

	bgMu         sync.Mutex // guards reconnecting and stopping; after mu in lock order
	reconnecting bool
	stopping     bool
	bgDone       chan struct{}
	bgWG         sync.WaitGroup
}

// options are test hooks that Config does not expose.
type options struct {
	backoffMin time.Duration
	backoffMax time.Duration
}

// Open loads the module, finds the token labelled cfg.TokenLabel, logs in
// and opens the persistent session.
func Open(cfg Config) (*Token, error) {
	return open(cfg, options{})
}

func open(cfg Config, opt options) (*Token, error) {
	if cfg.TokenLabel == "" {
		return nil, fmt.Errorf("%w: no token label configured", ErrTokenNotFound)
	}
	if cfg.PIN == "" {
		return nil, fmt.Errorf("hsm: token %q: no PIN configured: %w", cfg.TokenLabel, ErrPIN)
	}
	t := &Token{
		label:          cfg.TokenLabel,
		pin:            cfg.PIN,
		log:            cfg.Logger,
		metrics:        cfg.Metrics,
		poolSize:       cfg.MaxSessions,
		acquireTimeout: cfg.AcquireTimeout,
		minRSABits:     cfg.MinRSABits,
		allowImported:  cfg.AllowImportedKeys,
		backoffMin:     opt.backoffMin,
		backoffMax:     opt.backoffMax,
		cache:          make(map[string]cachedKey),
		bgDone:         make(chan struct{}),
	}
	if t.log == nil {
		t.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if t.poolSize <= 0 {
		t.poolSize = runtime.GOMAXPROCS(0)
	}
	if t.acquireTimeout <= 0 {
		t.acquireTimeout = defaultAcquireTimeout
	}
	if t.minRSABits <= 0 {
		t.minRSABits = defaultMinRSABits
	}
	if t.backoffMin <= 0 {
		t.backoffMin = defaultBackoffMin
	}
	if t.backoffMax < t.backoffMin {
		t.backoffMax = max(defaultBackoffMax, t.backoffMin)
	}

	mod, err := openModule(cfg.Module)
	if err != nil {
		return nil, err
	}
	t.mod = mod
	t.lib = mod.lib
	if cfg.Wrap != nil {
		t.lib = cfg.Wrap(mod.lib)
	}

	t.mu.Lock()
	mod.mu.RLock()
	err = t.establishLocked()
	mod.mu.RUnlock()
	t.mu.Unlock()
	if err != nil {
		_ = mod.release()
		return nil, err
	}
	t.available.Store(true)
	t.log.Info("hsm: token opened", "token", t.label, "slot", t.slot, "module", mod.path, "sessions", t.poolSize)
	return t, nil
}

// establishLocked finds the slot, opens and logs in the persistent session
// and starts an empty pool and cache, discarding (without closing) whatever
// the Token held before. The caller holds t.mu and t.mod.mu.RLock.
func (t *Token) establishLocked() error {
	if !t.mod.initialized {
		return errNotInitialized
	}
	slot, err := t.findSlot()
	if err != nil {
		return err
	}
	s, err := t.lib.OpenSession(slot, sessionFlags)
	if err != nil {
		return fmt.Errorf("hsm: open session on token %q: %w", t.label, ckr("C_OpenSession", err))
	}
	if err := t.login(s); err != nil {
		_ = t.lib.CloseSession(s)
		return err
	}
	t.slot = slot
	t.persistent = s
	t.epoch = t.mod.epoch
	t.pool = newPool(t.poolSize)
	t.gen.Add(1)
	t.flushCache()
	return nil
}

// findSlot returns the one slot whose token carries t.label.
func (t *Token) findSlot() (uint, error) {
	slots, err := t.lib.GetSlotList(true)
	if err != nil {
		return 0, fmt.Errorf("hsm: list slots: %w", ckr("C_GetSlotList", err))
	}
	var found []uint
	var locked bool
	for _, id := range slots {
		ti, err := t.lib.GetTokenInfo(id)
		if err != nil {
			continue // removed meanwhile
		}
		if ti.Label == t.label {
			found = append(found, id)
			locked = ti.Flags&pkcs11.CKF_USER_PIN_LOCKED != 0
		}
	}
	switch {
	case len(found) == 0:
		return 0, fmt.Errorf("%w: no token labelled %q in %d slots", ErrTokenNotFound, t.label, len(slots))
	case len(found) > 1:
		return 0, fmt.Errorf("%w: %d tokens labelled %q", ErrTokenNotFound, len(found), t.label)
	case locked:
		return 0, fmt.Errorf("hsm: token %q: user PIN locked: %w", t.label, ErrPIN)
	}
	return found[0], nil
}

// login logs the user in on s. Login state belongs to the application and
// token, so CKR_USER_ALREADY_LOGGED_IN is success.
func (t *Token) login(s pkcs11.SessionHandle) error {
	err := t.lib.Login(s, pkcs11.CKU_USER, t.pin)
	switch {
	case err == nil, rv(err) == pkcs11.CKR_USER_ALREADY_LOGGED_IN:
		return nil
	case classify(err) == recoverPIN:
		return fmt.Errorf("hsm: log in to token %q: %w: %w", t.label, ckr("C_Login", err), ErrPIN)
	}
	return fmt.Errorf("hsm: log in to token %q: %w", t.label, ckr("C_Login", err))
}

// String names the token; it keeps the PIN out of %v and %+v.
func (t *Token) String() string { return fmt.Sprintf("hsm.Token{%q}", t.label) }

// GoString is String, for %#v.
func (t *Token) GoString() string { return t.String() }

// LogValue logs the token label.
func (t *Token) LogValue() slog.Value { return slog.StringValue(t.label) }

// Label returns the token label.
func (t *Token) Label() string { return t.label }

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
		switch classify(err) {
		case recoverSession, recoverLogin:
			if !retried {
				t.log.Warn("hsm: persistent session lost; logging in again", "token", t.label, "error", err)
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
	if err := t.unusable(); err != nil {
		return 0, err
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	if err := t.usableLocked(); err != nil {
		return 0, err
	}
	gen := t.gen.Load()
	t.mod.mu.RLock()
	defer t.mod.mu.RUnlock()
	if err := t.currentLocked(); err != nil {
		return gen, err
	}
	if err := t.checkLoggedIn(t.persistent); err != nil {
		return gen, err
	}
	if _, err := t.lib.GetTokenInfo(t.slot); err != nil {
		return gen, ckr("C_GetTokenInfo", err)
	}
	return gen, nil
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
	if !t.mod.initialized {
		return errNotInitialized
	}
	if t.mod.epoch != t.epoch {
		return errStaleModule
	}
	return nil
}

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
		switch classify(err) {
		case recoverSession:
			if !retriedSession {
				retriedSession = true
				t.log.Warn("hsm: session lost; replaced it, retrying", "token", t.label, "op", op, "error", err)
				continue
			}
		case recoverLogin:
			if !retriedLogin {
				retriedLogin = true
				t.log.Warn("hsm: login or object handles lost; logging in again, retrying", "token", t.label, "op", op, "error", err)
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
func (t *Token) failed(op string, gen uint64, err error) error {
	if classify(err) == recoverDevice {
		t.markUnavailable(op, gen, err)
		if !errors.Is(err, ErrTokenUnavailable) {
			return fmt.Errorf("hsm: %s: %w: %w", op, ErrTokenUnavailable, err)
		}
	}
	return fmt.Errorf("hsm: %s: %w", op, err)
}

// attempt runs fn once on a pooled session, under the read lock. With
// check, a pooled session is first asked for its state and replaced if it
// is dead. It returns the generation fn ran in, for recovery.
func (t *Token) attempt(ctx context.Context, check bool, fn func(s pkcs11.SessionHandle) error) (uint64, error) {
	if err := t.unusable(); err != nil {
		return 0, err
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	if err := t.usableLocked(); err != nil {
		return 0, err
	}
	gen := t.gen.Load()
	start := time.Now()
	s, err := t.pool.acquire(ctx, t.acquireTimeout)
	if t.metrics != nil {
		t.metrics.ObservePoolWait(time.Since(start))
	}
	if err != nil {
		return gen, err
	}
	t.mod.mu.RLock()
	defer t.mod.mu.RUnlock()
	if err := t.currentLocked(); err != nil {
		t.pool.release(s) // recovery resets the pool
		return gen, err
	}
	if s != 0 && check {
		if _, err := t.lib.GetSessionInfo(s); classify(err) == recoverSession {
			s = 0
		}
	}
	if s == 0 {
		s, err = t.lib.OpenSession(t.slot, sessionFlags)
		if err != nil {
			t.pool.release(0)
			return gen, ckr("C_OpenSession", err)
		}
	}
	err = fn(s)
	var d *discardError
	if classify(err) == recoverSession || errors.As(err, &d) {
		// Dead, or in an unknown state. The handle is ours (same epoch),
		// so closing it is safe; for a dead session it is a no-op.
		_ = t.lib.CloseSession(s)
		s = 0
	}
	t.pool.release(s)
	return gen, err
}

// discardError marks an error after which the session must not be reused,
// for example a failed C_Sign after a successful C_SignInit: the standard
// says the operation ended, but a module that disagrees would answer the
// next C_SignInit with CKR_OPERATION_ACTIVE.
type discardError struct{ err error }

func (e *discardError) Error() string { return e.err.Error() }
func (e *discardError) Unwrap() error { return e.err }

// discard wraps err in a discardError.
func discard(err error) error {
	if err == nil {
		return nil
	}
	return &discardError{err: err}
}

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
	t.mod.mu.RLock()
	defer t.mod.mu.RUnlock()
	err := t.currentLocked()
	switch {
	case errors.Is(err, errStaleModule):
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
func (t *Token) reloginLocked() error {
	if _, err := t.lib.GetSessionInfo(t.persistent); err != nil {
		if classify(err) != recoverSession {
			return ckr("C_GetSessionInfo", err)
		}
		s, err := t.lib.OpenSession(t.slot, sessionFlags)
		if err != nil {
			return fmt.Errorf("hsm: open session on token %q: %w", t.label, ckr("C_OpenSession", err))
		}
		t.persistent = s
	}
	if err := t.login(t.persistent); err != nil {
		return err
	}
	handles := t.pool.take()
	for i, s := range handles {
		if s == 0 {
			continue
		}
		if _, err := t.lib.GetSessionInfo(s); err != nil {
			handles[i] = 0
		}
	}
	t.pool.put(handles)
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
	why := fmt.Errorf("%w: reconnecting to token %q after %s", ErrTokenUnavailable, t.label, errorCode(err))
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
	t.mod.mu.RLock()
	if t.mod.initialized && t.mod.epoch == t.epoch {
		handles := t.pool.take()
		for _, s := range handles {
			if s != 0 {
				_ = t.lib.CloseSession(s)
			}
		}
		t.pool.put(make([]pkcs11.SessionHandle, len(handles)))
	}
	seen := t.epoch
	t.mod.mu.RUnlock()

	if err := t.mod.reinit(seen); err != nil {
		return false, err
	}
	t.mod.mu.RLock()
	defer t.mod.mu.RUnlock()
	if err := t.establishLocked(); err != nil {
		if errors.Is(err, ErrPIN) {
			t.fatalLocked(err)
			return true, err
		}
		// Nothing of this initialization is held; the next attempt
		// finalizes it.
		t.epoch, t.persistent = t.mod.epoch, 0
		return false, err
	}
	t.bgMu.Lock()
	t.why.Store(nil)
	t.available.Store(true)
	t.reconnecting = false
	t.bgMu.Unlock()
	return true, nil
}

// Close closes the Token's sessions, pool first and the persistent one
// last, so the module never sees a logged-in application without sessions
// while handles are in use. The last Token of a module calls C_Finalize;
// the module is never unloaded. C_Logout is never called. Close waits for
// running operations and stops a reconnect in progress.
func (t *Token) Close() error {
	t.bgMu.Lock()
	if t.stopping {
		t.bgMu.Unlock()
		return nil
	}
	t.stopping = true
	close(t.bgDone)
	t.bgMu.Unlock()
	t.bgWG.Wait()

	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	t.setUnavailable(ErrClosed)
	t.mod.mu.RLock()
	if t.mod.initialized && t.mod.epoch == t.epoch {
		for _, s := range t.pool.take() {
			if s != 0 {
				_ = t.lib.CloseSession(s)
			}
		}
		t.pool.put(make([]pkcs11.SessionHandle, t.poolSize))
		if t.persistent != 0 {
			_ = t.lib.CloseSession(t.persistent)
		}
	}
	t.mod.mu.RUnlock()
	t.flushCache()
	if err := t.mod.release(); err != nil {
		return fmt.Errorf("hsm: close token %q: %w", t.label, err)
	}
	return nil
}

func (t *Token) observeError(err error) {
	if t.metrics == nil {
		return
	}
	if code := ReturnCode(err); code != "" {
		t.metrics.ObserveError(code)
	}
}
