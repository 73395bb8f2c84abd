package metrics

import (
	"context"
	"crypto/x509"
	"errors"
	"log/slog"
	"os"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/signd/signd/checkpoint"
	"github.com/signd/signd/store"
)

// StateRefresh is how often the daemon reads the store for the metrics
// of State: every enabled credential's certificate and the audit
// log's length (and, on etcd, the database size). A scrape never reads the
// store: listing every credential per scrape would cost as much as the
// scrape interval allows. The certificates change only with an admin's
// act, and the expiry buckets are counted in days.
const StateRefresh = time.Minute

// expiryBuckets are the within_days labels of
// signd_credential_certificates_expiring: 0 counts the expired ones.
var expiryBuckets = []float64{0, 1, 7, 14, 30, 90}

// State publishes what the daemon reads rather than counts: the
// enabled credentials' certificate expiry, the audit log's length and its
// latest checkpoint, the store's size and whether it can write.
//
// Certificate expiry is published as counts by days left (cumulative like
// a histogram's buckets, but a gauge labelled within_days: promtool check
// metrics keeps le to histograms) and the soonest expiry in seconds, not
// as a gauge per credential: a TSP holds a credential per signer, thousands of
// series that change with every enrolment, and the questions an operator
// asks ("does anything expire within 14 days, and when is the next one?")
// need only these. `signd credential list` names them.
type State struct {
	db     store.Store
	now    func() time.Time
	logger *slog.Logger
	// checkpointDir and checkpointInterval are audit.checkpoint_dir ("":
	// no checkpoint metrics) and audit.checkpoint_interval.
	checkpointDir      string
	checkpointInterval time.Duration

	mu        sync.Mutex
	refreshed bool
	notAfter  []time.Time          // the enabled credentials' leaf not-after, sorted
	certs     map[string]certEntry // parsed leaves by credential ID
	auditSize uint64
	dbSize    int64 // etcd's database size; -1 unknown or bbolt

	byDays, soonest, auditEntries, storeSize, writable, cpAge, cpEntries, cpInterval *prometheus.Desc
}

// certEntry is a parsed leaf, kept while the credential is not updated.
type certEntry struct {
	updated  time.Time
	notAfter time.Time
}

// StateOptions is what State reads.
type StateOptions struct {
	// Store is the daemon's store. When it has Path() (bbolt) its file's
	// size is published; Health() (bbolt, etcd) says whether it can
	// write; Client() (etcd) asks the cluster for its database size.
	Store store.Store
	Now   func() time.Time
	// Logger hears of refreshes that failed.
	Logger *slog.Logger
	// CheckpointDir and CheckpointInterval are audit.checkpoint_dir ("":
	// no checkpoint metrics) and audit.checkpoint_interval.
	CheckpointDir      string
	CheckpointInterval time.Duration
}

// storeHealth is a store that says whether it can write; *bolt.DB and
// *etcd.DB are.
type storeHealth interface {
	// Health is nil, or wraps store.ErrCorrupt or store.ErrUnavailable.
	Health() error
}

// etcdClient is the etcd backend's client; *etcd.DB has it.
type etcdClient interface {
	Client() *clientv3.Client
}

