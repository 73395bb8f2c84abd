package config

import (
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// validConfig is a Config that passes Validate, for tests that break one key.
func validConfig(t *testing.T) *Config {
	t.Helper()
	return &Config{
		Server: ServerConfig{
			Listen: "127.0.0.1:8443", BaseURL: "https://sign.example.org",
			AdminSocket: "./var/signd.sock", BodyLimitBytes: 1 << 20, ShutdownTimeout: 30 * time.Second,
		},
		Store: StoreConfig{Path: "./var/signd.db", OpenTimeout: 5 * time.Second},
		PKCS11: PKCS11Config{
			Module: "/usr/lib/softhsm/libsofthsm2.so", TokenLabel: "signd", PIN: "pin-q7Zx",
			AcquireTimeout: 2 * time.Second,
		},
		Log:   LogConfig{Level: "info", Format: "json"},
		OAuth: defaultOAuth(), CSC: defaultCSC(), OIDC: defaultOIDC(), RateLimit: defaultRateLimit(),
		Admin: defaultAdmin(),
	}
}

func defaultOAuth() OAuthConfig {
	return OAuthConfig{
		CodeTTL: time.Minute, AccessTokenTTL: time.Hour, SADTTL: 5 * time.Minute,
		LoginTimeout: 10 * time.Minute, ConsentTimeout: 5 * time.Minute, ProcessTimeout: 10 * time.Minute,
		SessionTTL: 8 * time.Hour, MaxFailures: 5, SweepInterval: time.Minute, SweepBatch: 32,
		Lockout: LockoutConfig{Base: time.Minute, Max: time.Hour},
	}
}

func defaultCSC() CSCConfig {
	return CSCConfig{
		Name: "signd", Region: "NL", Lang: "en-US", Description: "signd remote signing service",
		MaxResultsDefault: 100, MaxResultsLimit: 1000, MaxHashesPerRequest: 100,
		RefreshTokenTTL: 24 * time.Hour,
		Timestamp:       TimestampConfig{Accuracy: time.Second, Label: "signd-tsa"},
		CertStatus:      CertStatusConfig{Enabled: true, Refresh: time.Hour, Timeout: 10 * time.Second, OCSPMaxAge: time.Hour},
	}
}

func defaultEtcd() EtcdConfig {
	return EtcdConfig{Prefix: "/signd/", DialTimeout: 5 * time.Second, RequestTimeout: 5 * time.Second, HealthTimeout: time.Second, Cache: true}
}

// onEtcd switches c to the etcd backend with valid settings.
func onEtcd(c *Config) {
	c.Store.Backend = BackendEtcd
	c.Store.Etcd = defaultEtcd()
	c.Store.Etcd.Endpoints = []string{"https://etcd1.example.org:2379", "http://127.0.0.1:2379"}
	c.Store.Etcd.Node = "signd-1"
}

func defaultAdmin() AdminConfig {
	return AdminConfig{DualControlConfig: DualControlConfig{PendingTTL: 24 * time.Hour}, EnrollmentConfig: EnrollmentConfig{EnrollmentTTL: 24 * time.Hour}}
}

func defaultRateLimit() RateLimitConfig {
	return RateLimitConfig{
		Timestamp: LimitConfig{Rate: 10, Burst: 50}, AuthLogin: LimitConfig{Rate: 1, Burst: 50},
		Token: LimitConfig{Rate: 100, Burst: 200}, Forms: LimitConfig{Rate: 1, Burst: 50}, MaxKeys: 10000,
	}
}

func defaultAudit() AuditConfig {
	return AuditConfig{KeyLabel: "signd-audit", CheckpointDir: "./var/checkpoints"}
}

func defaultOIDC() OIDCConfig {
	return OIDCConfig{ClaimNamespace: "com.vendor", PairwiseSaltFile: "./var/pairwise.salt", IDTokenTTL: time.Hour, SigningAlg: "RS256"}
}

func TestValidate(t *testing.T) {
	dir := t.TempDir()
	cert := filepath.Join(dir, "cert.pem")
	if err := os.WriteFile(cert, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(dir, "key.pem")
	if err := os.WriteFile(key, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name   string
		mutate func(c *Config)
		key    string // "" = valid
		msg    string // substring of the problem
	}{
		{"valid", func(c *Config) {}, "", ""},

		{"listen ipv6", func(c *Config) { c.Server.Listen = "[::1]:8443" }, "", ""},
		{"listen all interfaces", func(c *Config) { c.Server.Listen = ":8443" }, "", ""},
		{"listen port 0", func(c *Config) { c.Server.Listen = "127.0.0.1:0" }, "", ""},
		{"listen no port", func(c *Config) { c.Server.Listen = "127.0.0.1" }, "server.listen", "is not host:port"},
		{"listen named port", func(c *Config) { c.Server.Listen = "127.0.0.1:https" }, "server.listen", "port must be a number"},
		{"listen port too big", func(c *Config) { c.Server.Listen = "127.0.0.1:65536" }, "server.listen", "port must be a number"},

		{"base_url missing", func(c *Config) { c.Server.BaseURL = "" }, "server.base_url", "required"},
		{"base_url with path", func(c *Config) { c.Server.BaseURL = "https://example.org/signd" }, "", ""},
		{"base_url http loopback v4", func(c *Config) { c.Server.BaseURL = "http://127.0.0.1:8443" }, "", ""},
		{"base_url http loopback 127/8", func(c *Config) { c.Server.BaseURL = "http://127.1.2.3" }, "", ""},
		{"base_url http loopback v6", func(c *Config) { c.Server.BaseURL = "http://[::1]:8443" }, "", ""},
		{"base_url http localhost", func(c *Config) { c.Server.BaseURL = "http://localhost:8443" }, "", ""},
		{"base_url http public", func(c *Config) { c.Server.BaseURL = "http://sign.example.org" }, "server.base_url", "must use https"},
		{"base_url http localhost lookalike", func(c *Config) { c.Server.BaseURL = "http://localhost.example.org" }, "server.base_url", "must use https"},
		{"base_url ftp", func(c *Config) { c.Server.BaseURL = "ftp://x" }, "server.base_url", "http(s)"},
		{"base_url relative", func(c *Config) { c.Server.BaseURL = "/signd" }, "server.base_url", "http(s)"},
		{"base_url no host", func(c *Config) { c.Server.BaseURL = "https://" }, "server.base_url", "no host"},
		{"base_url opaque", func(c *Config) { c.Server.BaseURL = "https:sign.example.org" }, "server.base_url", "no host"},
		{"base_url query", func(c *Config) { c.Server.BaseURL = "https://x.org?a=b" }, "server.base_url", "query"},
		{"base_url empty query", func(c *Config) { c.Server.BaseURL = "https://x.org?" }, "server.base_url", "query"},
		{"base_url fragment", func(c *Config) { c.Server.BaseURL = "https://x.org#f" }, "server.base_url", "fragment"},
		{"base_url trailing slash", func(c *Config) { c.Server.BaseURL = "https://x.org/" }, "server.base_url", "slash"},
		{"base_url unparsable", func(c *Config) { c.Server.BaseURL = "https://x .org" }, "server.base_url", "not a URL"},
		{"base_url user info", func(c *Config) { c.Server.BaseURL = "https://u:hunter2@x.org" }, "server.base_url", "user info"},

		{"tls both", func(c *Config) { c.Server.TLS = TLSConfig{CertFile: cert, KeyFile: key} }, "", ""},
		{"tls cert only", func(c *Config) { c.Server.TLS.CertFile = cert }, "server.tls.key_file", "required when server.tls.cert_file is set"},
		{"tls key only", func(c *Config) { c.Server.TLS.KeyFile = key }, "server.tls.cert_file", "required when server.tls.key_file is set"},
		{"tls cert missing", func(c *Config) { c.Server.TLS = TLSConfig{CertFile: filepath.Join(dir, "nope.pem"), KeyFile: key} }, "server.tls.cert_file", "nope.pem: no such file"},
		{"tls key is a dir", func(c *Config) { c.Server.TLS = TLSConfig{CertFile: cert, KeyFile: dir} }, "server.tls.key_file", "not a regular file"},

		{"admin socket empty", func(c *Config) { c.Server.AdminSocket = "" }, "server.admin_socket", "empty"},
		{"admin socket too long", func(c *Config) { c.Server.AdminSocket = "/" + strings.Repeat("s", 107) }, "server.admin_socket", "at most 107"},
		{"admin group by name", func(c *Config) { c.Server.AdminGroup = "root" }, "", ""},
		{"admin group by gid", func(c *Config) { c.Server.AdminGroup = "0" }, "", ""},
		{"admin group unknown name", func(c *Config) { c.Server.AdminGroup = "no-such-group-signd" }, "server.admin_group", `no group "no-such-group-signd" on this system`},
		{"admin group unknown gid", func(c *Config) { c.Server.AdminGroup = "4000000000" }, "server.admin_group", `no group "4000000000" on this system`},
		{"admin group negative", func(c *Config) { c.Server.AdminGroup = "-1" }, "server.admin_group", `no group "-1" on this system`},
		{"admin group blank", func(c *Config) { c.Server.AdminGroup = " " }, "server.admin_group", `no group " " on this system`},
		{"body limit max", func(c *Config) { c.Server.BodyLimitBytes = 64 << 20 }, "", ""},
		{"body limit over", func(c *Config) { c.Server.BodyLimitBytes = 64<<20 + 1 }, "server.body_limit_bytes", "between 1 and"},
		{"body limit zero", func(c *Config) { c.Server.BodyLimitBytes = 0 }, "server.body_limit_bytes", "between 1 and"},
		{"shutdown zero", func(c *Config) { c.Server.ShutdownTimeout = 0 }, "server.shutdown_timeout", "positive"},

		{"metrics off", func(c *Config) { c.Server.MetricsListen = "" }, "", ""},
		{"metrics own port", func(c *Config) { c.Server.MetricsListen = "127.0.0.1:9464" }, "", ""},
		{"metrics all interfaces, own port", func(c *Config) { c.Server.MetricsListen = ":9464" }, "", ""},
		{"metrics same port, another address", func(c *Config) { c.Server.MetricsListen = "10.1.2.3:8443" }, "", ""},
		{"metrics and listen both port 0", func(c *Config) { c.Server.Listen, c.Server.MetricsListen = "127.0.0.1:0", "127.0.0.1:0" }, "", ""},
		{"metrics no port", func(c *Config) { c.Server.MetricsListen = "127.0.0.1" }, "server.metrics_listen", `"127.0.0.1" is not host:port; empty turns the metrics listener off`},
		{"metrics garbage", func(c *Config) { c.Server.MetricsListen = "metrics please" }, "server.metrics_listen", "is not host:port"},
		{"metrics named port", func(c *Config) { c.Server.MetricsListen = "127.0.0.1:prometheus" }, "server.metrics_listen", "port must be a number"},
		{"metrics = listen", func(c *Config) { c.Server.MetricsListen = "127.0.0.1:8443" }, "server.metrics_listen", `"127.0.0.1:8443" uses the port of server.listen (127.0.0.1:8443)`},
		{"metrics on all interfaces, API port", func(c *Config) { c.Server.MetricsListen = "0.0.0.0:8443" }, "server.metrics_listen", "uses the port of server.listen"},
		{"metrics localhost, API port", func(c *Config) { c.Server.MetricsListen = "localhost:8443" }, "server.metrics_listen", "uses the port of server.listen"},
		{"listen on all interfaces, metrics on its port", func(c *Config) { c.Server.Listen, c.Server.MetricsListen = "[::]:9000", "[::1]:9000" }, "server.metrics_listen", "uses the port of server.listen"},

		{"proxies none", func(c *Config) { c.Server.TrustedProxies = nil }, "", ""},
		{"proxies CIDRs and IPs", func(c *Config) {
			c.Server.TrustedProxies = []string{"10.0.0.0/8", "192.0.2.7", "2001:db8::/32", "::1", "0.0.0.0/0"}
		}, "", ""},
		{"client IP header unknown", func(c *Config) { c.Server.ClientIPHeader = "Forwarded" }, "server.client_ip_header", `"Forwarded" is not one of X-Forwarded-For, X-Real-IP`},
		{"client IP header in another spelling", func(c *Config) { c.Server.ClientIPHeader = "x-real-ip" }, "server.client_ip_header", `"x-real-ip" is not one of X-Forwarded-For, X-Real-IP`},
		{"proxy prefix too long", func(c *Config) { c.Server.TrustedProxies = []string{"10.0.0.0/33"} }, "server.trusted_proxies", `entry 1: "10.0.0.0/33" is not a CIDR (such as 10.0.0.0/8) or an IP address`},
		{"proxy host bits", func(c *Config) { c.Server.TrustedProxies = []string{"10.0.0.0/8", "192.168.1.10/24"} }, "server.trusted_proxies", `entry 2: "192.168.1.10/24" has bits set past the prefix length (did you mean 192.168.1.0/24?)`},
		{"proxy host name", func(c *Config) { c.Server.TrustedProxies = []string{"proxy.example.org"} }, "server.trusted_proxies", `entry 1: "proxy.example.org" is not a CIDR`},
		{"proxy empty entry", func(c *Config) { c.Server.TrustedProxies = []string{""} }, "server.trusted_proxies", `entry 1: "" is not a CIDR`},
		{"proxy zone", func(c *Config) { c.Server.TrustedProxies = []string{"fe80::1%eth0"} }, "server.trusted_proxies", `entry 1: "fe80::1%eth0" is not a CIDR`},
		{"proxy IPv4-mapped", func(c *Config) { c.Server.TrustedProxies = []string{"::ffff:10.0.0.1"} }, "server.trusted_proxies", "write the IPv4 form"},
		{"proxies, two bad", func(c *Config) { c.Server.TrustedProxies = []string{"x", "10.0.0.0/8", "y/1"} }, "server.trusted_proxies", `entry 1: "x" is not a CIDR (such as 10.0.0.0/8) or an IP address; entry 3: "y/1" is not`},

		{"store path empty", func(c *Config) { c.Store.Path = "" }, "store.path", "empty"},
		{"store timeout negative", func(c *Config) { c.Store.OpenTimeout = -time.Second }, "store.open_timeout", "positive"},
		{"backend bolt", func(c *Config) { c.Store.Backend = BackendBolt }, "", ""},
		{"backend unknown", func(c *Config) { c.Store.Backend = "postgres" }, "store.backend", `"postgres" is not one of bolt, etcd`},
		{"backend upper case", func(c *Config) { c.Store.Backend = "ETCD" }, "store.backend", "not one of"},
		{"bolt ignores etcd keys", func(c *Config) { c.Store.Etcd.Endpoints = []string{"nonsense"} }, "", ""},
		{"etcd", onEtcd, "", ""},
		{"etcd with TLS", func(c *Config) {
			onEtcd(c)
			c.Store.Etcd.CertFile, c.Store.Etcd.KeyFile, c.Store.Etcd.CAFile = cert, key, cert
		}, "", ""},
		{"etcd no endpoints", func(c *Config) { onEtcd(c); c.Store.Etcd.Endpoints = nil }, "store.etcd.endpoints", "required when store.backend is etcd"},
		{"etcd endpoint without scheme", func(c *Config) { onEtcd(c); c.Store.Etcd.Endpoints = []string{"127.0.0.1:2379"} }, "store.etcd.endpoints", `"127.0.0.1:2379" is not a URL such as https://host:2379`},
		{"etcd endpoint unix", func(c *Config) { onEtcd(c); c.Store.Etcd.Endpoints = []string{"unix:///run/etcd.sock"} }, "store.etcd.endpoints", "scheme must be http or https"},
		{"etcd endpoint without port", func(c *Config) { onEtcd(c); c.Store.Etcd.Endpoints = []string{"https://etcd1"} }, "store.etcd.endpoints", "must name a host and a port"},
		{"etcd endpoint with path", func(c *Config) { onEtcd(c); c.Store.Etcd.Endpoints = []string{"https://etcd1:2379/v3"} }, "store.etcd.endpoints", "only a scheme, a host and a port"},
		{"etcd endpoint with credentials", func(c *Config) {
			onEtcd(c)
			c.Store.Etcd.Endpoints = []string{"https://root:hunter2@etcd1:2379"}
		}, "store.etcd.endpoints", "must not hold credentials"},
		{"etcd endpoint empty", func(c *Config) { onEtcd(c); c.Store.Etcd.Endpoints = []string{""} }, "store.etcd.endpoints", "scheme must be http or https"},
		{"etcd endpoint twice", func(c *Config) {
			onEtcd(c)
			c.Store.Etcd.Endpoints = []string{"https://etcd1:2379", "https://etcd1:2379"}
		}, "store.etcd.endpoints", `"https://etcd1:2379" is listed twice`},
		{"etcd endpoint oversized", func(c *Config) {
			onEtcd(c)
			c.Store.Etcd.Endpoints = []string{"https://" + strings.Repeat("e", 600) + ":2379"}
		}, "store.etcd.endpoints", "too long"},
		{"etcd too many endpoints", func(c *Config) {
			onEtcd(c)
			c.Store.Etcd.Endpoints = nil
			for i := range 65 {
				c.Store.Etcd.Endpoints = append(c.Store.Etcd.Endpoints, fmt.Sprintf("http://10.0.0.%d:2379", i))
			}
		}, "store.etcd.endpoints", "at most 64 endpoints, got 65"},
		{"etcd node empty", func(c *Config) { onEtcd(c); c.Store.Etcd.Node = "" }, "store.etcd.node", "required: this node's name"},
		{"etcd node too long", func(c *Config) { onEtcd(c); c.Store.Etcd.Node = strings.Repeat("n", 64) }, "store.etcd.node", "at most 63 characters, got 64"},
		{"etcd node upper case", func(c *Config) { onEtcd(c); c.Store.Etcd.Node = "Node1" }, "store.etcd.node", `"Node1": only a-z, 0-9`},
		{"etcd node with slash", func(c *Config) { onEtcd(c); c.Store.Etcd.Node = "a/b" }, "store.etcd.node", "only a-z"},
		{"etcd node leading dash", func(c *Config) { onEtcd(c); c.Store.Etcd.Node = "-n1" }, "store.etcd.node", "starting with a letter or a digit"},
		{"etcd node with NUL", func(c *Config) { onEtcd(c); c.Store.Etcd.Node = "n\x001" }, "store.etcd.node", "only a-z"},
		{"etcd node longest", func(c *Config) { onEtcd(c); c.Store.Etcd.Node = strings.Repeat("n", 63) }, "", ""},
		{"bolt ignores etcd node", func(c *Config) { c.Store.Etcd.Node = "Bad Name" }, "", ""},
		{"etcd prefix empty", func(c *Config) { onEtcd(c); c.Store.Etcd.Prefix = "" }, "store.etcd.prefix", "must not be empty"},
		{"etcd prefix with space", func(c *Config) { onEtcd(c); c.Store.Etcd.Prefix = "/signd prod/" }, "store.etcd.prefix", "space or a control character"},
		{"etcd prefix with NUL", func(c *Config) { onEtcd(c); c.Store.Etcd.Prefix = "/signd\x00/" }, "store.etcd.prefix", "control character"},
		{"etcd prefix oversized", func(c *Config) { onEtcd(c); c.Store.Etcd.Prefix = strings.Repeat("p", 257) }, "store.etcd.prefix", "at most 256 bytes, got 257"},
		{"etcd cert without key", func(c *Config) { onEtcd(c); c.Store.Etcd.CertFile = cert }, "store.etcd.key_file", "required when store.etcd.cert_file is set"},
		{"etcd key without cert", func(c *Config) { onEtcd(c); c.Store.Etcd.KeyFile = key }, "store.etcd.cert_file", "required when store.etcd.key_file is set"},
		{"etcd CA missing", func(c *Config) { onEtcd(c); c.Store.Etcd.CAFile = filepath.Join(dir, "ca.pem") }, "store.etcd.ca_file", "no such file"},
		{"etcd dial timeout zero", func(c *Config) { onEtcd(c); c.Store.Etcd.DialTimeout = 0 }, "store.etcd.dial_timeout", "positive"},
		{"etcd request timeout huge", func(c *Config) { onEtcd(c); c.Store.Etcd.RequestTimeout = time.Hour }, "store.etcd.request_timeout", "at most 5m0s, got 1h0m0s"},
		{"etcd health timeout missing", func(c *Config) { onEtcd(c); c.Store.Etcd.HealthTimeout = 0 }, "store.etcd.health_timeout", "positive"},
		{"etcd health timeout negative", func(c *Config) { onEtcd(c); c.Store.Etcd.HealthTimeout = -time.Second }, "store.etcd.health_timeout", "positive"},
		{"etcd health timeout over the request timeout", func(c *Config) { onEtcd(c); c.Store.Etcd.HealthTimeout = 6 * time.Second },
			"store.etcd.health_timeout", "at most store.etcd.request_timeout (5s), got 6s"},
		{"etcd health timeout huge", func(c *Config) { onEtcd(c); c.Store.Etcd.HealthTimeout = time.Hour },
			"store.etcd.health_timeout", "at most store.etcd.request_timeout (5s), got 1h0m0s"},
		{"etcd health timeout the request timeout", func(c *Config) { onEtcd(c); c.Store.Etcd.HealthTimeout = 5 * time.Second }, "", ""},
		{"etcd health timeout short", func(c *Config) { onEtcd(c); c.Store.Etcd.HealthTimeout = 100 * time.Millisecond }, "", ""},
		{"bolt ignores the etcd health timeout", func(c *Config) { c.Store.Etcd.HealthTimeout = time.Hour }, "", ""},

		{"module relative", func(c *Config) { c.PKCS11.Module = "libsofthsm2.so" }, "pkcs11.module", "absolute"},
		{"module empty", func(c *Config) { c.PKCS11.Module = "" }, "pkcs11.module", "absolute"},
		{"label 32 bytes", func(c *Config) { c.PKCS11.TokenLabel = strings.Repeat("l", 32) }, "", ""},
		{"label 33 bytes", func(c *Config) { c.PKCS11.TokenLabel = strings.Repeat("l", 33) }, "pkcs11.token_label", "at most 32"},
		{"label multibyte", func(c *Config) { c.PKCS11.TokenLabel = strings.Repeat("é", 17) }, "pkcs11.token_label", "34 bytes"},
		{"label empty", func(c *Config) { c.PKCS11.TokenLabel = "" }, "pkcs11.token_label", "empty"},
		{"label trailing space", func(c *Config) { c.PKCS11.TokenLabel = "signd " }, "pkcs11.token_label", "space"},
		{"no pin", func(c *Config) { c.PKCS11.PIN = "" }, "pkcs11.pin", "no PIN"},
		{"pin and pin file", func(c *Config) { c.PKCS11.PINFile = key }, "pkcs11.pin", "set together with pkcs11.pin_file"},
		{"pin file only", func(c *Config) { c.PKCS11.PIN, c.PKCS11.PINFile = "", key }, "", ""},
		{"pin file world readable", func(c *Config) { c.PKCS11.PIN, c.PKCS11.PINFile = "", cert }, "pkcs11.pin_file", "has mode 0644"},
		{"pin file missing", func(c *Config) { c.PKCS11.PIN, c.PKCS11.PINFile = "", filepath.Join(dir, "pin") }, "pkcs11.pin_file", "no such file"},
		{"max sessions 1024", func(c *Config) { c.PKCS11.MaxSessions = 1024 }, "", ""},
		{"max sessions 1025", func(c *Config) { c.PKCS11.MaxSessions = 1025 }, "pkcs11.max_sessions", "between 0 and 1024"},
		{"acquire zero", func(c *Config) { c.PKCS11.AcquireTimeout = 0 }, "pkcs11.acquire_timeout", "positive"},

		{"level warn", func(c *Config) { c.Log.Level = "warn" }, "", ""},
		{"level upper case", func(c *Config) { c.Log.Level = "INFO" }, "log.level", "not one of"},
		{"format text", func(c *Config) { c.Log.Format = "text" }, "", ""},
		{"format xml", func(c *Config) { c.Log.Format = "xml" }, "log.format", "not one of"},

		{"hash cap 1", func(c *Config) { c.CSC.MaxHashesPerRequest = 1 }, "", ""},
		{"hash cap 10000", func(c *Config) { c.CSC.MaxHashesPerRequest = 10000 }, "", ""},
		{"hash cap 0", func(c *Config) { c.CSC.MaxHashesPerRequest = 0 }, "csc.max_hashes_per_request", "must be between 1 and 10000, got 0"},
		{"hash cap negative", func(c *Config) { c.CSC.MaxHashesPerRequest = -5 }, "csc.max_hashes_per_request", "must be between 1 and 10000"},
		{"timestamp without policy", func(c *Config) { c.CSC.Timestamp.Enabled = true }, "csc.timestamp.policy", "must be set when csc.timestamp.enabled is true"},
		{"timestamp policy not an OID", func(c *Config) { c.CSC.Timestamp.Policy = "1.2.x" }, "csc.timestamp.policy", `"1.2.x" is not a dotted object identifier`},
		{"timestamp policy first arc 3", func(c *Config) { c.CSC.Timestamp.Policy = "3.1" }, "csc.timestamp.policy", "is not a dotted object identifier"},
		{"timestamp policy leading zero", func(c *Config) { c.CSC.Timestamp.Policy = "1.03" }, "csc.timestamp.policy", "is not a dotted object identifier"},
		{"timestamp policy one arc", func(c *Config) { c.CSC.Timestamp.Policy = "1" }, "csc.timestamp.policy", "is not a dotted object identifier"},
		{"timestamp policy oversized", func(c *Config) { c.CSC.Timestamp.Policy = "1" + strings.Repeat(".1", 150) }, "csc.timestamp.policy", "is not a dotted object identifier"},
		{"timestamp label empty", func(c *Config) { c.CSC.Timestamp.Label = "" }, "csc.timestamp.label", `"" is not 1 to 64 letters`},
		{"timestamp label with a space", func(c *Config) { c.CSC.Timestamp.Label = "my tsa" }, "csc.timestamp.label", `"my tsa" is not 1 to 64 letters`},
		{"timestamp accuracy negative", func(c *Config) { c.CSC.Timestamp.Accuracy = -time.Second }, "csc.timestamp.accuracy", "is not between 0s and 1m0s"},
		{"timestamp accuracy 2m", func(c *Config) { c.CSC.Timestamp.Accuracy = 2 * time.Minute }, "csc.timestamp.accuracy", "is not between 0s and 1m0s"},
		{"timestamp accuracy 0", func(c *Config) { c.CSC.Timestamp.Accuracy = 0 }, "", ""},
		{"timestamp accuracy 1s", func(c *Config) { c.CSC.Timestamp.Accuracy = time.Second }, "", ""},
		{"timestamp accuracy 1m", func(c *Config) { c.CSC.Timestamp.Accuracy = time.Minute }, "", ""},
		{"timestamp accuracy 500ms", func(c *Config) { c.CSC.Timestamp.Accuracy = 500 * time.Millisecond }, "csc.timestamp.accuracy",
			"500ms is finer than genTime, which is in whole seconds: use 0 (omitted) or 1s to 1m"},
		{"timestamp accuracy 1ns", func(c *Config) { c.CSC.Timestamp.Accuracy = time.Nanosecond }, "csc.timestamp.accuracy", "finer than genTime"},
		{"timestamp label signd", func(c *Config) { c.CSC.Timestamp.Label = "signd" }, "csc.timestamp.label",
			`"signd" would make signd's credential or OIDC keys (signd-<id>, signd-oidc-<id>) time-stamping keys (signd-<id>)`},
		{"timestamp label signd-oidc", func(c *Config) { c.CSC.Timestamp.Label = "signd-oidc" }, "csc.timestamp.label", "time-stamping keys"},
		{"timestamp label the audit key's", func(c *Config) { c.CSC.Timestamp.Label = "signd-audit" }, "csc.timestamp.label",
			`"signd-audit" would make the audit key (audit.key_label "signd-audit") a time-stamping key (signd-audit-<id>)`},
		{"timestamp label over the audit key's", func(c *Config) { c.Audit.KeyLabel = "signd-tsa-audit" }, "csc.timestamp.label", "would make the audit key"},
		{"timestamp label beside the audit key's", func(c *Config) { c.CSC.Timestamp.Label = "signd-auditor" }, "", ""},
		{"cert status refresh 1s", func(c *Config) { c.CSC.CertStatus.Refresh = time.Second }, "", ""},
		{"cert status refresh 24h", func(c *Config) { c.CSC.CertStatus.Refresh = 24 * time.Hour }, "", ""},
		{"cert status refresh 0", func(c *Config) { c.CSC.CertStatus.Refresh = 0 }, "csc.cert_status.refresh", "0s is not between 1s and 24h0m0s"},
		{"cert status refresh too long", func(c *Config) { c.CSC.CertStatus.Refresh = 25 * time.Hour }, "csc.cert_status.refresh", "is not between 1s and 24h0m0s"},
		{"cert status refresh negative", func(c *Config) { c.CSC.CertStatus.Refresh = -time.Minute }, "csc.cert_status.refresh", "is not between"},
		{"cert status timeout 0", func(c *Config) { c.CSC.CertStatus.Timeout = 0 }, "csc.cert_status.timeout", "0s is not between 1s and 1m0s"},
		{"cert status timeout 2m", func(c *Config) { c.CSC.CertStatus.Timeout = 2 * time.Minute }, "csc.cert_status.timeout", "is not between 1s and 1m0s"},
		{"cert status off", func(c *Config) { c.CSC.CertStatus.Enabled = false }, "", ""},
		{"OCSP max age 1m", func(c *Config) { c.CSC.CertStatus.OCSPMaxAge = time.Minute }, "", ""},
		{"OCSP max age 24h", func(c *Config) { c.CSC.CertStatus.OCSPMaxAge = 24 * time.Hour }, "", ""},
		{"OCSP max age 0", func(c *Config) { c.CSC.CertStatus.OCSPMaxAge = 0 }, "csc.cert_status.ocsp_max_age", "0s is not between 1m0s and 24h0m0s"},
		{"OCSP max age 59s", func(c *Config) { c.CSC.CertStatus.OCSPMaxAge = 59 * time.Second }, "csc.cert_status.ocsp_max_age", "59s is not between 1m0s and 24h0m0s"},
		{"OCSP max age over a day", func(c *Config) { c.CSC.CertStatus.OCSPMaxAge = 25 * time.Hour }, "csc.cert_status.ocsp_max_age", "is not between 1m0s and 24h0m0s"},
		{"OCSP max age negative", func(c *Config) { c.CSC.CertStatus.OCSPMaxAge = -time.Hour }, "csc.cert_status.ocsp_max_age", "is not between"},
		{"hash cap 10001", func(c *Config) { c.CSC.MaxHashesPerRequest = 10001 }, "csc.max_hashes_per_request", "must be between 1 and 10000, got 10001"},

		{"auth login with client", func(c *Config) { c.CSC.AuthLogin, c.CSC.AuthLoginClient = true, "laverca" }, "", ""},
		{"auth login without client", func(c *Config) { c.CSC.AuthLogin = true }, "csc.auth_login_client", "required when csc.auth_login is true"},
		{"auth login client malformed", func(c *Config) { c.CSC.AuthLogin, c.CSC.AuthLoginClient = true, "a b" }, "csc.auth_login_client", "is not a client ID"},
		{"auth login client too long", func(c *Config) { c.CSC.AuthLoginClient = strings.Repeat("a", 129) }, "csc.auth_login_client", "is not a client ID"},
		{"refresh ttl 90 days", func(c *Config) { c.CSC.RefreshTokenTTL = 90 * 24 * time.Hour }, "", ""},
		{"refresh ttl zero", func(c *Config) { c.CSC.RefreshTokenTTL = 0 }, "csc.refresh_token_ttl", "is not between 1m0s and 2160h0m0s"},
		{"refresh ttl too long", func(c *Config) { c.CSC.RefreshTokenTTL = 91 * 24 * time.Hour }, "csc.refresh_token_ttl", "is not between"},

		{"lockout base equal to max", func(c *Config) { c.OAuth.Lockout.Base = time.Hour }, "", ""},
		{"lockout permanent after 3", func(c *Config) { c.OAuth.Lockout.PermanentAfter = 3 }, "", ""},
		{"lockout base zero", func(c *Config) { c.OAuth.Lockout.Base = 0 }, "oauth.lockout.base", "0s is not between 1s and 24h0m0s"},
		{"lockout base negative", func(c *Config) { c.OAuth.Lockout.Base = -time.Minute }, "oauth.lockout.base", "-1m0s is not between 1s and 24h0m0s"},
		{"lockout base too long", func(c *Config) { c.OAuth.Lockout.Base, c.OAuth.Lockout.Max = 25*time.Hour, 48*time.Hour }, "oauth.lockout.base", "25h0m0s is not between 1s and 24h0m0s"},
		{"lockout max zero", func(c *Config) { c.OAuth.Lockout.Max = 0 }, "oauth.lockout.max", "0s is not between 1s and 720h0m0s"},
		{"lockout max negative", func(c *Config) { c.OAuth.Lockout.Max = -time.Hour }, "oauth.lockout.max", "-1h0m0s is not between 1s and 720h0m0s"},
		{"lockout max too long", func(c *Config) { c.OAuth.Lockout.Max = 31 * 24 * time.Hour }, "oauth.lockout.max", "is not between 1s and 720h0m0s"},
		{"lockout base over max", func(c *Config) { c.OAuth.Lockout.Base = 2 * time.Hour }, "oauth.lockout.max", "1h0m0s is shorter than oauth.lockout.base (2h0m0s)"},
		{"lockout permanent after negative", func(c *Config) { c.OAuth.Lockout.PermanentAfter = -1 }, "oauth.lockout.permanent_after", "must be between 0 and 100, got -1"},
		{"lockout permanent after too many", func(c *Config) { c.OAuth.Lockout.PermanentAfter = 101 }, "oauth.lockout.permanent_after", "must be between 0 and 100, got 101"},
		{"signing alg PS256", func(c *Config) { c.OIDC.SigningAlg = "PS256" }, "", ""},
		{"signing alg ES256", func(c *Config) { c.OIDC.SigningAlg = "ES256" }, "", ""},
		{"signing alg missing", func(c *Config) { c.OIDC.SigningAlg = "" }, "oidc.signing_alg", `"" is not one of RS256, PS256, ES256`},
		{"signing alg none", func(c *Config) { c.OIDC.SigningAlg = "none" }, "oidc.signing_alg", `"none" is not one of RS256, PS256, ES256 (case-sensitive; none and HMAC algorithms are never allowed)`},
		{"signing alg HS256", func(c *Config) { c.OIDC.SigningAlg = "HS256" }, "oidc.signing_alg", `"HS256" is not one of`},
		{"signing alg lower case", func(c *Config) { c.OIDC.SigningAlg = "es256" }, "oidc.signing_alg", `"es256" is not one of`},
		{"signing alg with space", func(c *Config) { c.OIDC.SigningAlg = "ES256 " }, "oidc.signing_alg", `"ES256 " is not one of`},
		{"signing alg ES384", func(c *Config) { c.OIDC.SigningAlg = "ES384" }, "oidc.signing_alg", `"ES384" is not one of`},
		{"signing alg 1000 bytes", func(c *Config) { c.OIDC.SigningAlg = strings.Repeat("R", 1000) }, "oidc.signing_alg", `"RRRRRRRRRRRRRRRRRRRR" is not one of`},
		{"rate limit off", func(c *Config) { c.RateLimit.Token.Rate = 0 }, "", ""},
		{"rate limit fraction", func(c *Config) { c.RateLimit.Forms.Rate = 0.05 }, "", ""},
		{"rate limit smallest", func(c *Config) { c.RateLimit.AuthLogin.Rate = MinRate }, "", ""},
		{"rate limit largest", func(c *Config) { c.RateLimit.Timestamp = LimitConfig{Rate: MaxRate, Burst: MaxBurst} }, "", ""},
		{"rate negative", func(c *Config) { c.RateLimit.Token.Rate = -1 }, "ratelimit.token.rate", "-1 is not 0 (no limit) or between 0.001 and 1e+06 requests a second"},
		{"rate too small", func(c *Config) { c.RateLimit.Forms.Rate = 0.0001 }, "ratelimit.forms.rate", "0.0001 is not 0 (no limit) or between"},
		{"rate absurd", func(c *Config) { c.RateLimit.Timestamp.Rate = 1e9 }, "ratelimit.timestamp.rate", "1e+09 is not 0 (no limit) or between"},
		{"rate NaN", func(c *Config) { c.RateLimit.AuthLogin.Rate = math.NaN() }, "ratelimit.auth_login.rate", "NaN is not 0"},
		{"rate infinite", func(c *Config) { c.RateLimit.AuthLogin.Rate = math.Inf(1) }, "ratelimit.auth_login.rate", "+Inf is not 0"},
		{"burst 0", func(c *Config) { c.RateLimit.Token.Burst = 0 }, "ratelimit.token.burst", "must be between 1 and 1000000, got 0"},
		{"burst 0 with the limit off", func(c *Config) { c.RateLimit.Token = LimitConfig{} }, "ratelimit.token.burst", "must be between 1 and 1000000, got 0"},
		{"burst negative", func(c *Config) { c.RateLimit.Forms.Burst = -5 }, "ratelimit.forms.burst", "must be between 1 and 1000000, got -5"},
		{"burst absurd", func(c *Config) { c.RateLimit.Timestamp.Burst = MaxBurst + 1 }, "ratelimit.timestamp.burst", "must be between 1 and 1000000, got 1000001"},
		{"max keys 0", func(c *Config) { c.RateLimit.MaxKeys = 0 }, "ratelimit.max_keys", "must be between 1 and 1000000, got 0"},
		{"max keys absurd", func(c *Config) { c.RateLimit.MaxKeys = 1 << 40 }, "ratelimit.max_keys", "must be between 1 and 1000000"},
		{"dual control recommended", func(c *Config) {
			c.Admin.DualControl = []string{"credential_remove", "tsa_enroll", "oidc_keys_rotate"}
		}, "", ""},
		{"dual control every act that can wait", func(c *Config) {
			for _, a := range DualControlActs() {
				if a.Refused == "" {
					c.Admin.DualControl = append(c.Admin.DualControl, a.Name)
				}
			}
		}, "", ""},
		{"dual control typo", func(c *Config) { c.Admin.DualControl = []string{"tsa_enroll", "credential_remov"} },
			"admin.dual_control", `entry 2: unknown act "credential_remov" (did you mean "credential_remove"?)`},
		{"dual control upper case", func(c *Config) { c.Admin.DualControl = []string{"Credential_Remove"} },
			"admin.dual_control", `entry 1: unknown act "Credential_Remove" (did you mean "credential_remove"?)`},
		{"dual control operation name", func(c *Config) { c.Admin.DualControl = []string{"RemoveCredential"} },
			"admin.dual_control", `entry 1: unknown act "RemoveCredential" (acts: user_status, user_unlock, user_unlock_pin, user_remove, totp_remove, client_remove, credential_create,`},
		{"dual control empty name", func(c *Config) { c.Admin.DualControl = []string{""} },
			"admin.dual_control", `entry 1: unknown act ""`},
		{"dual control duplicate", func(c *Config) {
			c.Admin.DualControl = []string{"credential_remove", "tsa_enroll", "credential_remove"}
		},
			"admin.dual_control", `entry 3: "credential_remove" is named twice`},
		{"dual control secret in the request", func(c *Config) { c.Admin.DualControl = []string{"user_set_pin"} },
			"admin.dual_control", "entry 1: user_set_pin cannot wait for a second operator: its request carries the new PIN"},
		{"dual control secret in the answer", func(c *Config) { c.Admin.DualControl = []string{"credential_remove", "client_add"} },
			"admin.dual_control", "entry 2: client_add cannot wait for a second operator: its request or its answer carries the client secret"},
		{"dual control two problems", func(c *Config) { c.Admin.DualControl = []string{"user_add", "nope"} },
			"admin.dual_control", "entry 1: user_add cannot wait for a second operator: its request carries the password and the PIN; entry 2: unknown act \"nope\""},
		{"pending ttl shortest", func(c *Config) { c.Admin.PendingTTL = MinPendingTTL }, "", ""},
		{"pending ttl longest", func(c *Config) { c.Admin.PendingTTL = MaxPendingTTL }, "", ""},
		{"pending ttl 0", func(c *Config) { c.Admin.PendingTTL = 0 }, "admin.pending_ttl", "0s is not between 5m0s and 168h0m0s"},
		{"pending ttl negative", func(c *Config) { c.Admin.PendingTTL = -time.Hour }, "admin.pending_ttl", "-1h0m0s is not between"},
		{"pending ttl too short", func(c *Config) { c.Admin.PendingTTL = time.Minute }, "admin.pending_ttl", "1m0s is not between"},
		{"pending ttl too long", func(c *Config) { c.Admin.PendingTTL = MaxPendingTTL + time.Second }, "admin.pending_ttl", "168h0m1s is not between"},
		{"enrollment ttl 0", func(c *Config) { c.Admin.EnrollmentTTL = 0 }, "admin.enrollment_ttl", "0s is not between 5m0s and 168h0m0s"},
		{"enrollment ttl too short", func(c *Config) { c.Admin.EnrollmentTTL = time.Minute }, "admin.enrollment_ttl", "1m0s is not between"},
		{"enrollment ttl too long", func(c *Config) { c.Admin.EnrollmentTTL = MaxEnrollmentTTL + time.Second }, "admin.enrollment_ttl", "168h0m1s is not between"},

		{"audit key label longest", func(c *Config) { c.Audit.KeyLabel = strings.Repeat("k", MaxAuditKeyLabelLen) }, "", ""},
		{"audit key label too long", func(c *Config) { c.Audit.KeyLabel = strings.Repeat("k", MaxAuditKeyLabelLen+1) }, "audit.key_label", "is 129 bytes; at most 128"},
		{"audit key label control", func(c *Config) { c.Audit.KeyLabel = "audit\nkey" }, "audit.key_label", "control character"},
		{"audit key label invalid UTF-8", func(c *Config) { c.Audit.KeyLabel = "audit\xff" }, "audit.key_label", "invalid UTF-8"},
		{"checkpoint origin", func(c *Config) { c.Audit.CheckpointOrigin = "sign.example.org/audit" }, "", ""},
		{"checkpoint origin space", func(c *Config) { c.Audit.CheckpointOrigin = "sign example" }, "audit.checkpoint_origin", "no space"},
		{"checkpoint origin plus", func(c *Config) { c.Audit.CheckpointOrigin = "sign+example" }, "audit.checkpoint_origin", `no "+"`},
		{"checkpoint origin newline", func(c *Config) { c.Audit.CheckpointOrigin = "sign\n42" }, "audit.checkpoint_origin", "control character"},
		{"checkpoint origin too long", func(c *Config) { c.Audit.CheckpointOrigin = strings.Repeat("o", MaxCheckpointOriginLen+1) }, "audit.checkpoint_origin", "at most 255"},
		{"checkpoint interval", func(c *Config) { c.Audit.CheckpointInterval, c.Audit.CheckpointDir = time.Hour, "cp" }, "", ""},
		{"checkpoint interval negative", func(c *Config) { c.Audit.CheckpointInterval, c.Audit.CheckpointDir = -time.Hour, "cp" }, "audit.checkpoint_interval", "must be 0 (only on demand) or between 1m0s and 168h0m0s, got -1h0m0s"},
		{"checkpoint interval too short", func(c *Config) { c.Audit.CheckpointInterval, c.Audit.CheckpointDir = time.Second, "cp" }, "audit.checkpoint_interval", "got 1s"},
		{"checkpoint interval too long", func(c *Config) { c.Audit.CheckpointInterval, c.Audit.CheckpointDir = 8*24*time.Hour, "cp" }, "audit.checkpoint_interval", "got 192h0m0s"},
		{"checkpoint interval without a dir", func(c *Config) { c.Audit.CheckpointInterval, c.Audit.CheckpointDir = time.Hour, "" }, "audit.checkpoint_interval", "needs audit.checkpoint_dir"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := validated(t, tt.mutate)
			wantOneProblem(t, err, tt.key, tt.msg)
			if err != nil && (strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "pin-q7Zx")) {
				t.Errorf("error leaks a secret: %v", err)
			}
		})
	}
}

