package main

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/signd/signd/cmd/signd/sdnotify"
)

// notifySocket listens where NOTIFY_SOCKET points for the test (a
// unixgram socket, as systemd's) and returns what arrives.
func notifySocket(t *testing.T) <-chan string {
	t.Helper()
	dir, err := os.MkdirTemp("", "sdn") // short: sun_path is 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	t.Setenv("NOTIFY_SOCKET", path)
	states := make(chan string, 64)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				close(states)
				return
			}
			states <- string(buf[:n])
		}
	}()
	return states
}

// nextState waits for the next datagram, failing the test after 10 s.
func nextState(t *testing.T, states <-chan string, what string) string {
	t.Helper()
	select {
	case s := <-states:
		return s
	case <-time.After(10 * time.Second):
		t.Fatalf("no %s from the daemon within 10 s", what)
		return ""
	}
}

// TestSystemdNotify runs serve under a fake service manager: READY=1 comes
// once /readyz answers 200 on the listening socket, RELOADING=1 and READY=1
// around a reload, STOPPING=1 when the daemon shuts down, and nothing else
// without a watchdog.
func TestSystemdNotify(t *testing.T) {
	states := notifySocket(t)
	t.Setenv("WATCHDOG_USEC", "")
	e := newEnv(t, "")
	hup := make(chan struct{})
	addr, stop := e.startDaemonWith(func(a *app) { a.hup = hup })
	if s := nextState(t, states, "READY=1"); s != "READY=1" {
		t.Fatalf("first notification %q, want READY=1", s)
	}
	// Told ready, systemd starts what depends on signd: it must answer.
	res, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		t.Fatalf("readyz after READY=1: %v", err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("readyz after READY=1: %d", res.StatusCode)
	}
	// A reload (SIGHUP) is framed by RELOADING=1 and READY=1.
	hup <- struct{}{}
	for _, want := range []string{"RELOADING=1", "READY=1"} {
		if s := nextState(t, states, want); s != want {
			t.Fatalf("notification during a reload %q, want %s", s, want)
		}
	}
	stop()
	if s := nextState(t, states, "STOPPING=1"); s != "STOPPING=1" {
		t.Fatalf("notification at shutdown %q, want STOPPING=1", s)
	}
	select {
	case s, ok := <-states:
		if ok {
			t.Errorf("unexpected notification %q after STOPPING=1", s)
		}
	default:
	}
}

// TestSystemdNotifyWaitsForReadiness: while readiness says no (the token
// or the store does not answer yet), no READY=1; it comes once readiness
// says yes, and STOPPING=1 follows it.
func TestSystemdNotifyWaitsForReadiness(t *testing.T) {
	states := notifySocket(t)
	t.Setenv("WATCHDOG_USEC", "")
	var asked atomic.Int32
	ready := func(context.Context) bool { return asked.Add(1) >= 3 }
	stopping := sdnotify.Start(context.Background(), slog.New(slog.DiscardHandler), ready)
	s := nextState(t, states, "READY=1")
	if n := asked.Load(); s != "READY=1" || n < 3 {
		t.Fatalf("got %q after readiness was asked %d times; want READY=1 only once it says yes (3rd time)", s, n)
	}
	stopping()
	if s := nextState(t, states, "STOPPING=1"); s != "STOPPING=1" {
		t.Fatalf("got %q, want STOPPING=1", s)
	}
}

// TestSystemdNotifyOutsideSystemd: without NOTIFY_SOCKET nothing is asked
// or sent.
func TestSystemdNotifyOutsideSystemd(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	t.Setenv("WATCHDOG_USEC", "100000")
	asked := false
	stopping := sdnotify.Start(context.Background(), slog.New(slog.DiscardHandler), func(context.Context) bool {
		asked = true
		return true
	})
	stopping()
	if asked {
		t.Error("readiness asked without a service manager")
	}
}

// TestSystemdWatchdog: with WatchdogSec= (WATCHDOG_USEC) the daemon pings
// WATCHDOG=1 every half of it until shutdown; READY=1 comes once, then
// STOPPING=1 last.
func TestSystemdWatchdog(t *testing.T) {
	states := notifySocket(t)
	t.Setenv("WATCHDOG_USEC", "200000") // 200 ms: a ping every 100 ms
	t.Setenv("WATCHDOG_PID", "")
	e := newEnv(t, "")
	_, stop := e.startDaemon()
	count := map[string]int{}
	for count["WATCHDOG=1"] < 3 || count["READY=1"] == 0 {
		count[nextState(t, states, "WATCHDOG=1 and READY=1")]++
	}
	stop()
	for last := ""; last != "STOPPING=1"; {
		last = nextState(t, states, "STOPPING=1")
		count[last]++
	}
	if count["READY=1"] != 1 || count["STOPPING=1"] != 1 || len(count) != 3 {
		t.Errorf("notifications %v; want READY=1 and STOPPING=1 once, WATCHDOG=1 and nothing else", count)
	}
}
