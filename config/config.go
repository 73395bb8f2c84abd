package config

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/signd/signd/config/schema"
	"github.com/signd/signd/internal/safepath"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// Config is the whole signd configuration. Load fills and validates it.
type Config struct {
	Server ServerConfig `mapstructure:"server"`
	Store  StoreConfig  `mapstructure:"store"`
	PKCS11 PKCS11Config `mapstructure:"pkcs11"`
	Log    LogConfig    `mapstructure:"log"`
	OAuth  OAuthConfig  `mapstructure:"oauth"`
	CSC    CSCConfig    `mapstructure:"csc"`
	OIDC   OIDCConfig   `mapstructure:"oidc"`
	// RateLimit is ratelimit.*: requests per client or remote address.
	RateLimit RateLimitConfig `mapstructure:"ratelimit"`
	// Admin is admin.*: trusted roles of the admin socket, dual control of
	// administrative acts.
	Admin AdminConfig `mapstructure:"admin"`
	// Audit is audit.*: the audit key and signed checkpoints (audit.go).
	Audit AuditConfig `mapstructure:"audit"`
	// UI is ui.*: the pages' branding.
	UI UIConfig `mapstructure:"ui"`

	source string // file Load read, "" when none
	digest string // lowercase hex SHA-256 of the bytes of source as read
}

// ServerConfig is the server.* section.
type ServerConfig struct {
	Listen          string        `mapstructure:"listen"`
	BaseURL         string        `mapstructure:"base_url"`
	TLS             TLSConfig     `mapstructure:"tls"`
	AdminSocket     string        `mapstructure:"admin_socket"`
	AdminGroup      string        `mapstructure:"admin_group"`
	BodyLimitBytes  int64         `mapstructure:"body_limit_bytes"`
	ShutdownTimeout time.Duration `mapstructure:"shutdown_timeout"`
	MetricsListen   string        `mapstructure:"metrics_listen"`
	TrustedProxies  []string      `mapstructure:"trusted_proxies"`
	// ClientIPHeader is the one header the trusted proxies name the
	// client in: HeaderXForwardedFor or HeaderXRealIP.
	ClientIPHeader string `mapstructure:"client_ip_header"`
}

// The headers server.client_ip_header may name.
const (
	HeaderXForwardedFor = "X-Forwarded-For"
	HeaderXRealIP       = "X-Real-IP"
)

// TLSConfig is server.tls.*. Both empty means plain HTTP.
type TLSConfig struct {
	CertFile string `mapstructure:"cert_file"`
	KeyFile  string `mapstructure:"key_file"`
}

// Enabled reports whether the server should serve TLS.
func (t TLSConfig) Enabled() bool {
	return t.CertFile != "" || t.KeyFile != ""
}

// StoreConfig is the store.* section.
type StoreConfig struct {
	// Backend is "bolt" (the embedded file, store.path) or "etcd" (a
	// cluster shared by several nodes, store.etcd.*).
	Backend      string        `mapstructure:"backend"`
	Path         string        `mapstructure:"path"`
	OpenTimeout  time.Duration `mapstructure:"open_timeout"`
	VerifyOnOpen bool          `mapstructure:"verify_on_open"`
	Etcd         EtcdConfig    `mapstructure:"etcd"`
}

// Store backends (store.backend).
const (
	BackendBolt = "bolt"
	BackendEtcd = "etcd"
)

// BackendName returns store.backend, BackendBolt when it is empty (a
// Config built in code rather than loaded).
func (s StoreConfig) BackendName() string {
	if s.Backend == "" {
		return BackendBolt
	}
	return s.Backend
}

// EtcdConfig is the store.etcd.* section, read when store.backend is etcd.
type EtcdConfig struct {
	Endpoints []string `mapstructure:"endpoints"`
	Prefix    string   `mapstructure:"prefix"`
	// Node is this node's name: the audit chain it appends to
	// (store/etcd Options.Node). Load sets it from the host name
	// (NodeFromHost) when it is empty.
	Node           string        `mapstructure:"node"`
	CertFile       string        `mapstructure:"cert_file"`
	KeyFile        string        `mapstructure:"key_file"`
	CAFile         string        `mapstructure:"ca_file"`
	DialTimeout    time.Duration `mapstructure:"dial_timeout"`
	RequestTimeout time.Duration `mapstructure:"request_timeout"`
	HealthTimeout  time.Duration `mapstructure:"health_timeout"`
	// Cache: transactions read the node's watch cache of the store
	// (store/etcd) rather than asking etcd for each record.
	Cache bool `mapstructure:"cache"`
}

