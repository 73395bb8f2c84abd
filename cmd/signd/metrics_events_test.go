package main

import (
	"crypto/sha256"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/signd/signd/oauth/oauthtest"
)

// scrape returns every sample of the daemon's /metrics, by series as the
// text format writes it (`name{label="v",...}`, labels sorted by name).
func scrape(t *testing.T, e *env) map[string]float64 {
	t.Helper()
	status, _, text := httpGet(t, "GET", "http://"+e.metricsAddr+"/metrics")
	if status != http.StatusOK {
		t.Fatalf("GET /metrics = %d", status)
	}
	samples := map[string]float64{}
	for _, line := range strings.Split(text, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		samples[line[:i]] = v
	}
	return samples
}

// TestMetricsLoginsAndLockouts: each login door's outcome moves its
// series of signd_login_attempts_total, and a lock by wrong guesses moves
// signd_lockouts_total, through the real daemon (oauth.max_failures 2).
func TestMetricsLoginsAndLockouts(t *testing.T) {
	e := newEnv(t, authLoginConfig+"oauth:\n  max_failures: 2\n")
	cred := journeyAlice(t, e)
	e.must("bob's long password\n", "user", "add", "bob", "--password-file", "-")
	e.must("", "user", "disable", "bob")
	e.must("dave's long password\n", "user", "add", "dave", "--password-file", "-")
	e.must("carol's long password\n", "user", "add", "carol", "--password-file", "-")
	e.must("", "user", "totp", "enroll", "carol")
	addr, _ := e.startDaemon()
	base := "http://" + addr
	conf, _ := journeyClient(base)

	series := func(method, result string) string {
		return `signd_login_attempts_total{method="` + method + `",result="` + result + `"}`
	}
	// page submits the login page of a new browser for scope.
	page := func(scope string, form map[string]string, opts ...oauth2.AuthCodeOption) (*oauthtest.Browser, *oauthtest.Step) {
		t.Helper()
		c := conf
		c.Scopes = []string{scope}
		b := oauthtest.NewBrowser(nil)
		s, err := b.Get(c.AuthCodeURL("st", opts...))
		if err == nil {
			s, err = b.Submit(s.Form, form, "approve")
		}
		if err != nil {
			t.Fatal(err)
		}
		return b, s
	}
	for _, step := range []struct {
		name  string
		do    func()
		moved []string // series that rise by one; every other login and lockout series stays
	}{
		{"auth/login ok", func() {
			if st, _, m := cscCall(t, base, "auth/login", basic("alice", journeyPassword), `{}`); st != 200 {
				t.Fatalf("auth/login: %d %v", st, m)
			}
		}, []string{series("auth_login", "ok")}},
		{"login page, wrong password", func() {
			page("service", map[string]string{"username": "alice", "password": "wrong"})
		}, []string{series("password", "failed")}},
		{"login page, unknown user", func() {
			page("service", map[string]string{"username": "nobody", "password": "wrong"})
		}, []string{series("password", "failed")}},
		{"auth/login, disabled account", func() {
			cscCall(t, base, "auth/login", basic("bob", "bob's long password"), `{}`)
		}, []string{series("auth_login", "disabled")}},
		{"login page, TOTP account, wrong code", func() {
			page("service", map[string]string{"username": "carol", "password": "carol's long password", "otp": "000000"})
		}, []string{series("totp", "failed")}},
		{"auth/login, TOTP account", func() {
			cscCall(t, base, "auth/login", basic("carol", "carol's long password"), `{}`)
		}, []string{series("auth_login", "failed")}},
		{"auth/login, first wrong password", func() {
			cscCall(t, base, "auth/login", basic("dave", "wrong"), `{}`)
		}, []string{series("auth_login", "failed")}},
		{"auth/login, second wrong password locks", func() {
			cscCall(t, base, "auth/login", basic("dave", "wrong"), `{}`)
		}, []string{series("auth_login", "locked"), `signd_lockouts_total{secret="password"}`}},
		{"auth/login, right password while locked", func() {
			cscCall(t, base, "auth/login", basic("dave", "dave's long password"), `{}`)
		}, []string{series("auth_login", "locked")}},
		{"login page ok, then two wrong PINs lock the PIN", func() {
			digest := sha256.Sum256([]byte("%PDF-1.7 never signed"))
			for range 2 {
				b, s := page("credential", map[string]string{"username": "alice", "password": journeyPassword},
					oneSignature(cred, digest[:])...)
				if s.Form == nil || !s.Form.Has("pin") {
					t.Fatalf("no consent page: %d %s", s.Status, oauthtest.Text(s.Body))
				}
				b.Submit(s.Form, map[string]string{"pin": "000000"}, "approve")
			}
		}, []string{series("password", "ok"), series("password", "ok"), `signd_lockouts_total{secret="pin"}`}},
	} {
		before := scrape(t, e)
		step.do()
		after := scrape(t, e)
		want := map[string]float64{}
		for _, s := range step.moved {
			want[s]++
		}
		for s, v := range after {
			if !strings.HasPrefix(s, "signd_login_attempts_total{") && !strings.HasPrefix(s, "signd_lockouts_total{") {
				continue
			}
			if d := v - before[s]; d != want[s] {
				t.Errorf("%s: %s rose by %v, want %v", step.name, s, d, want[s])
			}
			delete(want, s)
		}
		for s := range want {
			t.Errorf("%s: no series %s", step.name, s)
		}
	}
}

