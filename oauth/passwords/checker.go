package passwords

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"time"

	"github.com/signd/signd/store"
)

// Hasher checks login passwords and signing PINs against their stored
// argon2id hashes; *store.Hasher is one. Tests wrap it to count or pace
// evaluations.
type Hasher interface {
	// Check reports whether secret matches the encoded hash.
	Check(encoded string, secret []byte) (bool, error)
	// Dummy costs what a Check costs and checks nothing: it is spent when
	// there is nothing to check, so that timing does not tell the cases
	// apart.
	Dummy(secret []byte)
}

// Tx is what a Checker uses of a store transaction: the user, the write
// of its counters and locks, and their audit entries.
type Tx interface {
	store.UserReader
	// PutUser records failed guesses and the lockout (store.UserTx).
	PutUser(u *store.User) error
	// AuditAppender: each login attempt and lock, in the transaction that
	// counts it (audit.go).
	store.AuditAppender
}

// Store is a Checker's view of the store; store.Scope makes one from any
// backend.
type Store interface {
	Update(ctx context.Context, fn func(Tx) error) error
}

var _ Store = (*store.Scoped[Tx])(nil)

// ErrBusy is returned when no hashing slot freed up in time: the guess was
// not evaluated, and nothing was counted.
var ErrBusy = errors.New("oauth: too many concurrent password checks")

// Config holds the dependencies and settings of a Checker. Zero values take
// the defaults of the oauth.* configuration keys.
type Config struct {
	Store  Store
	Hasher Hasher // passwords and signing PINs (a *store.Hasher)
	// MaxFailures (default 5) is how many wrong passwords, or PINs, in a
	// row lock the account, or the PIN; no more guesses than that are ever
	// evaluated, concurrent ones included (see reserve).
	MaxFailures int
	// Lockout times the password lock that MaxFailures wrong passwords
	// set; a PIN lock lasts until an admin lifts it.
	Lockout Lockout
	// MaxConcurrentHashes bounds concurrent argon2id checks (each holds
	// 64 MiB by default); 0 means 2×GOMAXPROCS. HashWait is how long a
	// guess waits for a slot before ErrBusy; 0 means 30s.
	MaxConcurrentHashes int
	HashWait            time.Duration

	Logger  *slog.Logger     // nil = discard
	Now     func() time.Time // nil = time.Now
	Metrics Metrics          // nil = none (metrics.go)
}

// Lockout is how long a password lock lasts (NIST SP 800-63B §5.2.2): Base
// (default 1m) the first time, twice as long each further time without a
// successful login between, at most Max (default 1h, not less than Base).
// After PermanentAfter timed locks in a row the next lock is permanent
// (0: never). See Checker.lock.
type Lockout struct {
	Base, Max      time.Duration
	PermanentAfter int
}

// Checker checks passwords, signing PINs and TOTP codes with the lockout.
// One Checker serves a store: its register of guesses in flight lives in
// memory (see inflight).
type Checker struct {
	cfg      Config
	store    Store
	hasher   Hasher
	inflight inflight // guesses reserved and not yet settled
	limiter  *limiter
	log      *slog.Logger
	now      func() time.Time
}

// New validates cfg and builds the checker.
func New(cfg Config) (*Checker, error) {
	switch {
	case cfg.Store == nil:
		return nil, errors.New("oauth: passwords.Config.Store is required")
	case cfg.Hasher == nil:
		return nil, errors.New("oauth: Config.Hasher is required")
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&cfg.HashWait, 30*time.Second)
	def(&cfg.Lockout.Base, time.Minute)
	def(&cfg.Lockout.Max, time.Hour)
	if cfg.Lockout.Max < cfg.Lockout.Base {
		return nil, fmt.Errorf("oauth: Lockout.Max %v is shorter than Lockout.Base %v", cfg.Lockout.Max, cfg.Lockout.Base)
	}
	if cfg.MaxFailures <= 0 {
		cfg.MaxFailures = 5
	}
	cfg.Lockout.PermanentAfter = max(cfg.Lockout.PermanentAfter, 0)
	if cfg.MaxConcurrentHashes <= 0 {
		cfg.MaxConcurrentHashes = 2 * runtime.GOMAXPROCS(0)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Checker{
		cfg: cfg, store: cfg.Store, hasher: cfg.Hasher,
		limiter: newLimiter(cfg.MaxConcurrentHashes, cfg.HashWait),
		log:     cfg.Logger, now: cfg.Now,
	}, nil
}
