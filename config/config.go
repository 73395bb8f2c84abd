package config

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"
	"go.yaml.in/yaml/v3"
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
}

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
	Endpoints      []string      `mapstructure:"endpoints"`
	Prefix         string        `mapstructure:"prefix"`
	CertFile       string        `mapstructure:"cert_file"`
	KeyFile        string        `mapstructure:"key_file"`
	CAFile         string        `mapstructure:"ca_file"`
	DialTimeout    time.Duration `mapstructure:"dial_timeout"`
	RequestTimeout time.Duration `mapstructure:"request_timeout"`
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
}

// DefaultSearchPaths returns the files Load tries, in order, when
// Options.File is empty.
func DefaultSearchPaths() []string {
	return []string{"./signd.yaml", "/etc/signd/signd.yaml"}
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

// Setting is one key and its effective value, see Config.Settings.
type Setting struct {
	Key   string
	Value any // Secret values stay Secrets, so printing them redacts
}

// Settings returns every key with its effective value, in the order of
// Keys, e.g. for `signd config show`.
func (c *Config) Settings() []Setting {
	var out []Setting
	flatten("", reflect.ValueOf(c).Elem(), &out)
	return out
}

func flatten(prefix string, v reflect.Value, out *[]Setting) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		key := f.Tag.Get("mapstructure")
		if key == ",squash" { // an embedded part of the section
			flatten(prefix, v.Field(i), out)
			continue
		}
		if prefix != "" {
			key = prefix + "." + key
		}
		if f.Type.Kind() == reflect.Struct {
			flatten(key, v.Field(i), out)
			continue
		}
		*out = append(*out, Setting{Key: key, Value: v.Field(i).Interface()})
	}
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
		raw, sum, err := readYAML(path)
		if err != nil {
			return nil, err
		}
		digest = sum
		values, ps := sift(raw, keys)
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
	problems = append(problems, decode(v, c)...)
	c.normalize()

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
		sortProblems(problems, keys)
		return nil, &Error{Source: path, Problems: problems}
	}
	return c, nil
}

// sortProblems puts unknown keys first (a typo often explains a later
// "required"), then the rest in the order of the key table, a section
// sorting with its first key.
func sortProblems(ps []Problem, keys []Key) {
	rank := func(p Problem) int {
		if p.Unknown {
			return -1
		}
		for i, k := range keys {
			if k.Name == p.Key || strings.HasPrefix(k.Name, p.Key+".") {
				return i
			}
		}
		return len(keys)
	}
	slices.SortStableFunc(ps, func(a, b Problem) int { return cmp.Compare(rank(a), rank(b)) })
}

// findFile returns the absolute path of the file to read, "" for none.
func findFile(opts Options) (string, error) {
	if opts.File != "" {
		// Explicit: it must exist; readYAML reports it if it does not.
		return absPath(opts.File)
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
		return absPath(p)
	}
	return "", nil
}

func absPath(p string) (string, error) {
	a, err := filepath.Abs(p)
	if err != nil {
		return "", fmt.Errorf("config: %s: %w", p, err)
	}
	return a, nil
}

// MaxFileBytes bounds the configuration file (the example naming every
// key is about 10 KiB).
const MaxFileBytes = 1 << 20

