package config

import (
	"slices"
	"time"

	"github.com/spf13/pflag"
)

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
// row here (its Doc is its line in docs/CONFIG.md), if it needs one a rule
// in that section's checks method, and `go generate ./config`.
func Keys() []Key {
	return append([]Key{
		// server
		{Name: "server.listen", Default: "127.0.0.1:8443", Flag: "listen",
			Usage: "address the HTTPS/HTTP server listens on (host:port)",
			Doc:   "host:port of the HTTP(S) API"},
		{Name: "server.base_url", Default: "", Required: true, Flag: "base-url",
			Usage: "public base URL of signd, the OAuth/OIDC issuer (https unless loopback)",
			Doc:   "public base URL; the OAuth/OIDC issuer and `{base_url}` of the specs. https unless the host is loopback. Its origin must be the one users' browsers see: the login and consent forms refuse any other `Origin`"},
		{Name: "server.tls.cert_file", Default: "", Reload: true,
			Usage: "PEM certificate chain; empty with key_file empty = plain HTTP",
			Doc:   "PEM certificate; with `key_file` enables TLS 1.2+"},
		{Name: "server.tls.key_file", Default: "", Reload: true,
			Usage: "PEM private key for server.tls.cert_file",
			Doc:   "PEM private key; both empty = plain HTTP"},
		{Name: "server.admin_socket", Default: "./var/signd.sock", Flag: "admin-socket",
			Usage: "Unix socket of the admin API (created with mode 0600)",
			Doc:   "Unix socket of the admin API (mode 0600); its directory must be writable by its owner only, see [Securing the admin socket](#securing-the-admin-socket)"},
		{Name: "server.admin_group", Default: "",
			Usage: "group (name or numeric gid) whose members may use the admin socket besides root and signd's own user; empty = none",
			Doc:   "group (name or numeric gid) whose members may use the admin socket besides root and signd's own user; must exist on the system. Makes the socket mode 0660, group `admin_group`"},
		{Name: "server.body_limit_bytes", Default: int64(1 << 20),
			Usage: "maximum request body size in bytes (1 to 64 MiB)",
			Doc:   "largest accepted request body"},
		{Name: "server.shutdown_timeout", Default: 30 * time.Second,
			Usage: "how long a graceful shutdown waits for requests in flight",
			Doc:   "how long shutdown waits for in-flight requests"},
		{Name: "server.metrics_listen", Default: "127.0.0.1:9464",
			Usage: "host:port of the Prometheus /metrics listener, apart from server.listen; empty = none",
			Doc:   "host:port of the Prometheus listener (`GET /metrics` only, see [Monitoring](OPERATIONS.md#monitoring)); empty = none. Must not use the port of `server.listen`"},
		{Name: "server.trusted_proxies", Default: []string(nil),
			Usage: "CIDRs (or IPs) of reverse proxies whose X-Forwarded-For / X-Real-IP is believed; empty = none",
			Doc:   "reverse proxies whose `X-Forwarded-For` / `X-Real-IP` (`server.client_ip_header`) name the client in the log and for the per-address rate limits: a list of CIDRs (`10.0.0.0/8`, `fd00::/8`); a bare IP means that address alone (/32, /128). In the environment: comma-separated. Empty = the socket peer is the client"},
		{Name: "server.client_ip_header", Default: HeaderXForwardedFor,
			Usage: "the header the trusted proxies name the client in: X-Forwarded-For (they append to it) or X-Real-IP (they set it); the other is ignored",
			Doc:   "the one header a request from `server.trusted_proxies` names its client in; the other is ignored. `X-Forwarded-For`: the proxy appends the address it saw (nginx `$proxy_add_x_forwarded_for`, HAProxy `option forwardfor`) and signd takes the first address, read from the right, that is not a trusted proxy. `X-Real-IP`: the proxy sets the header to the address it saw, replacing what the client sent (nginx `proxy_set_header X-Real-IP $remote_addr`). Name the header your proxy writes: a client can put any address in the one it does not (see [Behind a reverse proxy](OPERATIONS.md#running-the-daemon))"},

		// store
		{Name: "store.backend", Default: BackendBolt,
			Usage: "store backend: bolt (the embedded file store.path) or etcd (a cluster shared by several nodes, store.etcd.*)",
			Doc:   "`bolt` (the embedded file `store.path`, one node) or `etcd` (an etcd cluster shared by several nodes, `store.etcd.*`; see [Running several nodes](OPERATIONS.md#running-several-nodes))"},
		{Name: "store.path", Default: "./var/signd.db", Flag: "store",
			Usage: "bbolt database file",
			Doc:   "the bbolt file (created 0600); an existing file must be owned by the user signd runs as and have no group/other bits, else signd stops with the `chmod 600`/`chown` to run"},
		{Name: "store.open_timeout", Default: 5 * time.Second,
			Usage: "how long to wait for the database file lock",
			Doc:   "how long to wait for the file lock"},
		{Name: "store.verify_on_open", Default: false,
			Usage: "check the whole store (structure, records, audit chain) at start and refuse a damaged one",
			Doc:   "at start (and for offline admin commands), run the whole `signd store check` and refuse a store with a problem; reads the whole file, so start-up takes longer on a large store. `true` or `false` (`SIGND_STORE_VERIFY_ON_OPEN=true`)"},
		{Name: "store.etcd.endpoints", Default: []string(nil),
			Usage: "etcd client URLs (http:// or https://host:port), required when store.backend is etcd",
			Doc:   "with `store.backend: etcd`, required: the etcd client URLs, `http://` or `https://host:port` (1 to 64, distinct, no credentials or path), e.g. `[https://etcd1:2379, https://etcd2:2379, https://etcd3:2379]`"},
		{Name: "store.etcd.prefix", Default: "/signd/",
			Usage: "prefix of every etcd key of the store; the nodes of one installation share it",
			Doc:   "prefix of every etcd key of the store (1 to 256 printable bytes, no spaces); the nodes of one installation share it, installations sharing a cluster use distinct ones"},
		{Name: "store.etcd.node", Default: "",
			Usage: "this node's name, distinct per node: the audit chain it appends to; empty = the host name, sanitized",
			Doc:   "this node's name, 1 to 63 characters of `a-z 0-9 . _ -` starting with a letter or a digit: the audit chain the node appends to (`audit.<node>`), so that nodes never contend on one chain head. Give every node its own; empty = the host name, lower-cased, other characters replaced by `-`. Two nodes with one name stay correct but contend on one chain again (the name is logged at start). See [Running several nodes](OPERATIONS.md#running-several-nodes)"},
		{Name: "store.etcd.cert_file", Default: "",
			Usage: "PEM client certificate for etcd (with store.etcd.key_file)",
			Doc:   "PEM client certificate that authenticates the node to etcd (with `store.etcd.key_file`)"},
		{Name: "store.etcd.key_file", Default: "",
			Usage: "PEM private key of store.etcd.cert_file",
			Doc:   "PEM private key of `store.etcd.cert_file`"},
		{Name: "store.etcd.ca_file", Default: "",
			Usage: "PEM CA bundle that signs the etcd servers' certificates; empty = the system roots",
			Doc:   "PEM CA bundle that signs the etcd servers' certificates; empty = the system roots. TLS is used when an endpoint is `https://` or a TLS file is set"},
		{Name: "store.etcd.dial_timeout", Default: 5 * time.Second,
			Usage: "how long connecting to etcd may take",
			Doc:   "how long connecting to etcd may take at start (up to 5m)"},
		{Name: "store.etcd.request_timeout", Default: 5 * time.Second,
			Usage: "how long one etcd request (a read, a commit, all its attempts) may take before the store answers unavailable",
			Doc:   "how long one etcd request (a read, a commit), all its attempts together, may take; then the request answers 503 (up to 5m). Without a quorum, requests answer 503 after this long; it should exceed the cluster's election time (etcd's `--election-timeout`, 1s, up to twice that) plus `health_timeout`, so that a request rides out the election of a new leader"},
		{Name: "store.etcd.health_timeout", Default: time.Duration(0),
			Usage: "how long one attempt at etcd (/readyz's check, one try of a read or of a commit) may take (at most request_timeout; 0: 1s, or request_timeout when shorter)",
			Doc:   "how long one attempt at etcd may go unanswered (at most `request_timeout`; unset or 0: 1s, or `request_timeout` when that is shorter): `/readyz` answers 503 after this long when etcd has no quorum, so set the load balancer's health-check timeout above it; a read is tried again (on the next member) and a commit whose outcome is then unknown answers 503, so a request waiting on a dead leader moves on after this long. See [Running several nodes](OPERATIONS.md#running-several-nodes)"},
		{Name: "store.etcd.cache", Default: true,
			Usage: "read records from the node's watch-fed copy of the store (one etcd read per transaction) instead of one etcd read per record",
			Doc:   "transactions read the node's copy of the store, kept by an etcd watch, after one shared etcd read that makes them see every earlier commit; `false` reads every record from etcd (slower; for diagnosis). Memory: every record but the audit log and the proof documents. `true` or `false`"},

		// pkcs11
		{Name: "pkcs11.module", Default: "/usr/lib/softhsm/libsofthsm2.so", Flag: "pkcs11-module",
			Usage: "absolute path of the PKCS#11 module (shared library)",
			Doc:   "absolute path of the PKCS#11 module; signd loads it into itself (and root's CLI when no daemon answers), so it and every directory above it must be owned by root or the user running signd and not writable by group or others, else the configuration is refused with the `chown`/`chmod` to run"},
		{Name: "pkcs11.token_label", Default: "signd", Flag: "token-label",
			Usage: "label of the token holding the keys (at most 32 bytes)",
			Doc:   "the token, found by label (never by slot number)"},
		{Name: "pkcs11.pin", Default: Secret(""),
			Usage: "user PIN of the token; prefer pkcs11.pin_file (never a systemd Environment= line: D-Bus shows it to every local user)",
			Doc:   "user PIN; prefer `pin_file` (exactly one of the two). `SIGND_PKCS11_PIN` sets it from the environment, but never through a systemd `Environment=` or `EnvironmentFile=` line: systemd shows a unit's environment to every local user over D-Bus (`systemctl show signd -p Environment`)"},
		{Name: "pkcs11.pin_file", Default: "", Flag: "pkcs11-pin-file",
			Usage: "file holding the user PIN (mode 0600 or stricter)",
			Doc:   "file holding the user PIN; must not be group/world readable. Under systemd it may be a credential: `LoadCredential=pin:/etc/signd/pin` in a drop-in and `Environment=SIGND_PKCS11_PIN_FILE=%d/pin` (the path, not the PIN; see [the package](OPERATIONS.md#production-the-debian-package))"},
		{Name: "pkcs11.max_sessions", Default: 0, Flag: "max-sessions",
			Usage: "size of the PKCS#11 session pool, 0 = GOMAXPROCS (0 to 1024)",
			Doc:   "size of the signing session pool (`0` = GOMAXPROCS)"},
		{Name: "pkcs11.acquire_timeout", Default: 2 * time.Second,
			Usage: "how long a request waits for a free PKCS#11 session",
			Doc:   "longest wait for a pooled session before answering busy (503)"},
		{Name: "pkcs11.profile", Default: "auto",
			Usage: "key templates: auto (strict, then token-fixed-usage if the token refuses it), strict (every usage spelled out) or token-fixed-usage (decrypt and encrypt left to the token, as tpm2-pkcs11 needs)",
			Doc:   "key templates: `strict` spells out every usage (decrypt, encrypt, unwrap, wrap, derive off), `token-fixed-usage` leaves decrypt and encrypt to the token (tpm2-pkcs11 sets them itself and refuses other values), `auto` tries `strict` and falls back to `token-fixed-usage` when the token refuses it"},
		{Name: "pkcs11.require_immutable_keys", Default: false,
			Usage: "refuse to enroll a key the token does not freeze (its label can be rewritten, it can be copied, or it can decrypt, unwrap or derive); default: enroll it and warn",
			Doc:   "refuse to enroll a new key the token does not freeze (its label can be rewritten, it can be copied, it can decrypt, unwrap, derive or sign with recovery, or the freeze could not be tested) and destroy it; by default such a key is enrolled with a warning, and the defect is in its audit entry and in `signd hsm info`. Keys already on the token are only warned about, at every start"},

		// log
		{Name: "log.level", Default: "info", Flag: "log-level", Reload: true,
			Usage: "log level: debug, info, warn or error",
			Doc:   "`debug`, `info`, `warn`, `error`"},
		{Name: "log.format", Default: "json",
			Usage: "log format: json or text",
			Doc:   "`json` or `text`"},
	}, slices.Concat(serviceKeys(), rateLimitKeys(), adminKeys(), auditKeys(), uiKeys())...)
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
