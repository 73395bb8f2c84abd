package config

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// source is one way of giving a configuration: testdata/full.yaml (every
// kind of key: lists, admin.roles, the PIN, durations, rates) edited by
// the old→new pairs of edits, and environment variables.
type source struct {
	edits []string
	env   map[string]string
}

func (s source) load(t *testing.T) *Config {
	t.Helper()
	full, err := os.ReadFile("testdata/full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	yaml := string(full)
	for i := 0; i < len(s.edits); i += 2 {
		if !strings.Contains(yaml, s.edits[i]) {
			t.Fatalf("full.yaml has no %q", s.edits[i])
		}
		yaml = strings.Replace(yaml, s.edits[i], s.edits[i+1], 1)
	}
	for k, v := range s.env {
		t.Setenv(k, v)
	}
	_, c, err := loadYAML(t, yaml)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	for k := range s.env {
		t.Setenv(k, "") // unset: the next load sees only its own
	}
	return c
}

// TestChanged: Changed compares values as loaded, in the order of Keys,
// so that a SIGHUP reload of an unchanged configuration is never refused
// however its values are written (a duration in other units, a list from
// the environment, an empty list for none, the PIN from the environment)
// and a change of any key, from the file or the environment, is named.
func TestChanged(t *testing.T) {
	isolate(t)
	const dualControl = "  dual_control: [credential_remove, tsa_enroll, oidc_keys_rotate]\n"
	tests := []struct {
		name     string
		was, now source
		want     []string
	}{
		{name: "the same file"},
		{name: "written otherwise", now: source{edits: []string{
			"shutdown_timeout: 1m", "shutdown_timeout: 60s",
			"open_timeout: 250ms", "open_timeout: 0.25s",
			"pending_ttl: 8h", "pending_ttl: 480m",
			"rate: 3\n", "rate: 3.0\n",
			"body_limit_bytes: 2097152", "body_limit_bytes: 0x200000",
			`trusted_proxies: [10.0.0.0/8, 192.0.2.7, "2001:db8::/32"]`, "trusted_proxies:\n    - 10.0.0.0/8\n    - 192.0.2.7\n    - \"2001:db8::/32\"",
			dualControl, "  dual_control:\n    - credential_remove\n    - tsa_enroll\n    - oidc_keys_rotate\n",
			`auditor: ["0"]`, "auditor:\n      - \"0\"",
		}}},
		{name: "from the environment as from the file", now: source{
			edits: []string{
				`  trusted_proxies: [10.0.0.0/8, 192.0.2.7, "2001:db8::/32"]` + "\n", "",
				`  pin: "987654"` + "\n", "",
				"  max_keys: 500\n", "",
				"  pending_ttl: 8h\n", "",
				dualControl, "",
				"  verify_on_open: true\n", "",
				"    rate: 2.5\n", "",
			},
			env: map[string]string{
				"SIGND_SERVER_TRUSTED_PROXIES":   "10.0.0.0/8, 192.0.2.7,2001:db8::/32",
				"SIGND_PKCS11_PIN":               "987654",
				"SIGND_RATELIMIT_MAX_KEYS":       "500",
				"SIGND_ADMIN_PENDING_TTL":        "480m",
				"SIGND_ADMIN_DUAL_CONTROL":       "credential_remove,tsa_enroll,oidc_keys_rotate",
				"SIGND_STORE_VERIFY_ON_OPEN":     "true",
				"SIGND_RATELIMIT_TIMESTAMP_RATE": "2.5",
			},
		}},
		{name: "an empty list and none",
			was: source{edits: []string{dualControl, "", `trusted_proxies: [10.0.0.0/8, 192.0.2.7, "2001:db8::/32"]`, "trusted_proxies:"}},
			now: source{edits: []string{dualControl, "  dual_control: []\n", `trusted_proxies: [10.0.0.0/8, 192.0.2.7, "2001:db8::/32"]`, "trusted_proxies: []"}}},
		{name: "the PIN", now: source{edits: []string{`pin: "987654"`, `pin: "987655"`}}, want: []string{"pkcs11.pin"}},
		{name: "a longer PIN", now: source{env: map[string]string{"SIGND_PKCS11_PIN": "9876543"}}, want: []string{"pkcs11.pin"}},
		{name: "a list in another order", now: source{edits: []string{"credential_remove, tsa_enroll", "tsa_enroll, credential_remove"}},
			want: []string{"admin.dual_control"}},
		{name: "a list one shorter", now: source{edits: []string{", oidc_keys_rotate]", "]"}}, want: []string{"admin.dual_control"}},
		// config_loaded records the groups as written.
		{name: "a role's group written otherwise", now: source{edits: []string{`auditor: ["0"]`, "auditor: [root]"}},
			want: []string{"admin.roles.auditor"}},
		{name: "a duration", now: source{edits: []string{"refresh: 15m", "refresh: 16m"}}, want: []string{"csc.cert_status.refresh"}},
		{name: "a rate", now: source{edits: []string{"rate: 2.5", "rate: 2.6"}}, want: []string{"ratelimit.timestamp.rate"}},
		{name: "a switch", now: source{edits: []string{"verify_on_open: true", "verify_on_open: false"}}, want: []string{"store.verify_on_open"}},
		{name: "several, in the table's order", now: source{edits: []string{
			"rate: 0\n", "rate: 5\n",
			"level: debug", "level: info",
			"audit:\n", "oauth:\n  max_failures: 3\naudit:\n",
			"path: /var/lib/signd/signd.db", "path: /var/lib/signd/other.db",
		}}, want: []string{"store.path", "log.level", "oauth.max_failures", "ratelimit.token.rate"}},
		{name: "the environment changed", now: source{env: map[string]string{"SIGND_OAUTH_MAX_FAILURES": "7"}},
			want: []string{"oauth.max_failures"}},
		{name: "the environment unset", was: source{env: map[string]string{"SIGND_OAUTH_MAX_FAILURES": "7"}},
			want: []string{"oauth.max_failures"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			was, now := tt.was.load(t), tt.now.load(t)
			var got []string
			for _, k := range was.Changed(now) {
				got = append(got, k.Name)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Changed = %q, want %q", got, tt.want)
			}
		})
	}
}