// PKCS11Config is the pkcs11.* section.
type PKCS11Config struct {
	Module         string        `mapstructure:"module"`
	TokenLabel     string        `mapstructure:"token_label"`
	PIN            Secret        `mapstructure:"pin"`
	PINFile        string        `mapstructure:"pin_file"`
	MaxSessions    int           `mapstructure:"max_sessions"`
	AcquireTimeout time.Duration `mapstructure:"acquire_timeout"`
	// Profile is how key templates treat usage flags: auto, strict or
	// token-fixed-usage (hsm.Config.Profile).
	Profile string `mapstructure:"profile"`
	// RequireImmutableKeys refuses to enroll a key the token does not
	// freeze (hsm.Config.RequireImmutableKeys).
	RequireImmutableKeys bool `mapstructure:"require_immutable_keys"`
}

// LogConfig is the log.* section.
type LogConfig struct {
	Level  string `mapstructure:"level"`
	Format string `mapstructure:"format"`
}

// Options tells Load where to look.
type Options struct {
	// File is the --config value. "" searches SearchPaths and runs on
	// defaults, environment and flags when none of them exists; a File that
	// does not exist is an error.
	File string
	// Flags holds the flags registered by BindFlags (may be nil). Only flags
	// that were set on the command line override the other sources.
	Flags *pflag.FlagSet
	// SearchPaths replaces DefaultSearchPaths (for tests); nil means default.
	SearchPaths []string
	// Hostname names this host, the default of store.etcd.node
	// (NodeFromHost); nil means os.Hostname.
	Hostname func() (string, error)
}

// DefaultSearchPaths returns the files Load tries, in order, when
// Options.File is empty. The working directory is not among them: the
// CLI runs as root from wherever its operator stands (/tmp, the store's
// directory), and a signd.yaml planted there would choose the module root
// loads and the socket root sends passwords to. Another file is named with
// --config.
func DefaultSearchPaths() []string {
	return []string{"/etc/signd/signd.yaml"}
}

// filePolicy is who may change the configuration file and the directories
// above it: root and the user running signd (FilePolicy).
func filePolicy(euid int) safepath.Policy {
	return safepath.Policy{EUID: euid, Key: "config",
		Harm: "could rewrite the configuration, e.g. the pkcs11.module signd loads or the admin_socket it sends passwords to"}
}

// Source returns the absolute path of the file Load read, or "" when it ran
// on defaults, environment and flags alone. Meant for the startup log line.
func (c *Config) Source() string {
	return c.source
}

// SHA256 returns the lowercase hex SHA-256 of the file Load read, exactly
// the bytes it parsed, or "" when there was none: the daemon records it in
// the audit log (config_loaded) at start and on each reload.
func (c *Config) SHA256() string {
	return c.digest
}

// Redacted returns a copy that is safe to print or log. Secret fields
// already redact themselves, so the copy differs from c only in identity;
// it exists so that callers say what they mean.
func (c *Config) Redacted() *Config {
	cp := *c
	return &cp
}

