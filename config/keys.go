package config

import (
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// EnvPrefix is prepended to a key's name to form its environment variable:
// server.base_url is read from SIGND_SERVER_BASE_URL.
const EnvPrefix = "SIGND_"

// Key describes one configuration key. Keys returns the full table; it is the
// single source of defaults, environment variables, flags and help text.
type Key struct {
	// Name is the dotted key as written in the file, e.g. "server.listen".
	Name string
	// Default is the value used when no source sets the key. Its Go type is
	// the key's type (string, int, int64, float64, bool, time.Duration, Secret,
	// []string).
	Default any
	// Required is true when the default is only a placeholder and the key
	// must be set by the file, the environment or a flag.
	Required bool
	// Flag is the command-line flag BindFlags registers, "" for none.
	Flag string
	// Usage is a one-line description, for --help and docs.
	Usage string
}

// Env returns the environment variable that sets the key, e.g.
// SIGND_PKCS11_TOKEN_LABEL for pkcs11.token_label.
func (k Key) Env() string {
	return EnvName(k.Name)
}

// EnvName returns the environment variable for a dotted key name.
func EnvName(name string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(name, ".", "_"))
}

// Limits that the table and Validate share.
const (
	// MaxBodyLimitBytes caps server.body_limit_bytes.
	MaxBodyLimitBytes = 64 << 20
	// MaxSessions caps pkcs11.max_sessions.
	MaxSessions = 1024
	// MaxTokenLabelLen is the size of CK_TOKEN_INFO.label in PKCS#11.
	MaxTokenLabelLen = 32
	// MaxEtcdEndpoints caps store.etcd.endpoints.
	MaxEtcdEndpoints = 64
	// MaxEtcdPrefixLen caps store.etcd.prefix.
	MaxEtcdPrefixLen = 256
	// MaxEtcdTimeout caps store.etcd.dial_timeout and request_timeout.
	MaxEtcdTimeout = 5 * time.Minute
)

