package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestUsageErrors: every missing, malformed, duplicated or non-loopback
// flag value is refused with a message naming it.
func TestUsageErrors(t *testing.T) {
	cluster := "m1=http://127.0.0.1:2380,m2=http://127.0.0.1:2381"
	member := []string{"etcd", "--name", "m1", "--dir", "d", "--client", "http://127.0.0.1:2379", "--peer", "http://127.0.0.1:2380"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "usage: signd-cluster"},
		{[]string{"nope"}, "usage: signd-cluster"},
		{[]string{"ports"}, "usage: signd-cluster ports N"},
		{[]string{"ports", "x"}, `ports "x": want a number from 1 to 64`},
		{[]string{"ports", "0"}, `ports "0"`},
		{[]string{"ports", "65"}, `ports "65"`},
		{[]string{"ports", "1", "2"}, "usage: signd-cluster ports N"},
		{[]string{"pick"}, "usage: signd-cluster pick PORT... (1 to 64 ports)"},
		{append([]string{"pick"}, strings.Fields(strings.Repeat("8443 ", 65))...), "usage: signd-cluster pick PORT..."},
		{[]string{"pick", "8443", "x"}, `pick "x": want a port from 1 to 65535`},
		{[]string{"pick", "0"}, `pick "0": want a port from 1 to 65535`},
		{[]string{"pick", "65536"}, `pick "65536"`},
		{[]string{"pick", "-1"}, `pick "-1"`},
		{[]string{"etcd"}, "etcd needs --name, --dir, --client, --peer and --cluster"},
		{member, "etcd needs"},
		{append(member[:2:2], "M 1", "--dir", "d", "--client", "http://127.0.0.1:1", "--peer", "http://127.0.0.1:2", "--cluster", cluster), `--name "M 1"`},
		{[]string{"etcd", "--name", "m1", "--dir", "d", "--client", "127.0.0.1:2379", "--peer", "http://127.0.0.1:2380", "--cluster", cluster}, `--client "127.0.0.1:2379": want http://127.0.0.1:PORT`},
		{[]string{"etcd", "--name", "m1", "--dir", "d", "--client", "http://10.0.0.1:2379", "--peer", "http://127.0.0.1:2380", "--cluster", cluster}, "only loopback"},
		{[]string{"etcd", "--name", "m1", "--dir", "d", "--client", "http://127.0.0.1", "--peer", "http://127.0.0.1:2380", "--cluster", cluster}, "want http://127.0.0.1:PORT"},
		{[]string{"etcd", "--name", "m1", "--dir", "d", "--client", "https://127.0.0.1:1", "--peer", "http://127.0.0.1:2380", "--cluster", cluster}, "want http://127.0.0.1:PORT"},
		{append(member[:len(member):len(member)], "--cluster", "m1"), `--cluster "m1": want NAME=PEER_URL[,NAME=PEER_URL]`},
		{append(member[:len(member):len(member)], "--cluster", "m1=http://127.0.0.1:2380,m1=http://127.0.0.1:2381"), `member "m1" named twice`},
		{append(member[:len(member):len(member)], "--cluster", "m2=http://127.0.0.1:2381"), "does not name this member (m1)"},
		{append(member[:len(member):len(member)], "--cluster", "m1=http://127.0.0.1:9999"), "--peer says"},
		{append(member[:len(member):len(member)], "--cluster", "m1=http://192.0.2.1:2380"), "only loopback"},
		{append(member[:len(member):len(member)], "--cluster", cluster, "extra"), `unexpected argument "extra"`},
		{append(member[:len(member):len(member)], "--bogus"), "flag provided but not defined: -bogus"},
		{[]string{"front"}, "front needs --listen and at least one --backend"},
		{[]string{"front", "--listen", "127.0.0.1:1"}, "front needs"},
		{[]string{"front", "--backend", "http://127.0.0.1:1"}, "front needs"},
		{[]string{"front", "--listen", "0.0.0.0:80", "--backend", "http://127.0.0.1:1"}, `--listen "0.0.0.0:80": only loopback`},
		{[]string{"front", "--listen", "8080", "--backend", "http://127.0.0.1:1"}, `--listen "8080": want 127.0.0.1:PORT`},
		{[]string{"front", "--listen", "127.0.0.1:1", "--backend", "http://example.com:1"}, "only loopback"},
		{[]string{"front", "--listen", "127.0.0.1:1", "--backend", "http://127.0.0.1:1", "--backend", "http://127.0.0.1:1/"}, "given twice"},
		{[]string{"front", "--listen", "127.0.0.1:1", "--backend", "http://127.0.0.1:1", "--check", "1ms"}, "--check 1ms: want 100ms to 1m"},
		{[]string{"front", "--listen", "127.0.0.1:1", "--backend", "http://127.0.0.1:1", "--check", "soon"}, `invalid value "soon" for flag -check`},
		{append(member[:len(member):len(member)], "--advertise-peer", "http://127.0.0.1:2390", "--cluster", cluster), "--cluster names m1 at http://127.0.0.1:2380, --advertise-peer says http://127.0.0.1:2390"},
		{append(member[:len(member):len(member)], "--advertise-peer", "http://192.0.2.1:2390", "--cluster", cluster), `--advertise-peer "http://192.0.2.1:2390": only loopback`},
		{append(member[:len(member):len(member)], "--advertise-peer", "127.0.0.1:2390", "--cluster", cluster), `--advertise-peer "127.0.0.1:2390": want http://127.0.0.1:PORT`},
		{[]string{"delay"}, "delay needs --listen, --to and --delay"},
		{[]string{"delay", "--listen", "127.0.0.1:1", "--to", "127.0.0.1:2"}, "delay needs"},
		{[]string{"delay", "--listen", "127.0.0.1:1", "--delay", "1ms"}, "delay needs"},
		{[]string{"delay", "--listen", "127.0.0.1:1", "--to", "127.0.0.1:2", "--delay", "0s"}, "delay needs"},
		{[]string{"delay", "--listen", "127.0.0.1:1", "--to", "127.0.0.1:2", "--delay", "1s"}, "--delay 1s: want 1us to 500ms"},
		{[]string{"delay", "--listen", "127.0.0.1:1", "--to", "127.0.0.1:2", "--delay", "-1ms"}, "--delay -1ms: want 1us to 500ms"},
		{[]string{"delay", "--listen", "127.0.0.1:1", "--to", "127.0.0.1:2", "--delay", "later"}, `invalid value "later" for flag -delay`},
		{[]string{"delay", "--listen", "0.0.0.0:1", "--to", "127.0.0.1:2", "--delay", "1ms"}, `--listen "0.0.0.0:1": only loopback`},
		{[]string{"delay", "--listen", "127.0.0.1:1", "--to", "example.com:2", "--delay", "1ms"}, `--to "example.com:2": only loopback`},
		{[]string{"delay", "--listen", "127.0.0.1", "--to", "127.0.0.1:2", "--delay", "1ms"}, `--listen "127.0.0.1": want 127.0.0.1:PORT`},
		{[]string{"delay", "--listen", "127.0.0.1:1", "--to", "127.0.0.1:1", "--delay", "1ms"}, "forward to itself"},
		{[]string{"delay", "--listen", "127.0.0.1:1", "--to", "127.0.0.1:2", "--delay", "1ms", "x"}, `delay: unexpected argument "x"`},
	} {
		var out, errOut bytes.Buffer
		err := run(context.Background(), tc.args, &out, &errOut)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("run(%q) = %v, want an error containing %q", tc.args, err, tc.want)
		}
		if out.Len() != 0 {
			t.Errorf("run(%q) printed %q", tc.args, out.String())
		}
	}
}

