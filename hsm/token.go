package hsm

import (
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/pkcs11"
	"github.com/signd/signd/hsm/caps"
	"github.com/signd/signd/hsm/ckr"
	"github.com/signd/signd/hsm/keyobj"
	"github.com/signd/signd/hsm/module"
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
	profile        string // Config.Profile, resolved: ProfileAuto, ProfileStrict or ProfileTokenFixedUsage
	requireFrozen  bool   // Config.RequireImmutableKeys

	// caps is what the token said of itself at Open; never changed.
	caps *Capabilities
	// noCopyable: the token refused CKA_COPYABLE (CKR_ATTRIBUTE_TYPE_INVALID)
	// or predates it (Cryptoki < 2.40); fixedUsage: key templates leave
	// the usages the token fixes itself unset (ProfileTokenFixedUsage, or
	// ProfileAuto after the token refused the strict template).
	noCopyable atomic.Bool
	fixedUsage atomic.Bool
	// schemeRefusals and schemeAccepted remember, per signature scheme
	// and key size (scheme.Scheme.Key), the token's C_SignInit refusal
	// (an error) or acceptance, for CheckSign.
	schemeRefusals sync.Map
	schemeAccepted sync.Map
	// badCerts holds the SHA-256 of each certificate value Certificates
	// could not parse and logged (badCertificate).
	badCerts sync.Map

	mod *module.Module
	lib p11            // mod.Lib, or a fault-injecting wrapper in tests
	obj keyobj.Objects // key objects through lib

	// mu: operations hold the read lock for as long as they use a session
	// or a handle; recovery, reconnect and Close hold the write lock, which
	// also collapses concurrent recoveries into one.
	mu         sync.RWMutex
	slot       uint
	persistent module.Session // logged in, never lent out
	epoch      uint64         // module epoch of persistent, pool and cache
	pool       *module.Pool
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
	// cacheMax bounds len(cache) (Config.KeyCacheSize).
	cacheMax int

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
		cacheMax:       cfg.KeyCacheSize,
		bgDone:         make(chan struct{}),
	}
	if t.log == nil {
		t.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if t.poolSize <= 0 {
		t.poolSize = runtime.GOMAXPROCS(0)
	}
	if t.cacheMax <= 0 {
		t.cacheMax = DefaultKeyCacheSize
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
	switch cfg.Profile {
	case "", ProfileAuto:
		t.profile = ProfileAuto
	case ProfileStrict, ProfileTokenFixedUsage:
		t.profile = cfg.Profile
	default:
		return nil, fmt.Errorf("hsm: unknown key template profile %q (%s, %s or %s)", cfg.Profile, ProfileAuto, ProfileStrict, ProfileTokenFixedUsage)
	}
	t.requireFrozen = cfg.RequireImmutableKeys
	if t.backoffMax < t.backoffMin {
		t.backoffMax = max(defaultBackoffMax, t.backoffMin)
	}

	mod, err := module.Open(cfg.Module)
	if err != nil {
		return nil, err
	}
	t.mod = mod
	t.lib = mod.Lib
	if cfg.Wrap != nil {
		t.lib = cfg.Wrap(mod.Lib)
	}
	t.obj = keyobj.Objects{Lib: t.lib, CopyMu: &mod.CopyMu}

	t.mu.Lock()
	mod.Mu.RLock()
	err = t.establishLocked()
	if err == nil {
		t.caps, err = caps.Probe(t.lib, mod.Path, t.slot)
		if err != nil {
			err = fmt.Errorf("hsm: token %q: %w", t.label, err)
			_ = t.closeSession(t.persistent)
		}
	}
	mod.Mu.RUnlock()
	t.mu.Unlock()
	if err != nil {
		_ = mod.Release()
		return nil, err
	}
	t.adaptTemplates()
	t.available.Store(true)
	t.log.Info("hsm: token opened", "token", t.label, "slot", t.slot, "sessions", t.poolSize, "capabilities", t.caps)
	return t, nil
}

// Capabilities returns what the token said of itself at Open. The caller
// must not modify it.
func (t *Token) Capabilities() *Capabilities { return t.caps }

// openSession opens a session on t.slot and registers its number. The
// caller holds t.mod.mu.RLock.
func (t *Token) openSession() (module.Session, error) {
	return t.mod.OpenSession(t.lib, t.slot, sessionFlags)
}

// closeSession closes s if its number still stands for it; a number the
// module has handed out again belongs to another session, which must not
// be closed. The caller holds t.mod.mu.RLock.
func (t *Token) closeSession(s module.Session) error {
	return t.mod.CloseSession(t.lib, s)
}

// establishLocked finds the slot, opens and logs in the persistent session
// and starts an empty pool and cache, discarding (without closing) whatever
// the Token held before. The caller holds t.mu and t.mod.mu.RLock.
func (t *Token) establishLocked() error {
	if !t.mod.Initialized {
		return ckr.ErrNotInitialized
	}
	slot, err := t.findSlot()
	if err != nil {
		return err
	}
	t.slot = slot
	s, err := t.openSession()
	if err != nil {
		return fmt.Errorf("hsm: open session on token %q: %w", t.label, err)
	}
	if err := t.login(s.H); err != nil {
		_ = t.closeSession(s)
		return err
	}
	t.persistent = s
	t.epoch = t.mod.Epoch
	t.pool = module.NewPool(t.poolSize)
	t.gen.Add(1)
	t.flushCache()
	return nil
}

// findSlot returns the one slot whose token carries t.label.
func (t *Token) findSlot() (uint, error) {
	slots, err := t.lib.GetSlotList(true)
	if err != nil {
		return 0, fmt.Errorf("hsm: list slots: %w", ckr.Wrap("C_GetSlotList", err))
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
	case err == nil, ckr.RV(err) == pkcs11.CKR_USER_ALREADY_LOGGED_IN:
		return nil
	case ckr.Classify(err) == ckr.PIN:
		return fmt.Errorf("hsm: log in to token %q: %w: %w", t.label, ckr.Wrap("C_Login", err), ErrPIN)
	}
	return fmt.Errorf("hsm: log in to token %q: %w", t.label, ckr.Wrap("C_Login", err))
}

// String names the token; it keeps the PIN out of %v and %+v.
func (t *Token) String() string { return fmt.Sprintf("hsm.Token{%q}", t.label) }

// GoString is String, for %#v.
func (t *Token) GoString() string { return t.String() }

// LogValue logs the token label.
func (t *Token) LogValue() slog.Value { return slog.StringValue(t.label) }

// Label returns the token label.
func (t *Token) Label() string { return t.label }

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
	t.mod.Mu.RLock()
	if t.mod.Initialized && t.mod.Epoch == t.epoch {
		t.closePoolLocked()
		_ = t.closeSession(t.persistent)
	}
	t.mod.Mu.RUnlock()
	t.flushCache()
	if err := t.mod.Release(); err != nil {
		return fmt.Errorf("hsm: close token %q: %w", t.label, err)
	}
	return nil
}

// closePoolLocked closes every pooled session and leaves the pool's slots
// empty. The caller holds t.mu and t.mod.mu.RLock, and the sessions belong
// to the module's current initialization.
func (t *Token) closePoolLocked() {
	handles := t.pool.Take()
	for _, s := range handles {
		_ = t.closeSession(s)
	}
	t.pool.Put(make([]module.Session, len(handles)))
}

func (t *Token) observeError(err error) {
	if t.metrics == nil {
		return
	}
	if code := ReturnCode(err); code != "" {
		t.metrics.ObserveError(code)
	}
}
