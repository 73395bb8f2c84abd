package metrics

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/signd/signd/csc"
	"github.com/signd/signd/csc/certstatus"
	"github.com/signd/signd/hsm"
	"github.com/signd/signd/oauth/passwords"
	"github.com/signd/signd/oauth/ratelimit"
)

// Metrics holds the daemon's Prometheus collectors in a private registry
// (no global state): HTTP requests, the CSC signHash path, the SAD
// decisions, explicit authorization, certificate status, rate-limit
// refusals and the HSM. It implements hsm.Metrics, csc.Metrics,
// certstatus.Metrics, passwords.Metrics and ratelimit.Metrics.
type Metrics struct {
	reg *prometheus.Registry

	requests   *prometheus.CounterVec   // route, method, status
	requestDur *prometheus.HistogramVec // route
	signHash   *prometheus.HistogramVec // outcome
	sad        *prometheus.CounterVec   // outcome, reason
	hsmSign    *prometheus.HistogramVec // result
	poolWait   prometheus.Histogram
	hsmErrors  *prometheus.CounterVec // code
	authorize  *prometheus.CounterVec // result
	extend     *prometheus.CounterVec // result
	certChecks *prometheus.CounterVec // source, result
	certUnfit  *prometheus.GaugeVec   // status
	rateLimit  *prometheus.CounterVec // limit
	logins     *prometheus.CounterVec // method, result
	lockouts   *prometheus.CounterVec // secret
	readyFlips prometheus.Counter
	lastReady  atomic.Int32 // 0 unknown, 1 ready, 2 not ready
}

var (
	_ hsm.Metrics        = (*Metrics)(nil)
	_ csc.Metrics        = (*Metrics)(nil)
	_ certstatus.Metrics = (*Metrics)(nil)
	_ passwords.Metrics  = (*Metrics)(nil)
	_ ratelimit.Metrics  = (*Metrics)(nil)
)

// Build is the build of signd that runs, the labels of signd_build_info.
type Build struct {
	Version, Commit, GoVersion string
}