func TestTrustedProxyNets(t *testing.T) {
	s := ServerConfig{TrustedProxies: []string{"10.0.0.0/8", "192.0.2.7", "2001:db8::/32", "::1"}}
	var got []string
	for _, n := range s.TrustedProxyNets() {
		got = append(got, n.String())
	}
	want := []string{"10.0.0.0/8", "192.0.2.7/32", "2001:db8::/32", "::1/128"}
	if !slices.Equal(got, want) {
		t.Errorf("TrustedProxyNets = %v, want %v", got, want)
	}
	nets := s.TrustedProxyNets()
	for ip, in := range map[string]bool{"10.9.8.7": true, "11.0.0.1": false, "192.0.2.7": true, "192.0.2.8": false, "::1": true, "::2": false, "2001:db8:1::5": true} {
		if got := nets[0].Contains(net.ParseIP(ip)) || nets[1].Contains(net.ParseIP(ip)) || nets[2].Contains(net.ParseIP(ip)) || nets[3].Contains(net.ParseIP(ip)); got != in {
			t.Errorf("%s trusted = %v, want %v", ip, got, in)
		}
	}
}

func TestAdminGID(t *testing.T) {
	tests := []struct {
		group string
		want  int
	}{
		{"", NoAdminGroup},
		{"root", 0},
		{"0", 0},
	}
	for _, tt := range tests {
		got, err := ServerConfig{AdminGroup: tt.group}.AdminGID()
		if err != nil || got != tt.want {
			t.Errorf("AdminGID(%q) = %d, %v; want %d", tt.group, got, err, tt.want)
		}
	}
	if _, err := (ServerConfig{AdminGroup: "no-such-group-signd"}).AdminGID(); err == nil ||
		err.Error() != `server.admin_group: no group "no-such-group-signd" on this system` {
		t.Errorf("unknown group: %v", err)
	}
}

func TestErrorUnwrap(t *testing.T) {
	c := validConfig(t)
	c.Server.Listen, c.Log.Level = "x", "y"
	err := c.Validate()
	var p Problem
	if !errors.As(err, &p) || p.Key != "server.listen" {
		t.Errorf("errors.As(Problem) = %v, %+v", err, p)
	}
	if got := err.Error(); got != "server.listen: \"x\" is not host:port\nlog.level: \"y\" is not one of debug, info, warn, error" {
		t.Errorf("Error() = %q", got)
	}
}

func TestSlogLevel(t *testing.T) {
	for level, want := range map[string]string{"debug": "DEBUG", "info": "INFO", "warn": "WARN", "error": "ERROR", "bogus": "INFO"} {
		if got := (LogConfig{Level: level}).SlogLevel().String(); got != want {
			t.Errorf("SlogLevel(%s) = %s, want %s", level, got, want)
		}
	}
}
