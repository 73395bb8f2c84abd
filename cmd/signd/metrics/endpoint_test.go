package metrics

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// slowCollector blocks a scrape until released.
type slowCollector struct {
	desc             *prometheus.Desc
	entered, release chan struct{}
}

func (c *slowCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *slowCollector) Collect(ch chan<- prometheus.Metric) {
	close(c.entered)
	<-c.release
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, 1)
}

// TestMetricsEndpointDrains: shutdown stops accepting at once, lets a
// scrape in flight finish, and only then returns.
func TestMetricsEndpointDrains(t *testing.T) {
	m := New(Build{})
	slow := &slowCollector{desc: prometheus.NewDesc("signd_test_slow", "blocks a scrape", nil, nil), entered: make(chan struct{}), release: make(chan struct{})}
	m.reg.MustRegister(slow)
	ep, err := Listen("127.0.0.1:0", m, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	ep.Serve(errc)
	addr := ep.Addr()

	type result struct {
		status int
		body   string
		err    error
	}
	scrape := make(chan result, 1)
	go func() {
		res, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			scrape <- result{err: err}
			return
		}
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		scrape <- result{res.StatusCode, string(body), err}
	}()
	<-slow.entered // the scrape is in its handler

	stopped := make(chan error, 1)
	go func() { stopped <- ep.Shutdown(context.Background()) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			break // no longer accepting
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatal("still accepting after shutdown began")
		}
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case err := <-stopped:
		t.Fatalf("shutdown returned (%v) with a scrape in flight", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(slow.release)
	r := <-scrape
	if r.err != nil || r.status != http.StatusOK || !strings.Contains(r.body, "signd_test_slow 1") {
		t.Errorf("scrape in flight: %d %v %.200s", r.status, r.err, r.body)
	}
	if err := <-stopped; err != nil {
		t.Errorf("shutdown: %v", err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		t.Errorf("Serve returned %v", err)
	}
}