// Keys returns every configuration key with its default, in the order of the
// Config struct. Adding a key means adding a field to its section struct, a
// row here and, if it needs one, a rule in that section's checks method.
func Keys() []Key {
	return append([]Key{
		// server
		{Name: "server.listen", Default: "127.0.0.1:8443", Flag: "listen",
			Usage: "address the HTTPS/HTTP server listens on (host:port)"},
		{Name: "server.base_url", Default: "", Required: true, Flag: "base-url",
			Usage: "public base URL of signd, the OAuth/OIDC issuer (https unless loopback)"},
		{Name: "server.tls.cert_file", Default: "",
			Usage: "PEM certificate chain; empty with key_file empty = plain HTTP"},
		{Name: "server.tls.key_file", Default: "",
			Usage: "PEM private key for server.tls.cert_file"},
		{Name: "server.admin_socket", Default: "./var/signd.sock", Flag: "admin-socket",
			Usage: "Unix socket of the admin API (created with mode 0600)"},
		{Name: "server.admin_group", Default: "",
			Usage: "group (name or numeric gid) whose members may use the admin socket besides root and signd's own user; empty = none"},
		{Name: "server.body_limit_bytes", Default: int64(1 << 20),
			Usage: "maximum request body size in bytes (1 to 64 MiB)"},
		{Name: "server.shutdown_timeout", Default: 30 * time.Second,
			Usage: "how long a graceful shutdown waits for requests in flight"},
		{Name: "server.metrics_listen", Default: "127.0.0.1:9464",
			Usage: "host:port of the Prometheus /metrics listener, apart from server.listen; empty = none"},
		{Name: "server.trusted_proxies", Default: []string(nil),
			Usage: "CIDRs (or IPs) of reverse proxies whose X-Forwarded-For / X-Real-IP is believed; empty = none"},

		// store
		{Name: "store.backend", Default: BackendBolt,
			Usage: "store backend: bolt (the embedded file store.path) or etcd (a cluster shared by several nodes, store.etcd.*)"},
		{Name: "store.path", Default: "./var/signd.db", Flag: "store",
			Usage: "bbolt database file"},
		{Name: "store.open_timeout", Default: 5 * time.Second,
			Usage: "how long to wait for the database file lock"},
		{Name: "store.verify_on_open", Default: false,
			Usage: "check the whole store (structure, records, audit chain) at start and refuse a damaged one"},
		{Name: "store.etcd.endpoints", Default: []string(nil),
			Usage: "etcd client URLs (http:// or https://host:port), required when store.backend is etcd"},
		{Name: "store.etcd.prefix", Default: "/signd/",
			Usage: "prefix of every etcd key of the store; the nodes of one installation share it"},
		{Name: "store.etcd.cert_file", Default: "",
			Usage: "PEM client certificate for etcd (with store.etcd.key_file)"},
		{Name: "store.etcd.key_file", Default: "",
			Usage: "PEM private key of store.etcd.cert_file"},
		{Name: "store.etcd.ca_file", Default: "",
			Usage: "PEM CA bundle that signs the etcd servers' certificates; empty = the system roots"},
		{Name: "store.etcd.dial_timeout", Default: 5 * time.Second,
			Usage: "how long connecting to etcd may take"},
		{Name: "store.etcd.request_timeout", Default: 5 * time.Second,
			Usage: "how long one etcd request (a read, a commit) may take before the store answers unavailable"},

		// pkcs11
		{Name: "pkcs11.module", Default: "/usr/lib/softhsm/libsofthsm2.so", Flag: "pkcs11-module",
			Usage: "absolute path of the PKCS#11 module (shared library)"},
		{Name: "pkcs11.token_label", Default: "signd", Flag: "token-label",
			Usage: "label of the token holding the keys (at most 32 bytes)"},
		{Name: "pkcs11.pin", Default: Secret(""),
			Usage: "user PIN of the token; prefer SIGND_PKCS11_PIN or pkcs11.pin_file"},
		{Name: "pkcs11.pin_file", Default: "", Flag: "pkcs11-pin-file",
			Usage: "file holding the user PIN (mode 0600 or stricter)"},
		{Name: "pkcs11.max_sessions", Default: 0, Flag: "max-sessions",
			Usage: "size of the PKCS#11 session pool, 0 = GOMAXPROCS (0 to 1024)"},
		{Name: "pkcs11.acquire_timeout", Default: 2 * time.Second,
			Usage: "how long a request waits for a free PKCS#11 session"},
		{Name: "pkcs11.profile", Default: "auto",
			Usage: "key templates: auto (strict, then token-fixed-usage if the token refuses it), strict (every usage spelled out) or token-fixed-usage (decrypt and encrypt left to the token, as tpm2-pkcs11 needs)"},
		{Name: "pkcs11.require_immutable_keys", Default: false,
			Usage: "refuse to enroll a key the token does not freeze (its label can be rewritten, it can be copied, or it can decrypt, unwrap or derive); default: enroll it and warn"},

		// log
		{Name: "log.level", Default: "info", Flag: "log-level",
			Usage: "log level: debug, info, warn or error"},
		{Name: "log.format", Default: "json",
			Usage: "log format: json or text"},
	}, append(serviceKeys(), rateLimitKeys()...)...)
}

// BindFlags registers a flag on fs for every key that has one (see Keys):
// --listen, --base-url, --admin-socket, --store, --pkcs11-module,
// --token-label, --pkcs11-pin-file, --max-sessions and --log-level. Pass the same
// flag set to Load through Options.Flags; only flags the user actually set
// override the other sources. The --config flag belongs to the caller.
//
// There is deliberately no flag for the PIN itself: argv is visible to every
// user of the machine through ps and /proc.
//
// Like any pflag registration, BindFlags panics if a flag is already defined.
func BindFlags(fs *pflag.FlagSet) {
	for _, k := range Keys() {
		if k.Flag == "" {
			continue
		}
		usage := k.Usage + " (env " + k.Env() + ")"
		switch def := k.Default.(type) {
		case string:
			fs.String(k.Flag, def, usage)
		case int:
			fs.Int(k.Flag, def, usage)
		case int64:
			fs.Int64(k.Flag, def, usage)
		case time.Duration:
			fs.Duration(k.Flag, def, usage)
		default:
			// A Secret (or any new type) never gets a flag.
			panic("config: no flag type for key " + k.Name)
		}
	}
}
