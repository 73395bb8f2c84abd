package config

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/signd/signd/config/rules"
	"github.com/signd/signd/config/schema"
	"github.com/signd/signd/internal/safepath"
)

// Validate checks every key and reports every bad one at once, as an *Error.
// It reads the file system (pin_file, TLS files) but opens no resources.
func (c *Config) Validate() error {
	if ps := c.problems(); len(ps) > 0 {
		return &Error{Source: c.source, Problems: ps}
	}
	return nil
}

// check is one row of a validation table: msg is "" when the key is fine.
// Helpers below return "" or a message, so a table reads like dex's
// {bad, msg} list without repeating each condition.
type check struct {
	key string
	msg string
}

// problems runs every section's checks, keeping the first complaint per key.
func (c *Config) problems() []Problem {
	var checks []check
	checks = append(checks, c.Server.checks()...)
	checks = append(checks, c.Store.checks()...)
	checks = append(checks, c.PKCS11.checks()...)
	checks = append(checks, c.Log.checks()...)
	checks = append(checks, c.OAuth.checks()...)
	checks = append(checks, c.CSC.checks()...)
	checks = append(checks, c.tsaLabelChecks()...)
	checks = append(checks, c.OIDC.checks()...)
	checks = append(checks, c.RateLimit.checks()...)
	checks = append(checks, c.Admin.checks()...)
	checks = append(checks, c.adminAPIChecks()...)
	checks = append(checks, c.Audit.checks()...)
	checks = append(checks, c.UI.checks()...)

	var ps []Problem
	seen := map[string]bool{}
	for _, ch := range checks {
		if ch.msg == "" || seen[ch.key] {
			continue
		}
		seen[ch.key] = true
		ps = append(ps, Problem{Key: ch.key, Msg: ch.msg})
	}
	return ps
}

func (s *ServerConfig) checks() []check {
	return []check{
		{"server.listen", rules.HostPort(s.Listen)},
		{"server.base_url", issuerURL(s.BaseURL)},
		{"server.tls.cert_file", rules.PairedWith(s.TLS.CertFile, s.TLS.KeyFile, "server.tls.key_file")},
		{"server.tls.cert_file", rules.ReadableFile(s.TLS.CertFile)},
		{"server.tls.key_file", rules.PairedWith(s.TLS.KeyFile, s.TLS.CertFile, "server.tls.cert_file")},
		{"server.tls.key_file", rules.ReadableFile(s.TLS.KeyFile)},
		{"server.admin_socket", socketPath(s.AdminSocket)},
		{"server.admin_group", groupProblem(s.AdminGroup)},
		{"server.body_limit_bytes", rules.Between(s.BodyLimitBytes, 1, MaxBodyLimitBytes)},
		{"server.shutdown_timeout", rules.Positive(s.ShutdownTimeout)},
		{"server.metrics_listen", metricsListen(s.MetricsListen, s.Listen)},
		{"server.trusted_proxies", trustedProxies(s.TrustedProxies)},
		{"server.client_ip_header", clientIPHeader(s.ClientIPHeader)},
	}
}

func (s *StoreConfig) checks() []check {
	checks := []check{
		{"store.backend", rules.OneOf(s.BackendName(), BackendBolt, BackendEtcd)},
		{"store.path", rules.NonEmpty(s.Path)},
		{"store.open_timeout", rules.Positive(s.OpenTimeout)},
	}
	if s.BackendName() != BackendEtcd {
		return checks
	}
	e := &s.Etcd
	return append(checks,
		check{"store.etcd.endpoints", etcdEndpoints(e.Endpoints)},
		check{"store.etcd.prefix", etcdPrefix(e.Prefix)},
		check{"store.etcd.node", etcdNode(e.Node)},
		check{"store.etcd.cert_file", rules.PairedWith(e.CertFile, e.KeyFile, "store.etcd.key_file")},
		check{"store.etcd.cert_file", rules.ReadableFile(e.CertFile)},
		check{"store.etcd.key_file", rules.PairedWith(e.KeyFile, e.CertFile, "store.etcd.cert_file")},
		check{"store.etcd.key_file", rules.ReadableFile(e.KeyFile)},
		check{"store.etcd.ca_file", rules.ReadableFile(e.CAFile)},
		check{"store.etcd.dial_timeout", boundedDuration(e.DialTimeout, MaxEtcdTimeout)},
		check{"store.etcd.request_timeout", boundedDuration(e.RequestTimeout, MaxEtcdTimeout)},
		check{"store.etcd.health_timeout", etcdHealthTimeout(e.HealthTimeout, e.RequestTimeout)},
	)
}