// NewState builds the collector; WatchState registers and refreshes it.
func NewState(o StateOptions) *State {
	return &State{
		db: o.Store, now: o.Now, logger: o.Logger, checkpointDir: o.CheckpointDir, checkpointInterval: o.CheckpointInterval,
		dbSize: -1,
		byDays: prometheus.NewDesc("signd_credential_certificates_expiring",
			"Enabled credentials whose certificate expires within within_days days (cumulative; \"0\": expired, \"+Inf\": all), counted at the last store refresh (every minute).", []string{"within_days"}, nil),
		soonest: prometheus.NewDesc("signd_credential_certificate_soonest_expiry_seconds",
			"Seconds until the earliest notAfter of an enabled credential's certificate (negative once expired); absent without one.", nil, nil),
		auditEntries: prometheus.NewDesc("signd_audit_entries_total",
			"Entries in the audit log, every chain together (the sum of each chain head's sequence number: one chain on bbolt, one per node on etcd), read at the last store refresh.", nil, nil),
		storeSize: prometheus.NewDesc("signd_store_size_bytes",
			"Size of the store: the bbolt file (store.path); on etcd the database size of the largest member answering (etcd's quota applies to it).", nil, nil),
		writable: prometheus.NewDesc("signd_store_writable",
			"1 while the store can write (its health check), 0 after a failed write until a probe write succeeds.", nil, nil),
		cpAge: prometheus.NewDesc("signd_audit_checkpoint_age_seconds",
			"Seconds since the latest signed audit checkpoint in audit.checkpoint_dir was made (its time line); absent before the first.", nil, nil),
		cpEntries: prometheus.NewDesc("signd_audit_checkpoint_entries",
			"Audit entries the latest checkpoint covers (its tree size).", nil, nil),
		cpInterval: prometheus.NewDesc("signd_audit_checkpoint_interval_seconds",
			"audit.checkpoint_interval: how often the daemon signs a checkpoint; 0 = only on demand.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (s *State) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{s.byDays, s.soonest, s.auditEntries, s.storeSize, s.writable, s.cpAge, s.cpEntries, s.cpInterval} {
		ch <- d
	}
}

// Collect implements prometheus.Collector: the refreshed values, and
// those that cost a stat, a file read or a lock at scrape time.
func (s *State) Collect(ch chan<- prometheus.Metric) {
	now := s.now()
	s.mu.Lock()
	refreshed, notAfter, auditSize, dbSize := s.refreshed, s.notAfter, s.auditSize, s.dbSize
	s.mu.Unlock()
	if refreshed {
		for _, days := range expiryBuckets {
			limit := now.Add(time.Duration(days * float64(24*time.Hour)))
			n := sort.Search(len(notAfter), func(i int) bool { return notAfter[i].After(limit) })
			ch <- prometheus.MustNewConstMetric(s.byDays, prometheus.GaugeValue, float64(n), strconv.FormatFloat(days, 'f', -1, 64))
		}
		ch <- prometheus.MustNewConstMetric(s.byDays, prometheus.GaugeValue, float64(len(notAfter)), "+Inf")
		if len(notAfter) > 0 {
			ch <- prometheus.MustNewConstMetric(s.soonest, prometheus.GaugeValue, notAfter[0].Sub(now).Seconds())
		}
		ch <- prometheus.MustNewConstMetric(s.auditEntries, prometheus.CounterValue, float64(auditSize))
	}
	if p, ok := s.db.(interface{ Path() string }); ok {
		if fi, err := os.Stat(p.Path()); err == nil {
			ch <- prometheus.MustNewConstMetric(s.storeSize, prometheus.GaugeValue, float64(fi.Size()))
		}
	} else if dbSize >= 0 {
		ch <- prometheus.MustNewConstMetric(s.storeSize, prometheus.GaugeValue, float64(dbSize))
	}
	if h, ok := s.db.(storeHealth); ok {
		v := 1.0
		if h.Health() != nil {
			v = 0
		}
		ch <- prometheus.MustNewConstMetric(s.writable, prometheus.GaugeValue, v)
	}
	if s.checkpointDir != "" {
		ch <- prometheus.MustNewConstMetric(s.cpInterval, prometheus.GaugeValue, s.checkpointInterval.Seconds())
		if c, err := checkpoint.Peek(s.checkpointDir); err == nil && !c.Time.IsZero() {
			ch <- prometheus.MustNewConstMetric(s.cpAge, prometheus.GaugeValue, now.Sub(c.Time).Seconds())
			ch <- prometheus.MustNewConstMetric(s.cpEntries, prometheus.GaugeValue, float64(c.Size))
		}
	}
}

// refresh reads the enabled credentials' certificates and the audit log's
// length (and etcd's database size) for the next scrapes. A leaf already
// parsed is parsed again only when its credential was updated.
func (s *State) refresh(ctx context.Context) error {
	s.mu.Lock()
	old := s.certs
	s.mu.Unlock()
	certs := make(map[string]certEntry, len(old))
	var notAfter []time.Time
	var auditSize uint64
	err := s.db.View(ctx, func(tx store.Tx) error {
		cs, err := tx.Credentials("", "", 0)
		if err != nil {
			return err
		}
		for _, c := range cs {
			if c.Status != store.CredentialEnabled || len(c.Chain) == 0 {
				continue
			}
			e, ok := old[c.ID]
			if !ok || !e.updated.Equal(c.UpdatedAt) {
				leaf, err := x509.ParseCertificate(c.Chain[0])
				if err != nil {
					s.logger.Warn("metrics: a credential's certificate does not parse", "credential", c.ID, "err", err)
					continue
				}
				e = certEntry{updated: c.UpdatedAt, notAfter: leaf.NotAfter}
			}
			certs[c.ID] = e
			notAfter = append(notAfter, e.notAfter)
		}
		auditSize, err = tx.AuditSize()
		return err
	})
	if err != nil {
		return err
	}
	slices.SortFunc(notAfter, time.Time.Compare)
	dbSize := int64(-1)
	if el, ok := s.db.(etcdClient); ok {
		dbSize = etcdDBSize(ctx, el)
	}
	s.mu.Lock()
	s.refreshed, s.certs, s.notAfter, s.auditSize, s.dbSize = true, certs, notAfter, auditSize, dbSize
	s.mu.Unlock()
	return nil
}

// etcdDBSize is the largest database size among the cluster's members
// that answer (the client's endpoints); -1 when none does.
func etcdDBSize(ctx context.Context, el etcdClient) int64 {
	c := el.Client()
	size := int64(-1)
	for _, ep := range c.Endpoints() {
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		st, err := c.Status(sctx, ep)
		cancel()
		if err == nil {
			size = max(size, st.DbSize)
		}
	}
	return size
}

// run refreshes at once and then at every tick until ctx ends; a failed
// refresh is logged and the values before it stay published.
func (s *State) run(ctx context.Context, ticks <-chan time.Time) {
	for {
		if err := s.refresh(ctx); err != nil && !errors.Is(ctx.Err(), context.Canceled) {
			s.logger.Warn("metrics: reading the store failed; the credential and audit metrics keep their last values", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-ticks:
		}
	}
}

// WatchState registers the state collector and starts its refresh every
// StateRefresh (or at each of ticks, tests); stop ends it.
func (m *Metrics) WatchState(s *State, ticks <-chan time.Time) (stop func()) {
	m.reg.MustRegister(s)
	ctx, cancel := context.WithCancel(context.Background())
	ticker := time.NewTicker(StateRefresh)
	if ticks == nil {
		ticks = ticker.C
	}
	done := make(chan struct{})
	go func() { defer close(done); s.run(ctx, ticks) }()
	return func() { cancel(); ticker.Stop(); <-done }
}

// WatchReadiness publishes signd_ready, deciding readiness at each scrape
// with check (the /readyz verdict), which also records it.
func (m *Metrics) WatchReadiness(check func() bool) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "signd_ready", Help: "1 when signd is ready (the /readyz verdict, decided at this scrape), 0 when not.",
	}, func() float64 {
		if check() {
			return 1
		}
		return 0
	}))
}
