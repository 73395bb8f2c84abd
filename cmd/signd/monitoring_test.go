package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.yaml.in/yaml/v3"
)

// The monitoring files shipped with the package (packaging/).
const (
	alertRules     = "../../packaging/prometheus/signd-alerts.yaml"
	alertTests     = "../../packaging/prometheus/signd-alerts.test.yaml"
	grafanaBoard   = "../../packaging/grafana/signd-dashboard.json"
	operationsDocs = "../../docs/OPERATIONS.md"
)

// promtool returns the path of promtool (Debian's prometheus package;
// scripts/install-deps.sh installs it for make test). Without it the test
// is skipped, except in CI, where it fails.
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("promtool is not installed; scripts/install-deps.sh installs it (Debian package prometheus)")
		}
		t.Skip("promtool is not installed: run scripts/install-deps.sh (Debian package prometheus), as make test does")
	}
	return p
}

// runTool runs a command and fails the test with its output when it fails.
func runTool(t *testing.T, stdin string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestAlertRulesPromtool: the alert rules pass `promtool check rules` and
// their unit tests `promtool test rules` (each alert firing and not
// firing); every Grafana query parses as PromQL (checked as a recording
// rule, with the dashboard's variables filled in).
func TestAlertRulesPromtool(t *testing.T) {
	tool := promtool(t)
	runTool(t, "", tool, "check", "rules", alertRules)
	if out := runTool(t, "", tool, "test", "rules", alertTests); !strings.Contains(out, "SUCCESS") {
		t.Errorf("promtool test rules:\n%s", out)
	}

	var rules strings.Builder
	rules.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	for i, expr := range dashboardQueries(t) {
		expr = strings.NewReplacer("$__rate_interval", "5m", "$instance", ".*").Replace(expr)
		q, _ := json.Marshal(expr)
		rules.WriteString("      - record: dashboard:query" + string(rune('a'+i%26)) + "\n        expr: " + string(q) + "\n")
	}
	file := filepath.Join(t.TempDir(), "dashboard-queries.yaml")
	if err := os.WriteFile(file, []byte(rules.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	runTool(t, "", tool, "check", "rules", file)
}

// dashboardQueries returns every target expression of the Grafana
// dashboard, which must be JSON Grafana imports (a schemaVersion, a
// title, a uid, panels with unique IDs).
func dashboardQueries(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(grafanaBoard)
	if err != nil {
		t.Fatal(err)
	}
	var board struct {
		Title         string `json:"title"`
		UID           string `json:"uid"`
		SchemaVersion int    `json:"schemaVersion"`
		Panels        []struct {
			ID      int    `json:"id"`
			Type    string `json:"type"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(data, &board); err != nil {
		t.Fatalf("%s: %v", grafanaBoard, err)
	}
	if board.Title == "" || board.UID == "" || board.SchemaVersion < 30 || len(board.Panels) == 0 {
		t.Fatalf("%s: title %q, uid %q, schemaVersion %d, %d panels", grafanaBoard, board.Title, board.UID, board.SchemaVersion, len(board.Panels))
	}
	var exprs []string
	ids := map[int]bool{}
	for _, p := range board.Panels {
		if ids[p.ID] {
			t.Errorf("%s: panel ID %d twice", grafanaBoard, p.ID)
		}
		ids[p.ID] = true
		if p.Type != "row" && len(p.Targets) == 0 {
			t.Errorf("%s: panel %d has no query", grafanaBoard, p.ID)
		}
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	return exprs
}

// metricName finds the metric names in PromQL text and in promtool's
// series notation: signd's own and the process collector's.
var metricName = regexp.MustCompile(`\b(?:signd|process|go)_[a-z0-9_]+\b`)

// TestMonitoringUsesExportedMetrics: every metric the alert rules, their
// unit tests and the dashboard use is one a real daemon exports (scraped
// after a credential is enrolled and a checkpoint signed, so that the
// metrics that wait for them are there; a labelled counter that has not
// counted yet, such as signd_hsm_errors_total, is taken from the
// registry's descriptions), and its /metrics passes `promtool check
// metrics`. Each runbook link names a heading of docs/OPERATIONS.md.
func TestMonitoringUsesExportedMetrics(t *testing.T) {
	e, dir := checkpointEnv(t)
	e.appendConfig("  checkpoint_interval: 1h\n")
	createAuditKey(t, e)
	journeyAlice(t, e)
	cpTicks := make(chan time.Time)
	_, stop := e.startDaemonWith(func(a *app) { a.checkpointTicks = cpTicks })
	defer stop()
	cpTicks <- time.Now()
	waitFor(t, func() bool { _, err := os.Stat(filepath.Join(dir, "checkpoint")); return err == nil })
	var text string
	waitFor(t, func() bool {
		_, _, text = httpGet(t, "GET", "http://"+e.metricsAddr+"/metrics")
		return strings.Contains(text, "\nsignd_audit_entries_total ")
	})

	exported := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^# TYPE (\S+) (\S+)$`).FindAllStringSubmatch(text, -1) {
		exported[m[1]] = true
		if m[2] == "histogram" {
			for _, s := range []string{"_bucket", "_count", "_sum"} {
				exported[m[1]+s] = true
			}
		}
	}
	descs := make(chan *prometheus.Desc, 256)
	go func() { newMetrics().Registry().Describe(descs); close(descs) }()
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	for d := range descs {
		if m := fqName.FindStringSubmatch(d.String()); m != nil {
			exported[m[1]] = true
		}
	}

	used := map[string][]string{} // metric → files using it
	add := func(file, text string) {
		for _, name := range metricName.FindAllString(text, -1) {
			if !slices.Contains(used[name], file) {
				used[name] = append(used[name], file)
			}
		}
	}
	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert       string            `yaml:"alert"`
				Expr        string            `yaml:"expr"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	data, err := os.ReadFile(alertRules)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &rules); err != nil {
		t.Fatal(err)
	}
	docs, err := os.ReadFile(operationsDocs)
	if err != nil {
		t.Fatal(err)
	}
	// GitHub's heading anchors: lower case, without punctuation, spaces
	// as hyphens.
	anchors := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^#+ (.+)$`).FindAllStringSubmatch(string(docs), -1) {
		a := strings.ToLower(m[1])
		a = regexp.MustCompile(`[^a-z0-9 _-]`).ReplaceAllString(a, "")
		anchors[strings.ReplaceAll(a, " ", "-")] = true
	}
	alerts := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			alerts++
			add("signd-alerts.yaml", r.Expr)
			_, anchor, ok := strings.Cut(r.Annotations["runbook_url"], "docs/OPERATIONS.md#")
			if !ok || !anchors[anchor] {
				t.Errorf("alert %s: runbook_url %q is not a heading of docs/OPERATIONS.md", r.Alert, r.Annotations["runbook_url"])
			}
			if r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("alert %s lacks a summary or description", r.Alert)
			}
		}
	}
	if alerts < 7 {
		t.Errorf("%d alerts in %s", alerts, alertRules)
	}
	var tests struct {
		Tests []struct {
			InputSeries []struct {
				Series string `yaml:"series"`
			} `yaml:"input_series"`
		} `yaml:"tests"`
	}
	data, err = os.ReadFile(alertTests)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &tests); err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests.Tests {
		for _, s := range tc.InputSeries {
			add("signd-alerts.test.yaml", s.Series)
		}
	}
	for _, q := range dashboardQueries(t) {
		add("signd-dashboard.json", q)
	}
	for _, must := range []string{"signd_hsm_available", "signd_store_writable", "signd_http_requests_total",
		"signd_credential_certificates_expiring", "signd_lockouts_total", "signd_readiness_changes_total",
		"signd_login_attempts_total", "signd_csc_signhash_duration_seconds_bucket", "signd_audit_checkpoint_age_seconds",
		"signd_store_size_bytes"} {
		if used[must] == nil {
			t.Errorf("nothing uses %s", must)
		}
	}
	for name, files := range used {
		if !exported[name] {
			t.Errorf("%s uses %s, which signd does not export", strings.Join(files, ", "), name)
		}
	}

	if tool, err := exec.LookPath("promtool"); err == nil {
		runTool(t, text, tool, "check", "metrics")
	}
}
