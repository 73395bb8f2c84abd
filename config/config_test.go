package config

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/signd/signd/internal/safepath/safepathtest"
	"github.com/spf13/pflag"
)

// isolate blanks every SIGND_* variable (viper treats empty as unset) so the
// host environment cannot leak into a test.
func isolate(t *testing.T) {
	t.Helper()
	for _, k := range Keys() {
		t.Setenv(k.Env(), "")
	}
}

// load runs Load on a testdata fixture ("" for no file) with no search path.
func load(t *testing.T, fixture string, flags *pflag.FlagSet) (*Config, error) {
	t.Helper()
	opts := Options{Flags: flags, SearchPaths: []string{}}
	if fixture != "" {
		opts.File = copyFixture(t, fixture)
	}
	return Load(opts)
}

// loadYAML writes yaml to a file of mode 0600 and loads that file alone;
// it returns the file's path too.
func loadYAML(t *testing.T, yaml string) (string, *Config, error) {
	t.Helper()
	p := writeFile(t, "c.yaml", yaml, 0o600)
	c, err := Load(Options{File: p, SearchPaths: []string{}})
	return p, c, err
}

func mustLoad(t *testing.T, fixture string, flags *pflag.FlagSet) *Config {
	t.Helper()
	c, err := load(t, fixture, flags)
	if err != nil {
		t.Fatalf("Load(%s): %v", fixture, err)
	}
	return c
}

// copyFixture copies testdata/name into a directory of the test's, mode
// 0600, and returns its path. Load refuses a file that group or others
// could write, or one in such a directory, and a checkout made under umask
// 002 has testdata 0775 and its files 0664.
func copyFixture(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return safepathtest.WriteFile(t, filepath.Join(t.TempDir(), name), data, 0o600)
}

// problemsOf returns the *Error inside err, failing the test if there is none.
func problemsOf(t *testing.T, err error) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not a *config.Error", err, err)
	}
	return e
}

// validated is what Validate says of validConfig changed by mutate.
func validated(t *testing.T, mutate func(c *Config)) error {
	t.Helper()
	c := validConfig(t)
	mutate(c)
	return c.Validate()
}