func TestPorts(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"ports", "3"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(out.String())
	if len(lines) != 3 || lines[0] == lines[1] || lines[1] == lines[2] || lines[0] == lines[2] {
		t.Fatalf("ports 3 = %q, want three distinct ports", lines)
	}
}

// TestPick: a free port is kept, a port someone listens on and a port
// asked for twice are replaced by free ones, no two the same.
func TestPick(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	taken := l.Addr().(*net.TCPAddr).Port
	free, err := freePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pickPorts([]int{free[0], taken, free[0]})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0] != free[0] || got[1] == taken || got[2] == free[0] || got[1] == got[2] {
		t.Fatalf("pickPorts(%d, %d (taken), %d) = %v, want the first kept and two others, all distinct", free[0], taken, free[0], got)
	}
}

// TestFront: requests go round-robin over the ready backends; a backend
// whose /readyz fails, or that refuses a connection, leaves the rotation
// and comes back when /readyz answers 200; with none left the front
// answers 503.
func TestFront(t *testing.T) {
	var ready [2]atomic.Bool
	var srvs []*httptest.Server
	for i := range 2 {
		ready[i].Store(true)
		srvs = append(srvs, httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/readyz" {
				if !ready[i].Load() {
					w.WriteHeader(http.StatusServiceUnavailable)
				}
				return
			}
			body, _ := io.ReadAll(r.Body)
			fmt.Fprintf(w, "node%d %s %s %s %s", i, r.Method, r.URL.Path, r.Host, body)
		})))
	}
	defer func() {
		for _, s := range srvs {
			s.Close()
		}
	}()
	// A third backend that refuses connections.
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()

	o, err := parseFront([]string{"--listen", "127.0.0.1:0", "--backend", srvs[0].URL, "--backend", srvs[1].URL, "--backend", deadURL}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	var logMu sync.Mutex
	f := newFront(o, writerFunc(func(p []byte) (int, error) { logMu.Lock(); defer logMu.Unlock(); return log.Write(p) }))
	fs := httptest.NewServer(f.handler())
	defer fs.Close()

	post := func() (int, string) {
		t.Helper()
		resp, err := http.Post(fs.URL+"/csc/v1/info", "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	host := strings.TrimPrefix(fs.URL, "http://")
	got := map[string]int{}
	for range 6 {
		code, body := post()
		got[fmt.Sprint(code, " ", body)]++
	}
	want := map[string]int{
		"200 node0 POST /csc/v1/info " + host + " {}": 2,
		"200 node1 POST /csc/v1/info " + host + " {}": 2,
		"502 bad gateway\n":                           1, // the dead backend, once: then it is out
	}
	// The sixth request went to a live node after the dead one left.
	if got["502 bad gateway\n"] != 1 || got["200 node0 POST /csc/v1/info "+host+" {}"]+got["200 node1 POST /csc/v1/info "+host+" {}"] != 5 {
		t.Fatalf("six requests: %v, want about %v", got, want)
	}
	if f.backends[2].healthy.Load() {
		t.Fatal("the backend that refused the connection is still in the rotation")
	}

	ready[0].Store(false)
	f.checkAll(context.Background())
	for range 4 {
		if code, body := post(); code != 200 || !strings.HasPrefix(body, "node1 ") {
			t.Fatalf("with node0 not ready: %d %q, want node1", code, body)
		}
	}
	ready[1].Store(false)
	f.checkAll(context.Background())
	if code, body := post(); code != http.StatusServiceUnavailable || body != "no healthy signd node\n" {
		t.Fatalf("with no node ready: %d %q, want 503", code, body)
	}
	ready[0].Store(true)
	f.checkAll(context.Background())
	if code, body := post(); code != 200 || !strings.HasPrefix(body, "node0 ") {
		t.Fatalf("node0 back: %d %q", code, body)
	}
	logMu.Lock()
	defer logMu.Unlock()
	for _, w := range []string{deadURL + " is down", srvs[0].URL + " not ready", srvs[0].URL + " healthy, back"} {
		if !strings.Contains(log.String(), w) {
			t.Errorf("log %q lacks %q", log.String(), w)
		}
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestCluster starts three members of one cluster, as scripts/demo-ha.sh
// does, writes through one and reads through another, and stops them.
func TestCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three etcd members")
	}
	ports, err := freePorts(6)
	if err != nil {
		t.Fatal(err)
	}
	var cluster []string
	for i := range 3 {
		cluster = append(cluster, fmt.Sprintf("m%d=http://127.0.0.1:%d", i+1, ports[3+i]))
	}
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 3)
	dir := t.TempDir()
	for i := range 3 {
		go func() {
			errs <- run(ctx, []string{"etcd", "--name", fmt.Sprintf("m%d", i+1), "--dir", fmt.Sprintf("%s/m%d", dir, i+1),
				"--client", fmt.Sprintf("http://127.0.0.1:%d", ports[i]), "--peer", fmt.Sprintf("http://127.0.0.1:%d", ports[3+i]),
				"--cluster", strings.Join(cluster, ",")}, io.Discard, io.Discard)
		}()
	}
	defer func() {
		cancel()
		for range 3 {
			if err := <-errs; err != nil {
				t.Error(err)
			}
		}
	}()
	cli := func(i int) *clientv3.Client {
		c, err := clientv3.New(clientv3.Config{Endpoints: []string{fmt.Sprintf("http://127.0.0.1:%d", ports[i])}, DialTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	rctx, rcancel := context.WithTimeout(ctx, time.Minute)
	defer rcancel()
	if _, err := cli(0).Put(rctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	resp, err := cli(2).Get(rctx, "k")
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "v" {
		t.Fatalf("get through member 3: %v %v", resp, err)
	}
	st, err := cli(1).MemberList(rctx)
	if err != nil || len(st.Members) != 3 {
		t.Fatalf("member list: %v %v", st, err)
	}
}