func (p *PKCS11Config) checks() []check {
	return []check{
		{"pkcs11.module", rules.Absolute(p.Module)},
		{"pkcs11.module", trustedModule(p.Module, os.Geteuid())},
		{"pkcs11.token_label", tokenLabel(p.TokenLabel)},
		{"pkcs11.pin", pinSource(p.PIN, p.PINFile)},
		{"pkcs11.pin_file", rules.PrivateFile(p.PINFile)},
		{"pkcs11.max_sessions", rules.Between(p.MaxSessions, 0, MaxSessions)},
		{"pkcs11.acquire_timeout", rules.Positive(p.AcquireTimeout)},
		{"pkcs11.profile", profile(p.Profile)},
	}
}

func (l *LogConfig) checks() []check {
	return []check{
		{"log.level", rules.OneOf(l.Level, "debug", "info", "warn", "error")},
		{"log.format", rules.OneOf(l.Format, "json", "text")},
	}
}

// SlogLevel returns log.level as a slog.Level (info for an invalid level,
// which Validate refuses anyway).
func (l LogConfig) SlogLevel() slog.Level {
	switch l.Level {
	case "debug":
		return slog.LevelDebug
	case "warn":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	}
	return slog.LevelInfo
}

// profile accepts pkcs11.profile's values; "" (a Config built in code,
// without Load's defaults) is auto.
func profile(s string) string {
	if s == "" {
		return ""
	}
	return rules.OneOf(s, "auto", "strict", "token-fixed-usage")
}

// issuerURL checks server.base_url, the OAuth/OIDC issuer: an absolute
// http(s) URL without user info, query or fragment; https unless the host is
// loopback. Load has already stripped a trailing slash.
func issuerURL(s string) string {
	if s == "" {
		return "required (the public URL of signd, e.g. https://sign.example.org; env " + EnvName("server.base_url") + ", flag --base-url)"
	}
	u, err := url.Parse(s)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // url.Error repeats the value
		}
		return fmt.Sprintf("is not a URL: %v", err)
	}
	switch {
	case u.User != nil:
		return "must not contain user info" // may be a password: do not echo
	case u.Scheme != "https" && u.Scheme != "http":
		return fmt.Sprintf("%q must be an absolute http(s) URL", s)
	case u.Host == "" || u.Opaque != "":
		return fmt.Sprintf("%q has no host", s)
	case u.RawQuery != "" || u.ForceQuery:
		return fmt.Sprintf("%q must not have a query", s)
	case u.Fragment != "" || strings.Contains(s, "#"):
		return fmt.Sprintf("%q must not have a fragment", s)
	case strings.HasSuffix(s, "/"):
		return fmt.Sprintf("%q must not end with a slash", s)
	case u.Scheme == "http" && !rules.IsLoopback(u.Hostname()):
		return fmt.Sprintf("%q must use https (plain http is only allowed for a loopback host)", s)
	}
	return ""
}

// maxSocketPath is the longest path a Linux AF_UNIX address holds
// (sun_path is 108 bytes including the terminating NUL).
const maxSocketPath = 107

func socketPath(p string) string {
	switch {
	case p == "":
		return "must not be empty"
	case len(p) > maxSocketPath:
		return fmt.Sprintf("is %d bytes; a Unix socket path is at most %d", len(p), maxSocketPath)
	}
	return ""
}

// NoAdminGroup is what ServerConfig.AdminGID returns when
// server.admin_group is empty.
const NoAdminGroup = -1

