package main

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/signd/signd/cmd/signd/version"
)

// listeningPorts returns the TCP ports this process listens on (Linux:
// its socket inodes matched against /proc/self/net/tcp{,6}).
func listeningPorts(t *testing.T) map[int]bool {
	t.Helper()
	inodes := map[string]bool{}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		if l, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && strings.HasPrefix(l, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	ports := map[int]bool{}
	for _, table := range []string{"/proc/self/net/tcp", "/proc/self/net/tcp6"} {
		data, err := os.ReadFile(table)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(data), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) < 10 || f[3] != "0A" || !inodes[f[9]] { // 0A = LISTEN
				continue
			}
			_, hexPort, _ := strings.Cut(f[1], ":")
			port, err := strconv.ParseUint(hexPort, 16, 16)
			if err != nil {
				t.Fatalf("%s: %q", table, line)
			}
			ports[int(port)] = true
		}
	}
	return ports
}

func portOf(t *testing.T, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(p)
	return n
}

func httpGet(t *testing.T, method, url string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, string(body)
}

// TestMetricsOwnListener: /metrics is served on server.metrics_listen and
// nowhere on the public API, where it is an unknown path like any other.
func TestMetricsOwnListener(t *testing.T) {
	e := newEnv(t, "")
	before := listeningPorts(t)
	addr, _ := e.daemon()
	if e.metricsAddr == "" {
		t.Fatal("no metrics listener")
	}
	opened := listeningPorts(t)
	for p := range before {
		delete(opened, p)
	}
	if len(opened) != 2 || !opened[portOf(t, addr)] || !opened[portOf(t, e.metricsAddr)] {
		t.Errorf("new listening ports %v, want the API's %s and the metrics' %s", opened, addr, e.metricsAddr)
	}

	// The public listener: the router's JSON 404, exactly as for /nope.
	status, _, body := httpGet(t, "GET", "http://"+addr+"/metrics")
	_, _, nope := httpGet(t, "GET", "http://"+addr+"/nope")
	if status != http.StatusNotFound || body != nope {
		t.Errorf("public GET /metrics = %d %s, want the 404 of an unknown path %s", status, body, nope)
	}
	var m map[string]string
	if err := json.Unmarshal([]byte(body), &m); err != nil || m["error"] != "not_found" {
		t.Errorf("public GET /metrics body %q", body)
	}

	// The metrics listener: the registry, with the request just counted.
	status, header, text := httpGet(t, "GET", "http://"+e.metricsAddr+"/metrics")
	if status != http.StatusOK || !strings.HasPrefix(header.Get("Content-Type"), "text/plain") {
		t.Fatalf("metrics GET /metrics = %d %s", status, header.Get("Content-Type"))
	}
	for _, want := range []string{
		`signd_http_requests_total{method="GET",route="unmatched",status="404"} 2`,
		"go_goroutines", "process_resident_memory_bytes",
		`goversion="` + runtime.Version() + `",version="` + version.Info().Version + `"} 1`, // signd_build_info
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	// ... and nothing else.
	for _, tc := range []struct {
		method, path string
		status       int
	}{
		{"GET", "/", 404}, {"GET", "/healthz", 404}, {"POST", "/csc/v1/info", 404}, {"POST", "/metrics", 405},
	} {
		if status, _, _ := httpGet(t, tc.method, "http://"+e.metricsAddr+tc.path); status != tc.status {
			t.Errorf("metrics listener %s %s = %d, want %d", tc.method, tc.path, status, tc.status)
		}
	}
}

// TestMetricsListenerOff: an empty server.metrics_listen opens no listener
// at all.
func TestMetricsListenerOff(t *testing.T) {
	e := newEnv(t, "")
	e.setConfig("  metrics_listen: 127.0.0.1:0\n", "  metrics_listen: \"\"\n")
	before := listeningPorts(t)
	e.metricsAddr = "unset"
	addr, logs := e.daemon()
	if e.metricsAddr != "" {
		t.Errorf("metrics listener at %q, want none", e.metricsAddr)
	}
	opened := listeningPorts(t)
	for p := range before {
		delete(opened, p)
	}
	if len(opened) != 1 || !opened[portOf(t, addr)] {
		t.Errorf("new listening ports %v, want only the API's %s", opened, addr)
	}
	if status, _, _ := httpGet(t, "GET", "http://"+addr+"/metrics"); status != http.StatusNotFound {
		t.Errorf("public GET /metrics = %d", status)
	}
	if !strings.Contains(logs.String(), `"metrics_listen":""`) {
		t.Errorf("ready log line does not say metrics are off:\n%s", logs.String())
	}
}

// TestMetricsListenerRefused: a metrics address on the API's port is a
// configuration error; one that is taken stops start-up, naming the key,
// and leaves nothing behind.
func TestMetricsListenerRefused(t *testing.T) {
	t.Run("same port as server.listen", func(t *testing.T) {
		e := newEnv(t, "")
		e.setConfig("  listen: 127.0.0.1:0\n  metrics_listen: 127.0.0.1:0\n", "  listen: 127.0.0.1:18443\n  metrics_listen: localhost:18443\n")
		_, _, err := e.run("", "serve")
		if err == nil || !strings.Contains(err.Error(), `server.metrics_listen: "localhost:18443" uses the port of server.listen (127.0.0.1:18443)`) {
			t.Fatalf("serve: %v", err)
		}
	})
	t.Run("not an address", func(t *testing.T) {
		e := newEnv(t, "")
		e.setConfig("  metrics_listen: 127.0.0.1:0\n", "  metrics_listen: \"9464\"\n")
		_, _, err := e.run("", "serve")
		if err == nil || !strings.Contains(err.Error(), `server.metrics_listen: "9464" is not host:port`) {
			t.Fatalf("serve: %v", err)
		}
	})
	t.Run("address in use", func(t *testing.T) {
		taken, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer taken.Close()
		e := newEnv(t, "")
		e.setConfig("  metrics_listen: 127.0.0.1:0\n", "  metrics_listen: "+taken.Addr().String()+"\n")
		before := listeningPorts(t)
		_, _, err = e.run("", "serve")
		if err == nil || !strings.Contains(err.Error(), "server.metrics_listen "+taken.Addr().String()) || !strings.Contains(err.Error(), "address already in use") {
			t.Fatalf("serve: %v", err)
		}
		after := listeningPorts(t)
		for p := range after {
			if !before[p] {
				t.Errorf("port %d left listening after the failed start", p)
			}
		}
		if _, err := os.Stat(filepath.Join(e.dir, "s.sock")); !os.IsNotExist(err) {
			t.Errorf("admin socket left behind: %v", err)
		}
	})
}

// TestMetricsListenerStopsWithServe: signd serve shuts the metrics
// listener down with the others.
func TestMetricsListenerStopsWithServe(t *testing.T) {
	e := newEnv(t, "")
	_, stop := e.startDaemon()
	metricsAddr := e.metricsAddr
	if status, _, _ := httpGet(t, "GET", "http://"+metricsAddr+"/metrics"); status != http.StatusOK {
		t.Fatalf("metrics: %d", status)
	}
	if stop(); t.Failed() { // serve returned an error or did not stop
		t.FailNow()
	}
	if c, err := net.DialTimeout("tcp", metricsAddr, time.Second); err == nil {
		c.Close()
		t.Error("the metrics listener still accepts after serve returned")
	}
}

// waitMetrics scrapes the daemon's /metrics until it has every line of
// want (a metric with its labels and value), for up to 10 s; metrics the
// daemon sets in the background (certificate status) may lag what the API
// already answers.
func waitMetrics(t *testing.T, e *env, want ...string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, _, text := httpGet(t, "GET", "http://"+e.metricsAddr+"/metrics")
		var missing []string
		for _, w := range want {
			if !strings.Contains(text, "\n"+w+"\n") {
				missing = append(missing, w)
			}
		}
		if len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/metrics lacks %q", missing)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// metricLines returns the lines of the daemon's /metrics that start with
// name.
func metricLines(t *testing.T, e *env, name string) string {
	t.Helper()
	_, _, text := httpGet(t, "GET", "http://"+e.metricsAddr+"/metrics")
	var out []string
	for l := range strings.Lines(text) {
		if strings.HasPrefix(l, name) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "")
}
