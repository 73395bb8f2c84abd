package reload_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/signd/signd/cmd/signd/reload"
	"github.com/signd/signd/config"
	"github.com/signd/signd/csc/certstatus"
	"github.com/signd/signd/store"
)

// baseConfig names every kind of key: lists (server.trusted_proxies,
// admin.dual_control), admin.roles (GID: the test's own group), the PIN
// (a secret), durations, a rate, an integer.
const baseConfig = `server:
  base_url: https://sign.example.org
  trusted_proxies: [10.0.0.0/8, "2001:db8::/32"]
pkcs11:
  pin: "0123"
log:
  level: info
oauth:
  max_failures: 5
  lockout:
    base: 1m
csc:
  cert_status:
    refresh: 1h
    timeout: 10s
ratelimit:
  token:
    rate: 100
admin:
  roles:
    security_officer: ["GID"]
    administrator: ["GID"]
    auditor: ["GID"]
  dual_control: [credential_remove, tsa_enroll]
  pending_ttl: 24h
`

// reloader is a Reloader of the configuration file path as the daemon
// runs one: Start loaded from the file, the level and the
// certificate-status checker set from it; it keeps the audit entries and
// the log.
type reloader struct {
	*reload.Reloader
	path    string
	entries []*store.AuditEntry
	logs    bytes.Buffer
}

func newReloader(t *testing.T) *reloader {
	t.Helper()
	for _, k := range config.Keys() {
		t.Setenv(k.Env(), "") // empty is unset: the host's SIGND_* stay out
	}
	r := &reloader{path: filepath.Join(t.TempDir(), "signd.yaml")}
	writeConfig(t, r.path, strings.ReplaceAll(baseConfig, "GID", strconv.Itoa(os.Getegid())))
	load := func() (*config.Config, error) {
		return config.Load(config.Options{File: r.path, SearchPaths: []string{}})
	}
	start, err := load()
	if err != nil {
		t.Fatalf("the base configuration: %v", err)
	}
	level := new(slog.LevelVar)
	level.Set(start.Log.SlogLevel())
	cs := start.CSC.CertStatus
	r.Reloader = &reload.Reloader{Load: load, Start: start, Level: level,
		CertStatus: certstatus.New(certstatus.Config{Refresh: cs.Refresh, Timeout: cs.Timeout, OCSPMaxAge: cs.OCSPMaxAge}),
		Logger:     slog.New(slog.NewTextHandler(&r.logs, nil)), Notify: func(string) {},
		Audit: func(e *store.AuditEntry) error { r.entries = append(r.entries, e); return nil },
		Now:   func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }}
	return r
}