// Load builds the configuration from, in increasing precedence: the defaults
// of Keys, the YAML file, SIGND_* environment variables and the flags that
// were set. It decodes strictly (unknown keys and ill-typed values are
// errors) and validates.
//
// A file that cannot be found, read or parsed is returned as a plain error
// naming the file. Everything else that is wrong is returned at once as an
// *Error listing every bad key, one per line.
func Load(opts Options) (*Config, error) {
	path, err := findFile(opts)
	if err != nil {
		return nil, err
	}

	v := viper.New()
	keys := Keys()
	for _, k := range keys {
		// Viper only consults the environment for keys it already knows
		// (spf13/viper#188, #761): register a default and the variable for
		// every key.
		v.SetDefault(k.Name, k.Default)
		if err := v.BindEnv(k.Name, k.Env()); err != nil {
			return nil, fmt.Errorf("config: binding %s: %w", k.Env(), err)
		}
	}

	var problems []Problem
	var digest string
	if path != "" {
		// Judge the file before reading a byte of it, and read the file
		// judged: its links resolved, its owner and mode taken from the
		// open file.
		pol := filePolicy(os.Geteuid())
		real, err := filepath.EvalSymlinks(path)
		if err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) { // a missing file reads as the open that failed
				err = &fs.PathError{Op: "open", Path: path, Err: pe.Err}
			}
			return nil, fmt.Errorf("config: %w", err)
		}
		if err := pol.Route(path, real); err != nil {
			return nil, err
		}
		raw, sum, err := schema.ReadYAML(real, func(fi fs.FileInfo) error {
			return pol.Entry("file", real, fi, "")
		})
		if err != nil {
			return nil, err
		}
		digest = sum
		values, ps := schema.Sift(raw, keys)
		problems = append(problems, ps...)
		if err := v.MergeConfigMap(values); err != nil {
			return nil, fmt.Errorf("config: %s: %w", path, err)
		}
	}

	if opts.Flags != nil {
		for _, k := range keys {
			if k.Flag == "" {
				continue
			}
			if f := opts.Flags.Lookup(k.Flag); f != nil {
				if err := v.BindPFlag(k.Name, f); err != nil {
					return nil, fmt.Errorf("config: binding --%s: %w", k.Flag, err)
				}
			}
		}
	}

	c := &Config{source: path, digest: digest}
	problems = append(problems, schema.Decode(v, c)...)
	c.normalize()
	if c.Store.BackendName() == BackendEtcd && c.Store.Etcd.Node == "" {
		hostname := opts.Hostname
		if hostname == nil {
			hostname = os.Hostname
		}
		if h, err := hostname(); err == nil {
			c.Store.Etcd.Node = NodeFromHost(h)
		}
	}

	// A key that failed to decode holds a zero value; do not pile a second,
	// misleading complaint on it.
	bad := make(map[string]bool, len(problems))
	for _, p := range problems {
		bad[p.Key] = true
	}
	for _, p := range c.problems() {
		if !bad[p.Key] {
			problems = append(problems, p)
		}
	}
	if len(problems) > 0 {
		schema.SortProblems(problems, keys)
		return nil, &Error{Source: path, Problems: problems}
	}
	return c, nil
}

// findFile returns the absolute path of the file to read, "" for none.
func findFile(opts Options) (string, error) {
	if opts.File != "" {
		// Explicit: it must exist; readYAML reports it if it does not.
		return schema.AbsPath(opts.File)
	}
	paths := opts.SearchPaths
	if paths == nil {
		paths = DefaultSearchPaths()
	}
	for _, p := range paths {
		_, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			continue
		}
		// Anything else (permission denied, ...) is an error: silently
		// running on defaults next to an unreadable /etc/signd/signd.yaml
		// would be worse.
		if err != nil {
			return "", fmt.Errorf("config: %w", err)
		}
		return schema.AbsPath(p)
	}
	return "", nil
}

// normalize applies the documented rewrites before validation.
func (c *Config) normalize() {
	// Strip the trailing slash of the issuer ("https://h/" → "https://h"),
	// but only on something that looks like a URL, so that a bad value is
	// still reported as written.
	if u, err := url.Parse(c.Server.BaseURL); err == nil && u.Host != "" {
		c.Server.BaseURL = strings.TrimRight(c.Server.BaseURL, "/")
	}
	// An etcd attempt lasts 1 s unless the operator says otherwise, and
	// never longer than the request it is part of: a configuration that
	// shortened request_timeout before health_timeout existed stays valid.
	if c.Store.Etcd.HealthTimeout == 0 {
		c.Store.Etcd.HealthTimeout = DefaultEtcdHealthTimeout
		if r := c.Store.Etcd.RequestTimeout; r > 0 && r < c.Store.Etcd.HealthTimeout {
			c.Store.Etcd.HealthTimeout = r
		}
	}
}

// DefaultEtcdHealthTimeout is store.etcd.health_timeout when it is not set
// (and request_timeout is not shorter).
const DefaultEtcdHealthTimeout = time.Second