// wantOneProblem checks what Validate said: nothing when key is empty,
// otherwise exactly one problem, at key, with msg in its message.
func wantOneProblem(t *testing.T, err error, key, msg string) {
	t.Helper()
	if key == "" {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	e := problemsOf(t, err)
	if len(e.Problems) != 1 || e.Problems[0].Key != key || !strings.Contains(e.Problems[0].Msg, msg) {
		t.Errorf("got %q, want one problem %s: ...%s...", err, key, msg)
	}
}

func writeFile(t *testing.T, name, content string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil { // umask may have masked bits
		t.Fatal(err)
	}
	return p
}

func TestDefaults(t *testing.T) {
	isolate(t)
	c := mustLoad(t, "minimal.yaml", nil)

	want := Config{
		Server: ServerConfig{
			Listen:          "127.0.0.1:8443",
			BaseURL:         "https://sign.example.org", // trailing slash stripped
			AdminSocket:     "./var/signd.sock",
			BodyLimitBytes:  1048576,
			ShutdownTimeout: 30 * time.Second,
			MetricsListen:   "127.0.0.1:9464",
			ClientIPHeader:  HeaderXForwardedFor,
		},
		Store: StoreConfig{Backend: BackendBolt, Path: "./var/signd.db", OpenTimeout: 5 * time.Second, Etcd: defaultEtcd()},
		PKCS11: PKCS11Config{
			Module:         "/usr/lib/softhsm/libsofthsm2.so",
			TokenLabel:     "signd",
			PIN:            "0123",
			AcquireTimeout: 2 * time.Second,
			Profile:        "auto",
		},
		Log:   LogConfig{Level: "info", Format: "json"},
		OAuth: defaultOAuth(), CSC: defaultCSC(), OIDC: defaultOIDC(), RateLimit: defaultRateLimit(),
		Admin: defaultAdmin(),
		Audit: defaultAudit(),
	}
	want.source, want.digest = c.source, fileSHA256(t, "testdata/minimal.yaml")
	if !reflect.DeepEqual(*c, want) {
		t.Errorf("defaults:\n got %#v\nwant %#v", *c, want)
	}
	if !filepath.IsAbs(c.Source()) || filepath.Base(c.Source()) != "minimal.yaml" {
		t.Errorf("Source() = %q, want the absolute path of the copy of minimal.yaml", c.Source())
	}
	if c.SHA256() != want.digest {
		t.Errorf("SHA256() = %q, want the file's %q", c.SHA256(), want.digest)
	}
	if c.PKCS11.PIN.Reveal() != "0123" {
		t.Errorf("quoted PIN lost its leading zero: %q", c.PKCS11.PIN.Reveal())
	}
}

func TestEveryKeyFromFile(t *testing.T) {
	isolate(t)
	c := mustLoad(t, "full.yaml", nil)
	want := Config{
		Server: ServerConfig{
			Listen:          "[::1]:9443",
			BaseURL:         "http://127.0.0.1:9443/signd",
			AdminSocket:     "/run/signd/admin.sock",
			AdminGroup:      "root",
			BodyLimitBytes:  2 << 20,
			ShutdownTimeout: time.Minute,
			MetricsListen:   "[::1]:9465",
			TrustedProxies:  []string{"10.0.0.0/8", "192.0.2.7", "2001:db8::/32"},
			ClientIPHeader:  HeaderXRealIP,
		},
		Store: StoreConfig{Backend: BackendBolt, Path: "/var/lib/signd/signd.db", OpenTimeout: 250 * time.Millisecond, VerifyOnOpen: true, Etcd: defaultEtcd()},
		PKCS11: PKCS11Config{
			Module:         "/usr/lib/x86_64-linux-gnu/softhsm/libsofthsm2.so",
			TokenLabel:     "signd-prod",
			PIN:            "987654",
			MaxSessions:    16,
			AcquireTimeout: 500 * time.Millisecond,
			Profile:        "token-fixed-usage",

			RequireImmutableKeys: true,
		},
		Log:   LogConfig{Level: "debug", Format: "text"},
		OAuth: defaultOAuth(), CSC: defaultCSC(), OIDC: defaultOIDC(),
		RateLimit: RateLimitConfig{
			Timestamp: LimitConfig{Rate: 2.5, Burst: 5}, AuthLogin: LimitConfig{Rate: 0.2, Burst: 10},
			Token: LimitConfig{Rate: 0, Burst: 1}, Forms: LimitConfig{Rate: 3, Burst: 30}, MaxKeys: 500,
		},
		Admin: AdminConfig{
			Roles:             RolesConfig{SecurityOfficer: []string{"root"}, Administrator: []string{"root"}, Auditor: []string{"0"}},
			DualControlConfig: DualControlConfig{DualControl: []string{"credential_remove", "tsa_enroll", "oidc_keys_rotate"}, PendingTTL: 8 * time.Hour},
			EnrollmentConfig:  EnrollmentConfig{EnrollmentTTL: 2 * time.Hour},
		},
		Audit: AuditConfig{KeyLabel: "audit-prod", CheckpointOrigin: "sign.example.org/audit",
			CheckpointDir: "/var/lib/signd/checkpoints", CheckpointInterval: time.Hour},
		source: c.source, digest: fileSHA256(t, "testdata/full.yaml"),
	}
	want.CSC.MaxHashesPerRequest = 250
	want.CSC.Timestamp = TimestampConfig{Enabled: true, Policy: "1.3.6.1.4.1.99999.1.2", Accuracy: 2 * time.Second, Label: "tsa-prod"}
	want.CSC.CertStatus = CertStatusConfig{Enabled: false, Refresh: 15 * time.Minute, Timeout: 5 * time.Second, OCSPMaxAge: 30 * time.Minute}
	if !reflect.DeepEqual(*c, want) {
		t.Errorf("full:\n got %#v\nwant %#v", *c, want)
	}
}

// The table, the struct tags and the documented names must agree.
func TestKeysTableMatchesStruct(t *testing.T) {
	var names []string
	for _, k := range Keys() {
		names = append(names, k.Name)
	}
	var fields []string
	for _, s := range (&Config{}).Settings() {
		fields = append(fields, s.Key)
	}
	if !slices.Equal(names, fields) {
		t.Errorf("Keys() and Config fields differ:\nkeys   %v\nfields %v", names, fields)
	}
	for _, k := range Keys() {
		if k.Usage == "" {
			t.Errorf("%s has no usage text", k.Name)
		}
	}
	wantEnv := map[string]string{
		"server.base_url":      "SIGND_SERVER_BASE_URL",
		"pkcs11.pin":           "SIGND_PKCS11_PIN",
		"server.tls.cert_file": "SIGND_SERVER_TLS_CERT_FILE",
	}
	for _, k := range Keys() {
		if w, ok := wantEnv[k.Name]; ok && k.Env() != w {
			t.Errorf("%s.Env() = %s, want %s", k.Name, k.Env(), w)
		}
	}
}

func TestSettings(t *testing.T) {
	isolate(t)
	c := mustLoad(t, "minimal.yaml", nil)
	got := map[string]any{}
	for _, s := range c.Settings() {
		got[s.Key] = s.Value
	}
	if got["server.listen"] != "127.0.0.1:8443" || got["pkcs11.max_sessions"] != 0 ||
		got["store.open_timeout"] != 5*time.Second || got["pkcs11.pin"] != Secret("0123") {
		t.Errorf("Settings() = %v", got)
	}
}

func TestEveryBadValueReported(t *testing.T) {
	isolate(t)
	_, err := load(t, "bad_values.yaml", nil)
	e := problemsOf(t, err)
	wantKeys := []string{
		"server.listen", "server.base_url", "server.admin_socket", "server.admin_group",
		"server.body_limit_bytes", "server.shutdown_timeout",
		"server.metrics_listen", "server.trusted_proxies",
		"store.path", "store.open_timeout",
		"pkcs11.module", "pkcs11.token_label", "pkcs11.pin", "pkcs11.pin_file",
		"pkcs11.max_sessions", "pkcs11.acquire_timeout", "pkcs11.profile",
		"log.level", "log.format",
		"csc.max_hashes_per_request", "csc.cert_status.refresh", "csc.cert_status.timeout",
		"csc.cert_status.ocsp_max_age",
		"ratelimit.timestamp.rate", "ratelimit.auth_login.burst", "ratelimit.token.rate", "ratelimit.max_keys",
	}
	msg := err.Error()
	for _, k := range wantKeys {
		if !strings.Contains(msg, k+": ") {
			t.Errorf("error does not report %s:\n%s", k, msg)
		}
	}
	if got := e.Keys(); !slices.Equal(got, wantKeys) {
		t.Errorf("reported keys\n got %v\nwant %v", got, wantKeys)
	}
	if lines := strings.Split(msg, "\n"); len(lines) != len(wantKeys) {
		t.Errorf("want one line per bad key (%d), got %d:\n%s", len(wantKeys), len(lines), msg)
	}
	for _, frag := range []string{
		`server.listen: "nope" is not host:port`,
		`server.base_url: "ftp://x" must be an absolute http(s) URL`,
		`pkcs11.module: "libsofthsm2.so" is not an absolute path`,
		`pkcs11.max_sessions: must be between 0 and 1024, got -1`,
		`log.level: "loud" is not one of debug, info, warn, error`,
		`pkcs11.pin: set together with pkcs11.pin_file`,
		`server.metrics_listen: "127.0.0.1" is not host:port; empty turns the metrics listener off`,
		`server.trusted_proxies: entry 2: "10.0.0.0/33" is not a CIDR (such as 10.0.0.0/8) or an IP address; entry 3: "proxy.example.org" is not a CIDR`,
		`csc.max_hashes_per_request: must be between 1 and 10000, got 0`,
		`csc.cert_status.refresh: 0s is not between 1s and 24h0m0s`,
		`csc.cert_status.timeout: 5m0s is not between 1s and 1m0s`,
		`csc.cert_status.ocsp_max_age: 720h0m0s is not between 1m0s and 24h0m0s`,
		`server.admin_group: no group "no-such-group-signd" on this system`,
		`ratelimit.timestamp.rate: -1 is not 0 (no limit) or between 0.001 and 1e+06 requests a second`,
		`ratelimit.auth_login.burst: must be between 1 and 1000000, got 0`,
		`ratelimit.token.rate: 1e+12 is not 0 (no limit) or between`,
		`ratelimit.max_keys: must be between 1 and 1000000, got 99999999`,
	} {
		if !strings.Contains(msg, frag) {
			t.Errorf("error lacks %q:\n%s", frag, msg)
		}
	}
	if strings.Contains(msg, "1234") {
		t.Errorf("error leaks the PIN:\n%s", msg)
	}
}

func TestUnknownKeys(t *testing.T) {
	isolate(t)
	_, err := load(t, "unknown_keys.yaml", nil)
	e := problemsOf(t, err)
	msg := err.Error()
	for _, want := range []string{
		`unknown key "server.lisen" (did you mean "server.listen"?)`,
		`unknown key "pkcs11.pin_fiel" (did you mean "pkcs11.pin_file"?)`,
		`unknown key "oauht"`,
		`unknown key "Log" (did you mean "log"? keys are lower case)`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	for _, p := range e.Problems {
		if !p.Unknown {
			t.Errorf("unexpected problem %v", p)
		}
	}
	// An unknown section is one problem, not one per key under it.
	if strings.Contains(msg, "code_ttl") {
		t.Errorf("unknown section reported key by key:\n%s", msg)
	}
}

// Unknown keys and bad values come in the same report.
func TestUnknownAndBadTogether(t *testing.T) {
	isolate(t)
	p, _, err := loadYAML(t, "server:\n  base_url: ftp://x\n  lisen: x\npkcs11:\n  pin: \"1\"\n")
	e := problemsOf(t, err)
	if got, want := e.Keys(), []string{"server.lisen", "server.base_url"}; !slices.Equal(got, want) {
		t.Errorf("keys = %v, want %v\n%v", got, want, err)
	}
	if e.Source != p {
		t.Errorf("Source = %q, want %q", e.Source, p)
	}
}

func TestBadTypes(t *testing.T) {
	isolate(t)
	_, err := load(t, "bad_types.yaml", nil)
	problemsOf(t, err)
	msg := err.Error()
	for _, want := range []string{
		"server.listen: must be a string, not a number",
		`server.shutdown_timeout: must be a duration with a unit, e.g. "30s", not a number`,
		`server.body_limit_bytes: "1MiB" is not an integer`,
		"server.tls: must be a mapping of keys",
		"pkcs11.pin: must be a string, not a number (quote the value in YAML)",
		"pkcs11.max_sessions: 1.5 is not an integer",
		"pkcs11.acquire_timeout: must be a duration with a unit",
		"pkcs11.profile: must be a string, not a list",
		`pkcs11.require_immutable_keys: "maybe" is not a boolean (true or false)`,
		"log.level: must be a single value, not a mapping",
		"server.trusted_proxies: must be a list of strings, not a number",
		`store.verify_on_open: "yes" is not a boolean (true or false)`,
		`csc.cert_status.enabled: "on" is not a boolean (true or false)`,
		`csc.cert_status.ocsp_max_age: must be a duration with a unit`,
		`ratelimit.timestamp.rate: "ten" is not a number`,
		"ratelimit.forms.rate: must be a number, not a list",
		"ratelimit.token.burst: 2.5 is not an integer",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	// YAML reads 0123 as 83: neither may show up.
	if strings.Contains(msg, "0123") || strings.Contains(msg, "83") {
		t.Errorf("error echoes the PIN:\n%s", msg)
	}
}

// A list element of the wrong type is reported once, under the list's key.
func TestBadListElement(t *testing.T) {
	isolate(t)
	_, _, err := loadYAML(t, "server:\n  base_url: https://x.org\n  trusted_proxies: [10.0.0.0/8, 443]\npkcs11:\n  pin: \"1\"\n")
	e := problemsOf(t, err)
	want := `server.trusted_proxies: entry 2: must be a string, not a number (quote the value in YAML)`
	if len(e.Problems) != 1 || err.Error() != want {
		t.Errorf("err = %q, want %q", err, want)
	}
}

// An empty metrics_listen turns the listener off; an empty list trusts no
// proxy.
func TestEmptyNetworkKeys(t *testing.T) {
	isolate(t)
	_, c, err := loadYAML(t, "server:\n  base_url: https://x.org\n  metrics_listen: \"\"\n  trusted_proxies: []\npkcs11:\n  pin: \"1\"\n")
	if err != nil {
		t.Fatal(err)
	}
	if c.Server.MetricsListen != "" || len(c.Server.TrustedProxies) != 0 || len(c.Server.TrustedProxyNets()) != 0 {
		t.Errorf("metrics_listen %q, trusted_proxies %v", c.Server.MetricsListen, c.Server.TrustedProxies)
	}
}

func TestEmptySectionsKeepDefaults(t *testing.T) {
	isolate(t)
	c := mustLoad(t, "empty_sections.yaml", nil)
	if c.Server.Listen != "127.0.0.1:8443" || c.Store.Path != "./var/signd.db" || c.Log.Level != "info" {
		t.Errorf("empty sections lost defaults: %+v", c)
	}
}

func newFlags(t *testing.T, args ...string) *pflag.FlagSet {
	t.Helper()
	fs := pflag.NewFlagSet("signd", pflag.ContinueOnError)
	BindFlags(fs)
	fs.String("config", "", "registered by cmd, ignored by config")
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return fs
}

func TestPrecedence(t *testing.T) {
	tests := []struct {
		name      string
		env       map[string]string
		args      []string
		listen    string
		label     string
		level     string
		maxSess   int
		baseURL   string
		adminSock string
	}{
		{
			name:   "file over default",
			listen: "127.0.0.1:1111", label: "from-file", level: "warn",
			baseURL: "https://sign.example.org", adminSock: "./var/signd.sock",
		},
		{
			name:   "env over file",
			env:    map[string]string{"SIGND_SERVER_LISTEN": "127.0.0.1:2222", "SIGND_PKCS11_TOKEN_LABEL": "from-env", "SIGND_PKCS11_MAX_SESSIONS": "8"},
			listen: "127.0.0.1:2222", label: "from-env", level: "warn", maxSess: 8,
			baseURL: "https://sign.example.org", adminSock: "./var/signd.sock",
		},
		{
			name:   "flag over env",
			env:    map[string]string{"SIGND_SERVER_LISTEN": "127.0.0.1:2222", "SIGND_PKCS11_TOKEN_LABEL": "from-env", "SIGND_PKCS11_MAX_SESSIONS": "8"},
			args:   []string{"--listen", "127.0.0.1:3333", "--token-label=from-flag", "--max-sessions=4", "--log-level", "error"},
			listen: "127.0.0.1:3333", label: "from-flag", level: "error", maxSess: 4,
			baseURL: "https://sign.example.org", adminSock: "./var/signd.sock",
		},
		{
			name:   "unset flags do not override",
			env:    map[string]string{"SIGND_SERVER_LISTEN": "127.0.0.1:2222"},
			args:   []string{"--admin-socket", "/run/signd.sock"},
			listen: "127.0.0.1:2222", label: "from-file", level: "warn",
			baseURL: "https://sign.example.org", adminSock: "/run/signd.sock",
		},
		{
			name:   "env over default, flag over file",
			env:    map[string]string{"SIGND_SERVER_ADMIN_SOCKET": "/env.sock"},
			args:   []string{"--base-url", "https://flag.example.org/"},
			listen: "127.0.0.1:1111", label: "from-file", level: "warn",
			baseURL: "https://flag.example.org", adminSock: "/env.sock",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			isolate(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			c := mustLoad(t, "override.yaml", newFlags(t, tt.args...))
			got := []any{c.Server.Listen, c.PKCS11.TokenLabel, c.Log.Level, c.PKCS11.MaxSessions, c.Server.BaseURL, c.Server.AdminSocket}
			want := []any{tt.listen, tt.label, tt.level, tt.maxSess, tt.baseURL, tt.adminSock}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got  %v\nwant %v", got, want)
			}
		})
	}
}

func TestNoFileRunsOnDefaultsEnvAndFlags(t *testing.T) {
	isolate(t)
	t.Setenv("SIGND_SERVER_BASE_URL", "http://localhost:8443")
	t.Setenv("SIGND_PKCS11_PIN", "4321")
	dir := t.TempDir()
	c, err := Load(Options{
		SearchPaths: []string{filepath.Join(dir, "signd.yaml"), filepath.Join(dir, "etc.yaml")},
		Flags:       newFlags(t, "--store", "/tmp/x.db"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if c.Source() != "" || c.SHA256() != "" || c.Server.BaseURL != "http://localhost:8443" || c.Store.Path != "/tmp/x.db" || c.PKCS11.PIN.Reveal() != "4321" {
		t.Errorf("got %+v (source %q)", c, c.Source())
	}
}

func TestSearchPathOrder(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	second := filepath.Join(dir, "second.yaml")
	data, err := os.ReadFile("testdata/override.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(second, data, 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(Options{SearchPaths: []string{filepath.Join(dir, "first.yaml"), second, copyFixture(t, "minimal.yaml")}})
	if err != nil {
		t.Fatal(err)
	}
	if c.Source() != second || c.PKCS11.TokenLabel != "from-file" {
		t.Errorf("used %q (label %q), want %q", c.Source(), c.PKCS11.TokenLabel, second)
	}
}

func TestFileErrors(t *testing.T) {
	isolate(t)
	tests := []struct {
		name, file string
		want       []string
		notExist   bool
	}{
		{name: "explicit missing", file: "testdata/does-not-exist.yaml", want: []string{"does-not-exist.yaml"}, notExist: true},
		{name: "malformed", file: copyFixture(t, "malformed.yaml"), want: []string{"malformed.yaml", "line 3"}},
		{name: "duplicate key", file: copyFixture(t, "duplicate.yaml"), want: []string{"duplicate.yaml", `mapping key "listen" already defined at line 3`}},
		{name: "directory", file: safepathtest.Mkdir(t, filepath.Join(t.TempDir(), "testdata"), 0o700), want: []string{"testdata", "is not a regular file"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load(Options{File: tt.file, SearchPaths: []string{}})
			if err == nil {
				t.Fatalf("Load succeeded: %+v", c)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if tt.notExist && !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("error %v is not fs.ErrNotExist", err)
			}
		})
	}
}

func TestPINSources(t *testing.T) {
	tests := []struct {
		name    string
		env     string // SIGND_PKCS11_PIN
		file    *string
		mode    os.FileMode
		want    string
		wantErr string // in Load's error
	}{
		{name: "env", env: "0042", want: "0042"},
		{name: "file trimmed", file: ptr("246810\n"), mode: 0o600, want: "246810"},
		{name: "file crlf trimmed", file: ptr("13579\r\n"), mode: 0o400, want: "13579"},
		{name: "file keeps inner spaces", file: ptr(" a b \n\n"), mode: 0o600, want: " a b "},
		{name: "file world readable", file: ptr("1234\n"), mode: 0o644, wantErr: "pkcs11.pin_file: "},
		{name: "file group readable", file: ptr("1234\n"), mode: 0o640, wantErr: "has mode 0640"},
		{name: "env and file", env: "1", file: ptr("2"), mode: 0o600, wantErr: "pkcs11.pin: set together with pkcs11.pin_file"},
		{name: "neither", wantErr: "pkcs11.pin: no PIN: set pkcs11.pin_file or SIGND_PKCS11_PIN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			isolate(t)
			t.Setenv("SIGND_PKCS11_PIN", tt.env)
			var args []string
			if tt.file != nil {
				args = append(args, "--pkcs11-pin-file", writeFile(t, "pin", *tt.file, tt.mode))
			}
			c, err := load(t, "no_pin.yaml", newFlags(t, args...))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "1234") {
					t.Errorf("error leaks the PIN: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			pin, err := c.PKCS11.PINValue()
			if err != nil {
				t.Fatal(err)
			}
			if pin.Reveal() != tt.want {
				t.Errorf("PINValue() = %q, want %q", pin.Reveal(), tt.want)
			}
		})
	}
}

func TestPINValueErrors(t *testing.T) {
	empty := writeFile(t, "empty", "\n", 0o600)
	big := writeFile(t, "big", strings.Repeat("9", maxPINFile+1), 0o600)
	for _, tt := range []struct {
		name string
		cfg  PKCS11Config
		want string
	}{
		{"none", PKCS11Config{}, "no PIN configured"},
		{"missing", PKCS11Config{PINFile: "/nonexistent/pin"}, "/nonexistent/pin"},
		{"empty", PKCS11Config{PINFile: empty}, "is empty"},
		{"too big", PKCS11Config{PINFile: big}, "larger than"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.cfg.PINValue()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
			if err != nil && strings.Contains(err.Error(), "9999") {
				t.Errorf("error leaks file contents: %v", err)
			}
		})
	}
}

func TestBindFlags(t *testing.T) {
	fs := newFlags(t)
	for _, name := range []string{"listen", "base-url", "admin-socket", "store", "pkcs11-module", "token-label", "pkcs11-pin-file", "max-sessions", "log-level"} {
		f := fs.Lookup(name)
		if f == nil {
			t.Errorf("flag --%s not registered", name)
			continue
		}
		if !strings.Contains(f.Usage, "SIGND_") {
			t.Errorf("--%s usage does not name its env variable: %q", name, f.Usage)
		}
	}
	fs.VisitAll(func(f *pflag.Flag) {
		if strings.Contains(f.Name, "pin") && f.Name != "pkcs11-pin-file" {
			t.Errorf("flag --%s would put the PIN on argv", f.Name)
		}
	})
	if got := fs.Lookup("listen").DefValue; got != "127.0.0.1:8443" {
		t.Errorf("--listen default = %q", got)
	}
}

func ptr[T any](v T) *T { return &v }

func TestEnvValues(t *testing.T) {
	tests := []struct {
		name, env, value string
		check            func(c *Config) bool
		wantErr          string
	}{
		{name: "duration", env: "SIGND_STORE_OPEN_TIMEOUT", value: "1m30s",
			check: func(c *Config) bool { return c.Store.OpenTimeout == 90*time.Second }},
		{name: "int64", env: "SIGND_SERVER_BODY_LIMIT_BYTES", value: "4096",
			check: func(c *Config) bool { return c.Server.BodyLimitBytes == 4096 }},
		{name: "nested", env: "SIGND_SERVER_TLS_CERT_FILE", value: "testdata/minimal.yaml",
			wantErr: "server.tls.key_file: required when server.tls.cert_file is set"},
		{name: "bad int", env: "SIGND_PKCS11_MAX_SESSIONS", value: "eight",
			wantErr: `pkcs11.max_sessions: "eight" is not an integer`},
		{name: "bare number duration", env: "SIGND_SERVER_SHUTDOWN_TIMEOUT", value: "30",
			wantErr: `server.shutdown_timeout: "30" is not a duration (use a unit, e.g. "30s")`},
		{name: "bool", env: "SIGND_STORE_VERIFY_ON_OPEN", value: "true",
			check: func(c *Config) bool { return c.Store.VerifyOnOpen }},
		{name: "bad bool", env: "SIGND_STORE_VERIFY_ON_OPEN", value: "1",
			wantErr: `store.verify_on_open: "1" is not a boolean (true or false)`},
		{name: "etcd cache off", env: "SIGND_STORE_ETCD_CACHE", value: "false",
			check: func(c *Config) bool { return !c.Store.Etcd.Cache }},
		{name: "etcd cache malformed", env: "SIGND_STORE_ETCD_CACHE", value: "off",
			wantErr: `store.etcd.cache: "off" is not a boolean (true or false)`},
		{name: "etcd cache empty", env: "SIGND_STORE_ETCD_CACHE", value: "",
			check: func(c *Config) bool { return c.Store.Etcd.Cache }},
		{name: "bad value", env: "SIGND_LOG_FORMAT", value: "yaml",
			wantErr: `log.format: "yaml" is not one of json, text`},
		{name: "list", env: "SIGND_SERVER_TRUSTED_PROXIES", value: " 10.0.0.0/8, 192.0.2.7 ,,fd00::/8",
			check: func(c *Config) bool {
				return slices.Equal(c.Server.TrustedProxies, []string{"10.0.0.0/8", "192.0.2.7", "fd00::/8"})
			}},
		{name: "bad list entry", env: "SIGND_SERVER_TRUSTED_PROXIES", value: "10.0.0.0/8,10.1.2.3/16",
			wantErr: `server.trusted_proxies: entry 2: "10.1.2.3/16" has bits set past the prefix length (did you mean 10.1.0.0/16?)`},
		{name: "metrics on the API port", env: "SIGND_SERVER_METRICS_LISTEN", value: ":8443",
			wantErr: `server.metrics_listen: ":8443" uses the port of server.listen (127.0.0.1:8443)`},
		{name: "hash cap", env: "SIGND_CSC_MAX_HASHES_PER_REQUEST", value: "10001",
			wantErr: `csc.max_hashes_per_request: must be between 1 and 10000, got 10001`},
		{name: "sweep batch", env: "SIGND_OAUTH_SWEEP_BATCH", value: "500",
			check: func(c *Config) bool { return c.OAuth.SweepBatch == 500 }},
		{name: "sweep batch zero", env: "SIGND_OAUTH_SWEEP_BATCH", value: "0",
			wantErr: `oauth.sweep_batch: must be between 1 and 10000, got 0`},
		{name: "sweep batch too large", env: "SIGND_OAUTH_SWEEP_BATCH", value: "10001",
			wantErr: `oauth.sweep_batch: must be between 1 and 10000, got 10001`},
		{name: "sweep batch not a number", env: "SIGND_OAUTH_SWEEP_BATCH", value: "many",
			wantErr: `oauth.sweep_batch`},
		{name: "lockout defaults", env: "SIGND_OAUTH_SWEEP_BATCH", value: "32",
			check: func(c *Config) bool {
				return c.OAuth.Lockout == LockoutConfig{Base: time.Minute, Max: time.Hour, PermanentAfter: 0}
			}},
		{name: "lockout base", env: "SIGND_OAUTH_LOCKOUT_BASE", value: "30s",
			check: func(c *Config) bool { return c.OAuth.Lockout.Base == 30*time.Second }},
		{name: "lockout base bare number", env: "SIGND_OAUTH_LOCKOUT_BASE", value: "60",
			wantErr: `oauth.lockout.base: "60" is not a duration (use a unit, e.g. "30s")`},
		{name: "etcd health timeout", env: "SIGND_STORE_ETCD_HEALTH_TIMEOUT", value: "250ms",
			check: func(c *Config) bool { return c.Store.Etcd.HealthTimeout == 250*time.Millisecond }},
		{name: "etcd health timeout unset", env: "SIGND_STORE_ETCD_PREFIX", value: "/x/",
			check: func(c *Config) bool { return c.Store.Etcd.HealthTimeout == time.Second }},
		{name: "etcd health timeout unset, shorter request timeout", env: "SIGND_STORE_ETCD_REQUEST_TIMEOUT", value: "400ms",
			check: func(c *Config) bool { return c.Store.Etcd.HealthTimeout == 400*time.Millisecond }},
		{name: "etcd health timeout 0", env: "SIGND_STORE_ETCD_HEALTH_TIMEOUT", value: "0s",
			check: func(c *Config) bool { return c.Store.Etcd.HealthTimeout == time.Second }},
		{name: "etcd health timeout malformed", env: "SIGND_STORE_ETCD_HEALTH_TIMEOUT", value: "soon",
			wantErr: `store.etcd.health_timeout: "soon" is not a duration`},
		{name: "etcd health timeout bare number", env: "SIGND_STORE_ETCD_HEALTH_TIMEOUT", value: "1",
			wantErr: `store.etcd.health_timeout: "1" is not a duration (use a unit, e.g. "30s")`},
		{name: "lockout max malformed", env: "SIGND_OAUTH_LOCKOUT_MAX", value: "an hour",
			wantErr: `oauth.lockout.max: "an hour" is not a duration`},
		{name: "lockout max below base", env: "SIGND_OAUTH_LOCKOUT_MAX", value: "30s",
			wantErr: `oauth.lockout.max: 30s is shorter than oauth.lockout.base (1m0s)`},
		{name: "lockout permanent after", env: "SIGND_OAUTH_LOCKOUT_PERMANENT_AFTER", value: "3",
			check: func(c *Config) bool { return c.OAuth.Lockout.PermanentAfter == 3 }},
		{name: "lockout permanent after not a number", env: "SIGND_OAUTH_LOCKOUT_PERMANENT_AFTER", value: "never",
			wantErr: `oauth.lockout.permanent_after: "never" is not an integer`},
		{name: "rate", env: "SIGND_RATELIMIT_FORMS_RATE", value: "0.25",
			check: func(c *Config) bool { return c.RateLimit.Forms.Rate == 0.25 }},
		{name: "rate off", env: "SIGND_RATELIMIT_TOKEN_RATE", value: "0",
			check: func(c *Config) bool { return c.RateLimit.Token.Rate == 0 }},
		{name: "rate not a number", env: "SIGND_RATELIMIT_TOKEN_RATE", value: "fast",
			wantErr: `ratelimit.token.rate: "fast" is not a number`},
		{name: "rate NaN", env: "SIGND_RATELIMIT_TOKEN_RATE", value: "NaN",
			wantErr: `ratelimit.token.rate: "NaN" is not a number`},
		{name: "rate infinite", env: "SIGND_RATELIMIT_TOKEN_RATE", value: "+Inf",
			wantErr: `ratelimit.token.rate: "+Inf" is not a number`},
		{name: "rate with a unit", env: "SIGND_RATELIMIT_TOKEN_RATE", value: "10/s",
			wantErr: `ratelimit.token.rate: "10/s" is not a number`},
		{name: "burst", env: "SIGND_RATELIMIT_AUTH_LOGIN_BURST", value: "7",
			check: func(c *Config) bool { return c.RateLimit.AuthLogin.Burst == 7 }},
		{name: "burst negative", env: "SIGND_RATELIMIT_AUTH_LOGIN_BURST", value: "-7",
			wantErr: `ratelimit.auth_login.burst: must be between 1 and 1000000, got -7`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			isolate(t)
			t.Setenv(tt.env, tt.value)
			c, err := load(t, "minimal.yaml", nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(c) {
				t.Errorf("%s=%s not applied: %+v", tt.env, tt.value, c)
			}
		})
	}
}

// The working directory is not searched: a signd.yaml planted where root
// runs the CLI (/tmp, the store's directory) is never read; --config names
// it.
func TestDefaultSearchPathsSkipWorkingDir(t *testing.T) {
	isolate(t)
	t.Setenv("SIGND_SERVER_BASE_URL", "https://defaults.example.org")
	t.Setenv("SIGND_PKCS11_PIN", "1")
	dir := t.TempDir()
	data, err := os.ReadFile("testdata/override.yaml")
	if err != nil {
		t.Fatal(err)
	}
	planted := filepath.Join(dir, "signd.yaml")
	if err := os.WriteFile(planted, data, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	for _, p := range DefaultSearchPaths() {
		if !filepath.IsAbs(p) {
			t.Errorf("DefaultSearchPaths() holds the relative %q", p)
		}
	}
	tests := []struct {
		name   string
		file   string
		source string // "" = not the planted file
	}{
		{"signd.yaml in the working directory, no --config", "", ""},
		{"--config signd.yaml", "signd.yaml", planted},
		{"--config ./signd.yaml", "./signd.yaml", planted},
		{"--config with the absolute path", planted, planted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load(Options{File: tt.file})
			if tt.source == "" {
				// The real search: an /etc/signd/signd.yaml on this machine
				// (a package test's) may be read, or refused; never ours.
				if err != nil {
					if strings.Contains(err.Error(), planted) {
						t.Fatalf("judged the working directory's %s: %v", planted, err)
					}
					return
				}
				if c.Source() == planted || c.Server.Listen == "127.0.0.1:1111" {
					t.Fatalf("read the working directory's %s (Source %q, listen %s)", planted, c.Source(), c.Server.Listen)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Source() != tt.source || c.Server.Listen != "127.0.0.1:1111" {
				t.Errorf("Source() = %q, listen %s; want %q, 127.0.0.1:1111", c.Source(), c.Server.Listen, tt.source)
			}
		})
	}
}

func TestSearchPathUnreadableDirIsAnError(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads everything")
	}
	isolate(t)
	dir := t.TempDir()
	locked := filepath.Join(dir, "locked")
	if err := os.Mkdir(locked, 0o000); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(locked, 0o700) })
	_, err := Load(Options{SearchPaths: []string{filepath.Join(locked, "signd.yaml")}})
	if err == nil || !strings.Contains(err.Error(), "locked") {
		t.Errorf("err = %v, want a permission error naming the path", err)
	}
}

func TestSearchPathThroughAFileIsSkipped(t *testing.T) {
	isolate(t)
	t.Setenv("SIGND_SERVER_BASE_URL", "https://sign.example.org")
	t.Setenv("SIGND_PKCS11_PIN", "1")
	c, err := Load(Options{SearchPaths: []string{"testdata/minimal.yaml/signd.yaml"}})
	if err != nil {
		t.Fatal(err)
	}
	if c.Source() != "" {
		t.Errorf("Source() = %q", c.Source())
	}
}

func TestEtcdFromFile(t *testing.T) {
	isolate(t)
	c := mustLoad(t, "etcd.yaml", nil)
	want := StoreConfig{
		Backend: BackendEtcd, Path: "./var/signd.db", OpenTimeout: 5 * time.Second,
		Etcd: EtcdConfig{
			Endpoints: []string{"http://127.0.0.1:2379", "http://[::1]:2379"}, Prefix: "/signd-prod/",
			DialTimeout: 2 * time.Second, RequestTimeout: 750 * time.Millisecond, HealthTimeout: 500 * time.Millisecond, Node: "signd-1", Cache: false,
		},
	}
	if !reflect.DeepEqual(c.Store, want) {
		t.Errorf("store:\n got %#v\nwant %#v", c.Store, want)
	}
}

// store.etcd.node defaults to the host name, sanitized; a host name that
// gives none leaves the key required; a name given wins; the key is read
// once from the file (a duplicate is an error of the file).
func TestEtcdNode(t *testing.T) {
	isolate(t)
	const yaml = "server:\n  base_url: https://x.org\npkcs11:\n  pin: \"1\"\nstore:\n  backend: etcd\n  etcd:\n    endpoints: [http://127.0.0.1:2379]\n"
	p := writeFile(t, "c.yaml", yaml, 0o600)
	host := func(h string, err error) func() (string, error) { return func() (string, error) { return h, err } }
	c, err := Load(Options{File: p, SearchPaths: []string{}, Hostname: host("Signd-2.Example.ORG", nil)})
	if err != nil || c.Store.Etcd.Node != "signd-2.example.org" {
		t.Fatalf("from the host name: %+v, %v", c, err)
	}
	for _, h := range []string{"---", ""} {
		_, err = Load(Options{File: p, SearchPaths: []string{}, Hostname: host(h, nil)})
		if err == nil || !strings.Contains(err.Error(), "store.etcd.node: required") {
			t.Errorf("host name %q: %v, want store.etcd.node required", h, err)
		}
	}
	_, err = Load(Options{File: p, SearchPaths: []string{}, Hostname: host("", errors.New("no uts namespace"))})
	if err == nil || !strings.Contains(err.Error(), "store.etcd.node: required") {
		t.Errorf("no host name: %v, want store.etcd.node required", err)
	}
	given := writeFile(t, "given.yaml", yaml+"    node: n7\n", 0o600)
	if c, err := Load(Options{File: given, SearchPaths: []string{}, Hostname: host("other", nil)}); err != nil || c.Store.Etcd.Node != "n7" {
		t.Errorf("given: %+v, %v", c, err)
	}
	twice := writeFile(t, "twice.yaml", yaml+"    node: n1\n    node: n2\n", 0o600)
	if _, err := Load(Options{File: twice, SearchPaths: []string{}}); err == nil || !strings.Contains(err.Error(), `mapping key "node" already defined`) {
		t.Errorf("node twice: %v", err)
	}
	t.Setenv("SIGND_STORE_ETCD_NODE", "Bad Name")
	if _, err := Load(Options{File: p, SearchPaths: []string{}}); err == nil || !strings.Contains(err.Error(), `store.etcd.node: "Bad Name": only a-z`) {
		t.Errorf("from the environment: %v", err)
	}
}

func TestNodeFromHost(t *testing.T) {
	for h, want := range map[string]string{
		"signd-1":                     "signd-1",
		"SIGND_1.Example.org":         "signd_1.example.org",
		"-_.x y":                      "x-y",
		"host:8080":                   "host-8080",
		"ünïcode":                     "n-code",
		"":                            "",
		"...":                         "",
		strings.Repeat("a", 70):       strings.Repeat("a", 63),
		"a" + strings.Repeat("é", 70): "a" + strings.Repeat("-", 62),
	} {
		if got := NodeFromHost(h); got != want {
			t.Errorf("NodeFromHost(%q) = %q, want %q", h, got, want)
		}
	}
}

// admin.dual_control is read as a list from the file (a lone name is a
// list of one, as for every list key) and, comma-separated, from the
// environment; anything else is refused.
func TestDualControlSources(t *testing.T) {
	isolate(t)
	const head = "server:\n  base_url: https://x.org\npkcs11:\n  pin: \"1\"\n"
	for _, tt := range []struct{ name, yaml, want string }{
		{"number in the list", head + "admin:\n  dual_control: [credential_remove, 7]\n", "admin.dual_control: entry 2: must be a string, not a number"},
		{"mapping", head + "admin:\n  dual_control: {credential_remove: true}\n", "admin.dual_control: must be a single value, not a mapping"},
		{"lone name refused", head + "admin:\n  dual_control: user_set_password\n", "admin.dual_control: entry 1: user_set_password cannot wait for a second operator"},
		{"pending ttl without a unit", head + "admin:\n  pending_ttl: 24\n", "admin.pending_ttl: must be a duration with a unit"},
		{"unknown admin key", head + "admin:\n  dual_controll: [credential_remove]\n", `unknown key "admin.dual_controll" (did you mean "admin.dual_control"?)`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := loadYAML(t, tt.yaml)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
	_, c, err := loadYAML(t, head+"admin:\n  dual_control: credential_remove\n")
	if err != nil || strings.Join(c.Admin.DualControlOps(), " ") != "RemoveCredential" {
		t.Fatalf("a lone name: %v, %v", c, err)
	}
	t.Setenv("SIGND_ADMIN_DUAL_CONTROL", "credential_remove,tsa_enroll")
	_, c, err = loadYAML(t, head)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Admin.DualControlOps(); strings.Join(got, " ") != "RemoveCredential EnrollTSA" || c.Admin.PendingTTL != 24*time.Hour {
		t.Errorf("from the environment: %v, ttl %v", got, c.Admin.PendingTTL)
	}
}

// fileSHA256 is the lowercase hex SHA-256 of the file at path.
func fileSHA256(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// The configuration file, explicit or found, must be owned by root or the
// user running signd and not writable by group or others, and so must
// every directory above it: whoever can change it chooses the module signd
// loads and the socket the CLI sends passwords to.
func TestConfigFileOwnerAndMode(t *testing.T) {
	data, err := os.ReadFile("testdata/override.yaml")
	if err != nil {
		t.Fatal(err)
	}
	root := os.Geteuid() == 0
	tests := []struct {
		name     string
		needRoot bool
		// setup makes the file under base and returns its path and the
		// path the error must name.
		setup func(t *testing.T, base string) (file, bad string)
		want  string // "" = read
	}{
		{"0600", false, func(t *testing.T, b string) (string, string) {
			return safepathtest.WriteFile(t, b+"/signd.yaml", data, 0o600), ""
		}, ""},
		{"0644", false, func(t *testing.T, b string) (string, string) {
			return safepathtest.WriteFile(t, b+"/signd.yaml", data, 0o644), ""
		}, ""},
		{"group-writable file", false, func(t *testing.T, b string) (string, string) {
			f := safepathtest.WriteFile(t, b+"/signd.yaml", data, 0o620)
			return f, f
		}, "config: file %s is writable by group or others (mode 0620): another local user could rewrite the configuration, e.g. the pkcs11.module signd loads or the admin_socket it sends passwords to (run: chmod go-w %s)"},
		{"world-writable file", false, func(t *testing.T, b string) (string, string) {
			f := safepathtest.WriteFile(t, b+"/signd.yaml", data, 0o606)
			return f, f
		}, "config: file %s is writable by group or others (mode 0606)"},
		{"world-writable directory", false, func(t *testing.T, b string) (string, string) {
			d := safepathtest.Mkdir(t, b+"/d", 0o777)
			return safepathtest.WriteFile(t, d+"/signd.yaml", data, 0o600), d
		}, "config: parent directory %s is writable by group or others (mode 0777)"},
		{"sticky directory", false, func(t *testing.T, b string) (string, string) {
			d := safepathtest.Mkdir(t, b+"/d", 0o777|os.ModeSticky)
			return safepathtest.WriteFile(t, d+"/signd.yaml", data, 0o600), ""
		}, ""},
		{"world-writable directory above", false, func(t *testing.T, b string) (string, string) {
			d := safepathtest.Mkdir(t, b+"/d", 0o777)
			safepathtest.Mkdir(t, d+"/etc", 0o755)
			return safepathtest.WriteFile(t, d+"/etc/signd.yaml", data, 0o600), d
		}, "config: parent directory %s is writable by group or others (mode 0777)"},
		{"symbolic link to a group-writable file", false, func(t *testing.T, b string) (string, string) {
			f := safepathtest.WriteFile(t, b+"/real.yaml", data, 0o660)
			if err := os.Symlink(f, b+"/signd.yaml"); err != nil {
				t.Fatal(err)
			}
			return b + "/signd.yaml", f
		}, "config: file %s is writable by group or others (mode 0660)"},
		{"file of another user", true, func(t *testing.T, b string) (string, string) {
			f := safepathtest.WriteFile(t, b+"/signd.yaml", data, 0o600)
			safepathtest.Chown(t, f, 65534, 65534)
			return f, f
		}, "config: file %s is owned by uid 65534, not by root or uid 0 that runs signd: that user could rewrite the configuration, e.g. the pkcs11.module signd loads or the admin_socket it sends passwords to (run: chown 0 %s)"},
		{"root:signd 0640 (the Debian package's)", true, func(t *testing.T, b string) (string, string) {
			f := safepathtest.WriteFile(t, b+"/signd.yaml", data, 0o640)
			safepathtest.Chown(t, f, 0, 65534)
			return f, ""
		}, ""},
		{"directory of another user", true, func(t *testing.T, b string) (string, string) {
			d := safepathtest.Mkdir(t, b+"/d", 0o755)
			f := safepathtest.WriteFile(t, d+"/signd.yaml", data, 0o600)
			safepathtest.Chown(t, d, 65534, 65534)
			return f, d
		}, "config: parent directory %s is owned by uid 65534, not by root or uid 0 that runs signd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.needRoot && !root {
				t.Skip("needs root to chown the file to another user")
			}
			isolate(t)
			base := t.TempDir()
			file, bad := tt.setup(t, base)
			// The same judgement for --config and for a file found on the
			// search path.
			for _, opts := range []Options{{File: file}, {SearchPaths: []string{file}}} {
				c, err := Load(opts)
				if tt.want == "" {
					if err != nil {
						t.Fatalf("Load(%+v): %v", opts, err)
					}
					if c.Server.Listen != "127.0.0.1:1111" {
						t.Errorf("Load(%+v) did not read the file", opts)
					}
					continue
				}
				want := tt.want
				if strings.Count(want, "%s") == 2 {
					want = fmt.Sprintf(want, bad, bad)
				} else {
					want = fmt.Sprintf(want, bad)
				}
				if err == nil || !strings.HasPrefix(err.Error(), want) {
					t.Fatalf("Load(%+v) = %v,\nwant %q", opts, err, want)
				}
			}
		})
	}
}

// pkcs11.module is refused at load (and so by `signd config check`) when
// anyone but root or the user running signd could change the library or a
// directory above it: signd loads it into itself, and root's CLI too.
func TestModuleOwnerAndMode(t *testing.T) {
	root := os.Geteuid() == 0
	tests := []struct {
		name     string
		needRoot bool
		setup    func(t *testing.T, base string) (module, bad string)
		want     string // "" = accepted
	}{
		{"root's or mine, 0755", false, func(t *testing.T, b string) (string, string) {
			return safepathtest.WriteFile(t, b+"/lib.so", []byte("not ELF"), 0o755), ""
		}, ""},
		{"missing (left to the loader)", false, func(t *testing.T, b string) (string, string) {
			return b + "/none/lib.so", ""
		}, ""},
		{"group-writable", false, func(t *testing.T, b string) (string, string) {
			p := safepathtest.WriteFile(t, b+"/lib.so", []byte("not ELF"), 0o775)
			return p, p
		}, "pkcs11.module: file %s is writable by group or others (mode 0775): another local user could change the code signd loads and runs (as root in root's signd commands) (run: chmod go-w %s)"},
		{"in a world-writable directory", false, func(t *testing.T, b string) (string, string) {
			d := safepathtest.Mkdir(t, b+"/d", 0o777)
			return safepathtest.WriteFile(t, d+"/lib.so", []byte("not ELF"), 0o755), d
		}, "pkcs11.module: parent directory %s is writable by group or others (mode 0777)"},
		{"owned by another user", true, func(t *testing.T, b string) (string, string) {
			p := safepathtest.WriteFile(t, b+"/lib.so", []byte("not ELF"), 0o755)
			safepathtest.Chown(t, p, 65534, 65534)
			return p, p
		}, "pkcs11.module: file %s is owned by uid 65534, not by root or uid 0 that runs signd: that user could change the code signd loads and runs (as root in root's signd commands) (run: chown 0 %s)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.needRoot && !root {
				t.Skip("needs root to chown the library to another user")
			}
			isolate(t)
			module, bad := tt.setup(t, t.TempDir())
			t.Setenv("SIGND_SERVER_BASE_URL", "https://sign.example.org")
			t.Setenv("SIGND_PKCS11_PIN", "1")
			t.Setenv("SIGND_PKCS11_MODULE", module)
			_, err := Load(Options{SearchPaths: []string{}})
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			want := strings.ReplaceAll(tt.want, "%s", bad)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("Load = %v,\nwant %q", err, want)
			}
		})
	}
}