// readYAML reads and parses the file, and returns the hex SHA-256 of its
// bytes. It uses the YAML library viper itself
// uses, so values are typed exactly as viper would type them, but it keeps
// what viper would lose: key case, and empty sections (so a misspelt empty
// section is reported). The library refuses duplicate keys.
func readYAML(path string) (map[string]any, string, error) {
	// O_NONBLOCK: opening a FIFO must not wait for a writer.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, "", fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	// A device, a FIFO or a directory named by mistake (or by someone
	// else) must not hang or exhaust the daemon: only a regular file of
	// reasonable size is read.
	fi, err := f.Stat()
	if err != nil {
		return nil, "", fmt.Errorf("config: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, "", fmt.Errorf("config: %s is not a regular file", path)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, "", fmt.Errorf("config: %w", err)
	}
	if len(b) > MaxFileBytes {
		return nil, "", fmt.Errorf("config: %s is larger than %d bytes", path, MaxFileBytes)
	}
	sum := sha256.Sum256(b)
	m := map[string]any{}
	if err := yaml.Unmarshal(b, &m); err != nil {
		return nil, "", fmt.Errorf("config: parsing %s: %w", path, err)
	}
	return m, hex.EncodeToString(sum[:]), nil
}

// sift walks the parsed file against the known keys. It returns the values
// of the known keys (nested, ready for viper) and a problem for every unknown
// key and every value of the wrong shape. Unknown keys are reported at the
// highest unknown level: a whole unknown section is one problem.
func sift(raw map[string]any, keys []Key) (map[string]any, []Problem) {
	leaves := make(map[string]bool, len(keys))
	sections := map[string]bool{}
	var names []string
	for _, k := range keys {
		leaves[k.Name] = true
		names = append(names, k.Name)
		parts := strings.Split(k.Name, ".")
		for i := 1; i < len(parts); i++ {
			s := strings.Join(parts[:i], ".")
			if !sections[s] {
				sections[s] = true
				names = append(names, s)
			}
		}
	}

	var problems []Problem
	var walk func(prefix string, in map[string]any) map[string]any
	walk = func(prefix string, in map[string]any) map[string]any {
		out := map[string]any{}
		for _, k := range sortedKeys(in) {
			val := in[k]
			key := k
			if prefix != "" {
				key = prefix + "." + k
			}
			switch {
			case leaves[key]:
				if _, isMap := asMap(val); isMap {
					problems = append(problems, Problem{Key: key, Msg: "must be a single value, not a mapping"})
					continue
				}
				if val != nil { // "key:" with no value leaves the default
					out[k] = val
				}
			case sections[key]:
				if val == nil { // "section:" with nothing under it
					continue
				}
				sub, isMap := asMap(val)
				if !isMap {
					problems = append(problems, Problem{Key: key, Msg: "must be a mapping of keys"})
					continue
				}
				out[k] = walk(key, sub)
			default:
				msg := suggest(key, names)
				if msg == "" {
					msg = sectionHint(key, keys)
				}
				problems = append(problems, Problem{Key: key, Msg: msg, Unknown: true})
			}
		}
		return out
	}
	return walk("", raw), problems
}

// sectionHint names the keys of the section key is in when that section
// is a short list of plain keys (admin.roles, a rate limit), so that a
// name far from every key still learns what it may be:
// "admin.roles holds security_officer, administrator, auditor".
func sectionHint(key string, keys []Key) string {
	i := strings.LastIndex(key, ".")
	if i < 0 {
		return ""
	}
	parent := key[:i] + "."
	var leaves []string
	for _, k := range keys {
		rest, ok := strings.CutPrefix(k.Name, parent)
		if !ok {
			continue
		}
		if strings.Contains(rest, ".") {
			return ""
		}
		leaves = append(leaves, rest)
	}
	if len(leaves) == 0 || len(leaves) > 8 {
		return ""
	}
	return key[:i] + " holds " + strings.Join(leaves, ", ")
}

func asMap(v any) (map[string]any, bool) {
	switch m := v.(type) {
	case map[string]any:
		return m, true
	case map[any]any:
		out := make(map[string]any, len(m))
		for k, v := range m {
			out[fmt.Sprint(k)] = v
		}
		return out, true
	}
	return nil, false
}

// decode unmarshals v into c strictly and turns every decoding failure into
// a problem named by its key.
func decode(v *viper.Viper, c *Config) []Problem {
	// UnmarshalExact refuses keys without a field; sift has already removed
	// (and reported) unknown file keys, so only a row in Keys without a
	// struct field can trip it. The opposite, a field without a row, is
	// caught by TestKeysTableMatchesStruct (mapstructure's ErrorUnset would
	// also count the unexported source field).
	err := v.UnmarshalExact(c, viper.DecodeHook(mapstructure.DecodeHookFuncType(strictTypes)))
	if err == nil {
		return nil
	}
	var problems []Problem
	for _, e := range leafErrors(err) {
		var de *mapstructure.DecodeError
		if errors.As(e, &de) {
			key, msg := strings.ToLower(de.Name()), errors.Unwrap(de).Error()
			// An element of a list is reported under the list's key, like
			// the validation of its entries: "entry 2: ...".
			if k, idx, ok := strings.Cut(strings.TrimSuffix(key, "]"), "["); ok {
				if n, err := strconv.Atoi(idx); err == nil {
					key, msg = k, fmt.Sprintf("entry %d: %s", n+1, msg)
				}
			}
			problems = append(problems, Problem{Key: key, Msg: msg})
			continue
		}
		problems = append(problems, Problem{Msg: e.Error()})
	}
	return problems
}

// leafErrors flattens mapstructure's error tree (a wrapped errors.Join of
// possibly nested joins) down to the per-field *DecodeErrors.
func leafErrors(err error) []error {
	switch u := err.(type) {
	case *mapstructure.DecodeError:
		return []error{err}
	case interface{ Unwrap() []error }:
		var out []error
		for _, e := range u.Unwrap() {
			out = append(out, leafErrors(e)...)
		}
		return out
	case interface{ Unwrap() error }:
		if inner := u.Unwrap(); inner != nil {
			return leafErrors(inner)
		}
	}
	return []error{err}
}

// strictTypes is a mapstructure decode hook that replaces viper's weak
// typing for the four kinds of leaf we have:
//   - strings (and Secrets) must come as strings: YAML turns an unquoted PIN
//     0123 into the number 83, and a silently mangled PIN locks the token.
//     The value is never echoed, since it may be the PIN;
//   - integers may come as numbers or as decimal strings (environment);
//   - numbers (float64: the rates) likewise, fractions allowed;
//   - durations must carry a unit ("30s"); a bare number would be taken as
//     nanoseconds;
//   - lists of strings come as a YAML list of strings, or as one string of
//     comma-separated items (how an environment variable carries a list).
//   - booleans are YAML true/false or, from the environment, exactly
//     "true"/"false" (not 1, yes or on).
func strictTypes(from, to reflect.Type, data any) (any, error) {
	if data == nil {
		return data, nil
	}
	switch {
	case to == reflect.TypeFor[[]string]():
		switch from.Kind() {
		case reflect.String:
			var items []string
			for item := range strings.SplitSeq(data.(string), ",") {
				if item = strings.TrimSpace(item); item != "" {
					items = append(items, item)
				}
			}
			return items, nil
		case reflect.Slice, reflect.Array:
			return data, nil // each element goes through this hook as a string
		}
		return nil, fmt.Errorf("must be a list of strings, not a %s", kindName(from))
	case to == reflect.TypeFor[time.Duration]():
		switch d := data.(type) {
		case time.Duration:
			return d, nil
		case string:
			parsed, err := time.ParseDuration(d)
			if err != nil {
				return nil, fmt.Errorf("%q is not a duration (use a unit, e.g. \"30s\")", d)
			}
			return parsed, nil
		}
		return nil, fmt.Errorf("must be a duration with a unit, e.g. \"30s\", not a %s", kindName(from))
	case to.Kind() == reflect.Bool:
		switch d := data.(type) {
		case bool:
			return d, nil
		case string: // environment variables
			switch d {
			case "true":
				return true, nil
			case "false":
				return false, nil
			}
			return nil, fmt.Errorf("%q is not a boolean (true or false)", d)
		}
		return nil, fmt.Errorf("must be a boolean (true or false), not a %s", kindName(from))
	case to.Kind() == reflect.String:
		if from.Kind() != reflect.String {
			return nil, fmt.Errorf("must be a string, not a %s (quote the value in YAML)", kindName(from))
		}
	case to.Kind() == reflect.Float64:
		switch from.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
			reflect.Float32, reflect.Float64:
			return data, nil // NaN and infinities are left to validation
		case reflect.String:
			f, err := strconv.ParseFloat(data.(string), 64)
			if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
				return nil, fmt.Errorf("%q is not a number", data)
			}
			return f, nil
		}
		return nil, fmt.Errorf("must be a number, not a %s", kindName(from))
	case to.Kind() == reflect.Int || to.Kind() == reflect.Int64:
		switch from.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			return data, nil
		case reflect.Float32, reflect.Float64:
			f := reflect.ValueOf(data).Float()
			if f != float64(int64(f)) {
				return nil, fmt.Errorf("%v is not an integer", data)
			}
			return int64(f), nil
		case reflect.String:
			s := data.(string)
			if !isDecimal(s) {
				return nil, fmt.Errorf("%q is not an integer", s)
			}
			return s, nil // mapstructure parses it and reports overflow
		}
		return nil, fmt.Errorf("must be an integer, not a %s", kindName(from))
	}
	return data, nil
}

func isDecimal(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

func kindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Map:
		return "mapping"
	case reflect.Slice, reflect.Array:
		return "list"
	case reflect.String:
		return "string"
	}
	return t.String()
}

// normalize applies the documented rewrites before validation.
func (c *Config) normalize() {
	// Strip the trailing slash of the issuer ("https://h/" → "https://h"),
	// but only on something that looks like a URL, so that a bad value is
	// still reported as written.
	if u, err := url.Parse(c.Server.BaseURL); err == nil && u.Host != "" {
		c.Server.BaseURL = strings.TrimRight(c.Server.BaseURL, "/")
	}
}