// AdminGID resolves server.admin_group (a group name, or a numeric gid) to
// a gid through the system's group database (os/user), or returns
// NoAdminGroup when it is empty. An unknown group is an error naming the
// key.
func (s ServerConfig) AdminGID() (int, error) {
	if s.AdminGroup == "" {
		return NoAdminGroup, nil
	}
	var g *user.Group
	var err error
	if schema.IsDecimal(s.AdminGroup) && !strings.HasPrefix(s.AdminGroup, "-") {
		g, err = user.LookupGroupId(s.AdminGroup)
	} else {
		g, err = user.LookupGroup(s.AdminGroup)
	}
	if err != nil {
		var unknownName user.UnknownGroupError
		var unknownID user.UnknownGroupIdError
		if errors.As(err, &unknownName) || errors.As(err, &unknownID) {
			return 0, fmt.Errorf("server.admin_group: no group %q on this system", s.AdminGroup)
		}
		return 0, fmt.Errorf("server.admin_group: looking up group %q: %w", s.AdminGroup, err)
	}
	gid, err := strconv.Atoi(g.Gid)
	if err != nil || gid < 0 {
		return 0, fmt.Errorf("server.admin_group: group %q has gid %q, not a number", s.AdminGroup, g.Gid)
	}
	return gid, nil
}

func groupProblem(name string) string {
	if name == "" {
		return ""
	}
	if _, err := lookupGID(name); err != nil {
		return err.Error()
	}
	return ""
}

// trustedModule refuses a pkcs11.module that anyone but root or euid
// could change, or whose directories they could (safepath.Module): signd
// loads it into itself, and root's CLI too when no daemon answers. A
// module that does not exist (yet) is left to the loader, which names it.
func trustedModule(p string, euid int) string {
	if !filepath.IsAbs(p) {
		return ""
	}
	if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	pol := safepath.Module(euid)
	pol.Key = "" // reported under pkcs11.module
	if _, err := pol.File(p); err != nil {
		return err.Error()
	}
	return ""
}

func tokenLabel(l string) string {
	switch {
	case l == "":
		return "must not be empty"
	case len(l) > MaxTokenLabelLen:
		return fmt.Sprintf("%q is %d bytes; PKCS#11 token labels are at most %d", l, len(l), MaxTokenLabelLen)
	case strings.HasSuffix(l, " "):
		return fmt.Sprintf("%q must not end with a space (PKCS#11 pads labels with spaces)", l)
	}
	return ""
}

func pinSource(pin Secret, pinFile string) string {
	switch {
	case pin != "" && pinFile != "":
		return "set together with pkcs11.pin_file; set exactly one"
	case pin == "" && pinFile == "":
		return "no PIN: set pkcs11.pin_file or " + EnvName("pkcs11.pin") + " (or pkcs11.pin)"
	}
	return ""
}

// maxPINFile bounds how much of pin_file PINValue reads.
const maxPINFile = 4096

// PINValue returns the token PIN: pkcs11.pin if set, else the contents of
// pkcs11.pin_file with trailing newlines ("\n", "\r\n") removed. Errors name
// the key and the file, never the contents.
func (c *PKCS11Config) PINValue() (Secret, error) {
	if c.PIN != "" {
		return c.PIN, nil
	}
	if c.PINFile == "" {
		return "", errors.New("pkcs11: no PIN configured (pkcs11.pin_file or " + EnvName("pkcs11.pin") + ")")
	}
	f, err := os.Open(c.PINFile)
	if err != nil {
		return "", fmt.Errorf("pkcs11.pin_file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxPINFile+1))
	if err != nil {
		return "", fmt.Errorf("pkcs11.pin_file: %w", err)
	}
	if len(b) > maxPINFile {
		return "", fmt.Errorf("pkcs11.pin_file: %s is larger than %d bytes", c.PINFile, maxPINFile)
	}
	pin := strings.TrimRight(string(b), "\r\n")
	if pin == "" {
		return "", fmt.Errorf("pkcs11.pin_file: %s is empty", c.PINFile)
	}
	return Secret(pin), nil
}

// ---- unknown-key hints ----