func writeConfig(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestReloadAppliesOnlyReloadKeys: a reload puts in force the keys marked
// Reload (log.level, csc.cert_status.*) however the file writes an
// unchanged value, and refuses one that changes any other key, from the
// file or the environment, naming each in the order of the key table,
// auditing the refusal, and changing nothing: not log.level, not the
// certificate-status settings changed with it.
func TestReloadAppliesOnlyReloadKeys(t *testing.T) {
	tests := []struct {
		name string
		// edits are old→new pairs applied to the file.
		edits []string
		env   map[string]string
		// refused is the Reload error, "" for applied.
		refused string
		// level and refresh are the log level and the certificate-status
		// refresh in force after the reload.
		level   slog.Level
		refresh time.Duration
	}{
		{name: "unchanged", level: slog.LevelInfo, refresh: time.Hour},
		{name: "unchanged, written otherwise", edits: []string{
			"refresh: 1h", "refresh: 60m",
			"base: 1m", "base: 60s",
			"pending_ttl: 24h", "pending_ttl: 1440m",
			"rate: 100", "rate: 100.0",
			"dual_control: [credential_remove, tsa_enroll]", "dual_control:\n    - credential_remove\n    - tsa_enroll",
			`  trusted_proxies: [10.0.0.0/8, "2001:db8::/32"]` + "\n", "",
			`  pin: "0123"` + "\n", "",
		}, env: map[string]string{"SIGND_SERVER_TRUSTED_PROXIES": "10.0.0.0/8,2001:db8::/32", "SIGND_PKCS11_PIN": "0123"},
			level: slog.LevelInfo, refresh: time.Hour},
		{name: "log.level and the certificate-status settings", edits: []string{"level: info", "level: debug", "refresh: 1h", "refresh: 5m"},
			level: slog.LevelDebug, refresh: 5 * time.Minute},
		{name: "a start-only key", edits: []string{"level: info", "level: debug", "refresh: 1h", "refresh: 5m", "max_failures: 5", "max_failures: 3"},
			refused: "reload: oauth.max_failures needs a restart; nothing changed", level: slog.LevelInfo, refresh: time.Hour},
		{name: "several, in the table's order", edits: []string{"rate: 100", "rate: 5", "level: info", "level: debug", "max_failures: 5", "max_failures: 3"},
			refused: "reload: oauth.max_failures, ratelimit.token.rate need a restart; nothing changed", level: slog.LevelInfo, refresh: time.Hour},
		{name: "from the environment", edits: []string{"level: info", "level: debug"}, env: map[string]string{"SIGND_RATELIMIT_TOKEN_RATE": "5"},
			refused: "reload: ratelimit.token.rate needs a restart; nothing changed", level: slog.LevelInfo, refresh: time.Hour},
		{name: "the PIN", edits: []string{`pin: "0123"`, `pin: "01234"`},
			refused: "reload: pkcs11.pin needs a restart; nothing changed", level: slog.LevelInfo, refresh: time.Hour},
		{name: "a list", edits: []string{"[10.0.0.0/8, ", "[10.0.0.0/16, "},
			refused: "reload: server.trusted_proxies needs a restart; nothing changed", level: slog.LevelInfo, refresh: time.Hour},
		{name: "dual control", edits: []string{"credential_remove, ", ""},
			refused: "reload: admin.dual_control needs a restart; nothing changed", level: slog.LevelInfo, refresh: time.Hour},
		{name: "a duration", edits: []string{"pending_ttl: 24h", "pending_ttl: 12h"},
			refused: "reload: admin.pending_ttl needs a restart; nothing changed", level: slog.LevelInfo, refresh: time.Hour},
		{name: "turning the certificate-status check off", edits: []string{"  cert_status:\n", "  cert_status:\n    enabled: false\n"},
			refused: "reload: csc.cert_status.enabled needs a restart; nothing changed", level: slog.LevelInfo, refresh: time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newReloader(t)
			text, err := os.ReadFile(r.path)
			if err != nil {
				t.Fatal(err)
			}
			next := string(text)
			for i := 0; i < len(tt.edits); i += 2 {
				if !strings.Contains(next, tt.edits[i]) {
					t.Fatalf("the configuration has no %q", tt.edits[i])
				}
				next = strings.Replace(next, tt.edits[i], tt.edits[i+1], 1)
			}
			writeConfig(t, r.path, next)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}

			err = r.Reload()
			if len(r.entries) != 1 {
				t.Fatalf("%d audit entries, want 1", len(r.entries))
			}
			e := r.entries[0]
			if tt.refused == "" {
				sum := sha256.Sum256([]byte(next))
				if err != nil || e.Outcome != store.AuditOK || e.Fields["sha256"] != hex.EncodeToString(sum[:]) {
					t.Fatalf("Reload: %v, entry %+v; want it applied, the file's digest recorded", err, e)
				}
			} else {
				why := strings.TrimSuffix(strings.TrimPrefix(tt.refused, "reload: "), "; nothing changed")
				if err == nil || err.Error() != tt.refused {
					t.Fatalf("Reload: %v, want %q", err, tt.refused)
				}
				if e.Kind != store.AuditConfigLoaded || e.Outcome != store.AuditRefused || e.Reason != why || e.Fields["sha256"] != "" {
					t.Errorf("entry %+v, want config_loaded refused %q without a digest", e, why)
				}
			}
			if got := r.Level.Level(); got != tt.level {
				t.Errorf("log level %v in force, want %v", got, tt.level)
			}
			// The settings in force are those Reconfigure reports no change
			// of.
			if r.CertStatus.Reconfigure(certstatus.Settings{Refresh: tt.refresh, Timeout: 10 * time.Second}) {
				t.Errorf("the certificate-status refresh in force is not %v", tt.refresh)
			}
			if strings.Contains(fmt.Sprint(err)+e.Reason+r.logs.String(), "01234") {
				t.Error("the PIN was echoed")
			}
		})
	}
}

// TestReloadRefetchesOnlyOnChange: an applied reload fetches every
// credential's certificate status again only when csc.cert_status's
// settings changed, and says so in its log line.
func TestReloadRefetchesOnlyOnChange(t *testing.T) {
	r := newReloader(t)
	if err := r.Reload(); err != nil {
		t.Fatal(err)
	}
	writeConfig(t, r.path, strings.Replace(mustRead(t, r.path), "timeout: 10s", "timeout: 20s", 1))
	if err := r.Reload(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(r.logs.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "cert_status_refetch=false") || !strings.Contains(lines[1], "cert_status_refetch=true") {
		t.Errorf("log of an unchanged reload, then of a new timeout:\n%s", r.logs.String())
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestReloadKeys: the keys a reload applies are the ones the Reloader
// puts in force, and every key that decides who may administer signd is
// read at start only (a name ending in "." stands for every key under
// it), so that a reload's config_loaded entry never records a policy not
// in force.
func TestReloadKeys(t *testing.T) {
	var reloaded []string
	for _, k := range config.Keys() {
		if k.Reload {
			reloaded = append(reloaded, k.Name)
		}
	}
	want := []string{"server.tls.cert_file", "server.tls.key_file", "log.level",
		"csc.cert_status.refresh", "csc.cert_status.timeout", "csc.cert_status.ocsp_max_age",
		"admin.api_cert_file", "admin.api_key_file", "admin.api_client_crl"}
	if !slices.Equal(reloaded, want) {
		t.Errorf("keys marked Reload: %q, want those the Reloader applies, %q", reloaded, want)
	}
	for _, name := range []string{"server.admin_group", "admin.roles.", "admin.dual_control", "admin.pending_ttl",
		"admin.enrollment_ttl", "admin.api_listen", "admin.api_client_ca", "admin.api_roles."} {
		n := 0
		for _, k := range config.Keys() {
			if k.Name == name || strings.HasSuffix(name, ".") && strings.HasPrefix(k.Name, name) {
				n++
				if k.Reload {
					t.Errorf("%s decides who may administer signd and is marked Reload", k.Name)
				}
			}
		}
		if n == 0 {
			t.Errorf("no key %s", name)
		}
	}
}