// New builds the collectors and registers them, with the Go runtime's and
// the process's, in a registry of their own.
func New(b Build) *Metrics {
	// 0.25 ms to about 4 s: an HSM signature takes about 1 ms, a pool wait
	// up to pkcs11.acquire_timeout.
	latencyBuckets := prometheus.ExponentialBuckets(0.00025, 2, 15)
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "signd_http_requests_total", Help: "HTTP requests by route template, method and status.",
		}, []string{"route", "method", "status"}),
		requestDur: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "signd_http_request_duration_seconds", Help: "HTTP request latency by route template.", Buckets: latencyBuckets,
		}, []string{"route"}),
		signHash: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "signd_csc_signhash_duration_seconds", Help: "CSC signatures/signHash latency by outcome (signed, refused, unavailable, error).", Buckets: latencyBuckets,
		}, []string{"outcome"}),
		sad: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "signd_csc_sad_total", Help: "SAD decisions of signHash: consumed, or refused with the reason.",
		}, []string{"outcome", "reason"}),
		hsmSign: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "signd_hsm_sign_duration_seconds", Help: "HSM signature latency, pool wait included, by result (ok, error).", Buckets: latencyBuckets,
		}, []string{"result"}),
		poolWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "signd_hsm_pool_wait_seconds", Help: "Wait for a PKCS#11 session from the pool.", Buckets: latencyBuckets,
		}),
		hsmErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "signd_hsm_errors_total", Help: "Failed PKCS#11 calls by return code name (recovered ones included).",
		}, []string{"code"}),
		authorize: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "signd_csc_authorize_total", Help: "CSC credentials/authorize requests by result (granted, wrong_pin, locked, refused, error).",
		}, []string{"result"}),
		extend: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "signd_csc_extend_transaction_total", Help: "CSC credentials/extendTransaction requests by result (granted, refused, error).",
		}, []string{"result"}),
		certChecks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "signd_certstatus_checks_total", Help: "Certificate status answers asked of a source about one certificate, by source (ocsp, crl) and result (ok, failed).",
		}, []string{"source", "result"}),
		certUnfit: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "signd_certstatus_disabled_credentials", Help: "Credentials whose certificate keeps them from signing at the last status refresh, by status (expired, revoked, suspended, unknown).",
		}, []string{"status"}),
		rateLimit: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "signd_ratelimit_refused_total", Help: "Requests refused (429) by a rate limit of ratelimit.*, by limit (timestamp, auth_login, token, forms).",
		}, []string{"limit"}),
	}
	m.logins = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "signd_login_attempts_total", Help: "Login attempts answered, by method (password: the login or account page; totp: those pages for an account with TOTP; auth_login: CSC auth/login) and result (ok, failed, locked, disabled).",
	}, []string{"method", "result"})
	m.lockouts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "signd_lockouts_total", Help: "Locks set by failed guesses (oauth.max_failures in a row), by secret: password (the account, timed or permanent) or pin (the signing PIN, until an admin unlocks it).",
	}, []string{"secret"})
	m.readyFlips = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "signd_readiness_changes_total", Help: "Times the readiness verdict changed between ready and not ready (every /readyz probe and scrape decides one).",
	})
	for _, l := range []string{"timestamp", "auth_login", "token", "forms"} {
		m.rateLimit.WithLabelValues(l) // every limit's series from the start, at 0
	}
	// The histograms' series from the start (an empty one is 0 events):
	// signHash's outcomes (signhash.Metrics) and the HSM's results.
	for _, o := range []string{"signed", "refused", "unavailable", "error"} {
		m.signHash.WithLabelValues(o)
	}
	m.hsmSign.WithLabelValues("ok")
	m.hsmSign.WithLabelValues("error")
	for _, method := range passwords.LoginMethods {
		for _, result := range passwords.LoginResults {
			m.logins.WithLabelValues(method, result)
		}
	}
	m.lockouts.WithLabelValues("password")
	m.lockouts.WithLabelValues("pin")
	buildGauge := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "signd_build_info", Help: "Always 1; the labels say which build of signd runs (version, commit, Go version).",
	}, []string{"version", "commit", "goversion"})
	buildGauge.WithLabelValues(b.Version, b.Commit, b.GoVersion).Set(1)
	m.reg.MustRegister(buildGauge, m.requests, m.requestDur, m.signHash, m.sad, m.hsmSign, m.poolWait, m.hsmErrors,
		m.authorize, m.extend, m.certChecks, m.certUnfit, m.rateLimit, m.logins, m.lockouts, m.readyFlips,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Registry is the registry every collector is in: what GET /metrics
// serves.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// WatchToken publishes the token's health: signd_hsm_available (1 while
// the token can sign, 0 during an outage, after a PIN error and at
// shutdown) and signd_hsm_outages_total (times a device error made it
// unavailable). Both are read from status at scrape time.
func (m *Metrics) WatchToken(status func() hsm.Status) {
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "signd_hsm_available", Help: "1 while the HSM token can sign, 0 while it is unavailable (reconnecting, PIN refused, closed).",
		}, func() float64 {
			if status().Available {
				return 1
			}
			return 0
		}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "signd_hsm_outages_total", Help: "Times a device-class PKCS#11 error made the HSM token unavailable.",
		}, func() float64 { return float64(status().Outages) }),
	)
}

// ObserveSign implements hsm.Metrics.
func (m *Metrics) ObserveSign(d time.Duration, err error) {
	result := "ok"
	if err != nil {
		result = "error"
	}
	m.hsmSign.WithLabelValues(result).Observe(d.Seconds())
}

// ObservePoolWait implements hsm.Metrics.
func (m *Metrics) ObservePoolWait(d time.Duration) { m.poolWait.Observe(d.Seconds()) }

// ObserveError implements hsm.Metrics.
func (m *Metrics) ObserveError(code string) {
	if code == "" {
		code = "unknown"
	}
	m.hsmErrors.WithLabelValues(code).Inc()
}

// ObserveSignHash implements csc.Metrics.
func (m *Metrics) ObserveSignHash(d time.Duration, outcome string) {
	m.signHash.WithLabelValues(outcome).Observe(d.Seconds())
}

// ObserveSAD implements csc.Metrics.
func (m *Metrics) ObserveSAD(outcome, reason string) {
	m.sad.WithLabelValues(outcome, reason).Inc()
}