// TestMetricsState: the metrics read from the store and the checkpoint
// directory follow what happens: a credential enabled with a certificate
// that expires in 10 days enters the ≤14-day bucket at the next refresh,
// the audit log's entries are counted, a checkpoint's age and size are
// published once one is signed, the store's size and writability and
// the readiness verdict are there.
func TestMetricsState(t *testing.T) {
	e, dir := checkpointEnv(t)
	e.appendConfig("  checkpoint_interval: 1h\n")
	createAuditKey(t, e)
	journeyAlice(t, e) // one credential, its certificate valid for 12 hours
	stateTicks, cpTicks := make(chan time.Time), make(chan time.Time)
	_, stop := e.startDaemonWith(func(a *app) { a.stateTicks, a.checkpointTicks = stateTicks, cpTicks })
	defer stop()

	var m map[string]float64
	waitFor(t, func() bool { m = scrape(t, e); _, ok := m["signd_audit_entries_total"]; return ok })
	for s, want := range map[string]float64{
		`signd_credential_certificates_expiring{within_days="0"}`:    0,
		`signd_credential_certificates_expiring{within_days="1"}`:    1,
		`signd_credential_certificates_expiring{within_days="14"}`:   1,
		`signd_credential_certificates_expiring{within_days="+Inf"}`: 1,
		`signd_store_writable`:                    1,
		`signd_ready`:                             1,
		`signd_audit_checkpoint_interval_seconds`: 3600,
	} {
		if got, ok := m[s]; !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", s, got, ok, want)
		}
	}
	if v := m["signd_credential_certificate_soonest_expiry_seconds"]; v < 11*3600 || v > 12*3600 {
		t.Errorf("soonest expiry in %v s, want about 12 h", v)
	}
	if fi, err := os.Stat(e.store); err != nil || m["signd_store_size_bytes"] != float64(fi.Size()) {
		t.Errorf("signd_store_size_bytes = %v, want the file's %v (%v)", m["signd_store_size_bytes"], fi.Size(), err)
	}
	if _, ok := m["signd_audit_checkpoint_age_seconds"]; ok {
		t.Error("a checkpoint age before any checkpoint")
	}
	entries := m["signd_audit_entries_total"]
	if entries < 1 {
		t.Errorf("signd_audit_entries_total = %v after the enrolment's acts", entries)
	}

	// A second credential, disabled: not counted; the audit log grows.
	cred2 := enrollKey(t, e, "alice", "CN=Alice Jansen 2,O=Example BV,C=NL")
	e.must("", "credential", "disable", cred2)
	stateTicks <- time.Now()
	waitFor(t, func() bool { m = scrape(t, e); return m["signd_audit_entries_total"] > entries })
	if v := m[`signd_credential_certificates_expiring{within_days="+Inf"}`]; v != 1 {
		t.Errorf("after a disabled second credential: %v enabled with a certificate, want 1", v)
	}

	// A checkpoint: its age and size.
	cpTicks <- time.Now()
	waitFor(t, func() bool { _, err := os.Stat(filepath.Join(dir, "checkpoint")); return err == nil })
	m = scrape(t, e)
	if age, ok := m["signd_audit_checkpoint_age_seconds"]; !ok || age < 0 || age > 60 {
		t.Errorf("checkpoint age %v (present %v), want a few seconds", age, ok)
	}
	if n := m["signd_audit_checkpoint_entries"]; n < entries {
		t.Errorf("checkpoint covers %v entries, want at least %v", n, entries)
	}
}
