package hsm

import (
	"fmt"
	"log/slog"
	"time"
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
	// KeyCacheSize bounds the cache of loaded private-key handles (one
	// entry per key ID signed with); 0 = DefaultKeyCacheSize. A key that
	// was evicted is found again on its next use.
	KeyCacheSize int
	// Profile says how key templates treat usage flags: ProfileAuto
	// (default), ProfileStrict or ProfileTokenFixedUsage; see the package
	// documentation.
	Profile string
	// RequireImmutableKeys refuses to keep a newly generated key the
	// token did not freeze: one whose CKA_LABEL a same-value
	// C_SetAttributeValue could change, which C_CopyObject could copy,
	// to which the token gave decrypt, unwrap, derive or sign-recover, or
	// whose freeze could not be tested. The half-made key is destroyed
	// (ErrKeyNotFrozen). Without it such a key is kept and its defects
	// are reported (KeyInfo.Defects, a warning). Keys already on the
	// token are never refused by it: CheckKeys only reports them.
	RequireImmutableKeys bool
	Logger               *slog.Logger // nil = discard
	Metrics              Metrics      // nil = none
	// Wrap, tests only, wraps the loaded module for fault injection (see
	// package hsmtest). nil = the module as it is.
	Wrap func(Ctx) Ctx
}

// String describes c with the PIN redacted.
func (c Config) String() string {
	return fmt.Sprintf("hsm.Config{Module:%q TokenLabel:%q PIN:%s MaxSessions:%d AcquireTimeout:%v MinRSABits:%d AllowImportedKeys:%v Profile:%q RequireImmutableKeys:%v}",
		c.Module, c.TokenLabel, redacted(c.PIN), c.MaxSessions, c.AcquireTimeout, c.MinRSABits, c.AllowImportedKeys, c.Profile, c.RequireImmutableKeys)
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
		slog.String("profile", c.Profile),
		slog.Bool("require_immutable_keys", c.RequireImmutableKeys),
	)
}

func redacted(pin string) string {
	if pin == "" {
		return `""`
	}
	return "[REDACTED]"
}

// Key template profiles (Config.Profile).
const (
	// ProfileAuto uses ProfileStrict and, when the token refuses that
	// template (CKR_TEMPLATE_INCONSISTENT, CKR_ATTRIBUTE_VALUE_INVALID, or
	// CKR_GENERAL_ERROR while the token still answers C_GetTokenInfo),
	// retries once with ProfileTokenFixedUsage and keeps it for the
	// Token's later keys. What the token then gave the key is read back
	// and reported (KeyInfo.Defects).
	ProfileAuto = "auto"
	// ProfileStrict spells out every usage: CKA_SIGN/CKA_VERIFY true,
	// CKA_DECRYPT, CKA_ENCRYPT, CKA_UNWRAP, CKA_WRAP, CKA_DERIVE and
	// CKA_SIGN_RECOVER false.
	ProfileStrict = "strict"
	// ProfileTokenFixedUsage leaves CKA_ENCRYPT and CKA_DECRYPT unset,
	// for tokens that set them themselves and refuse a differing value
	// (tpm2-pkcs11 signs CKM_RSA_PKCS as a raw RSA decrypt, so its RSA
	// signing keys can decrypt).
	ProfileTokenFixedUsage = "token-fixed-usage"
)

// Metrics receives measurements; cmd adapts it to Prometheus. All methods
// must be safe for concurrent use and must not block.
type Metrics interface {
	// ObserveSign is called after every SignDigest (and Key.Sign) and
	// every SignDigests batch with its total duration, pool wait
	// included, and its error.
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