// ObserveAuthorize implements csc.Metrics.
func (m *Metrics) ObserveAuthorize(method, result string) {
	if method == "extendTransaction" {
		m.extend.WithLabelValues(result).Inc()
		return
	}
	m.authorize.WithLabelValues(result).Inc()
}

// ObserveRateLimited implements ratelimit.Metrics.
func (m *Metrics) ObserveRateLimited(limit string) { m.rateLimit.WithLabelValues(limit).Inc() }

// ObserveLogin implements passwords.Metrics.
func (m *Metrics) ObserveLogin(method, result string) { m.logins.WithLabelValues(method, result).Inc() }

// ObserveLockout implements passwords.Metrics.
func (m *Metrics) ObserveLockout(secret string) { m.lockouts.WithLabelValues(secret).Inc() }

// ObserveReadiness records a readiness verdict (of a /readyz probe, a
// scrape or systemd's readiness check): signd_readiness_changes_total
// counts it when it differs from the one before.
func (m *Metrics) ObserveReadiness(ready bool) {
	v := int32(2)
	if ready {
		v = 1
	}
	if old := m.lastReady.Swap(v); old != 0 && old != v {
		m.readyFlips.Inc()
	}
}

// ObserveCheck implements certstatus.Metrics.
func (m *Metrics) ObserveCheck(source, result string) {
	m.certChecks.WithLabelValues(source, result).Inc()
}

// SetUnusable implements certstatus.Metrics.
func (m *Metrics) SetUnusable(counts map[string]int) {
	for status, n := range counts {
		m.certUnfit.WithLabelValues(status).Set(float64(n))
	}
}

// Middleware counts every request by route template (never the raw path,
// which would let clients create label values), method and final status.
// It is a Pre middleware, outside the router, the logger and the panic
// recovery, so it sees the status every response really got.
func (m *Metrics) Middleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		if err != nil && !c.Response().Committed {
			c.Error(err) // the server's error writer decides the status
			err = nil
		}
		route := c.Path()
		if route == "" || c.Response().Status == http.StatusNotFound && route != "/csc/v1/*" {
			route = "unmatched"
		}
		method := c.Request().Method
		switch method {
		case http.MethodGet, http.MethodPost, http.MethodHead, http.MethodPut, http.MethodDelete, http.MethodOptions, http.MethodPatch:
		default:
			method = "other"
		}
		m.requests.WithLabelValues(route, method, strconv.Itoa(c.Response().Status)).Inc()
		m.requestDur.WithLabelValues(route).Observe(time.Since(start).Seconds())
		return err
	}
}

// Endpoint is the listener of server.metrics_listen: GET /metrics and
// nothing else, apart from the public API, as node_exporter and Vault keep
// theirs. Its methods do nothing on a nil endpoint (metrics off).
type Endpoint struct {
	ln  net.Listener
	srv *http.Server
}

// Listen starts listening on addr for m's registry; "" means no metrics
// listener (nil, nil).
func Listen(addr string, m *Metrics, logger *slog.Logger) (*Endpoint, error) {
	if addr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("server.metrics_listen %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}))
	return &Endpoint{ln: ln, srv: &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    8 << 10,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}}, nil
}

// Addr is the address it listens on, "" when off.
func (me *Endpoint) Addr() string {
	if me == nil {
		return ""
	}
	return me.ln.Addr().String()
}

// Serve serves until shutdown; its end is sent to errc.
func (me *Endpoint) Serve(errc chan<- error) {
	if me != nil {
		go func() { errc <- me.srv.Serve(me.ln) }()
	}
}

// Shutdown stops accepting and drains scrapes in flight (Serve closes the
// listener; Close covers an endpoint that never served).
func (me *Endpoint) Shutdown(ctx context.Context) error {
	if me == nil {
		return nil
	}
	return me.srv.Shutdown(ctx)
}

// Close releases the listener of an endpoint that will not serve.
func (me *Endpoint) Close() {
	if me != nil {
		me.ln.Close()
	}
}

// Server is the endpoint's HTTP server, for a drain that shuts it down with
// the daemon's other servers.
func (me *Endpoint) Server() *http.Server { return me.srv }
