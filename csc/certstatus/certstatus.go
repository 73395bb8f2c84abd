package certstatus

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/crypto/ocsp"

	"github.com/signd/signd/internal/crlscope"
)

// Status is a certificate chain's revocation status, as CSC v1 §11.5
// credentials/info reports it in cert.status (besides "expired", which
// the validity dates decide).
type Status string

// Statuses.
const (
	Valid     Status = "valid"
	Revoked   Status = "revoked"
	Suspended Status = "suspended" // revoked with reason certificateHold (RFC 5280 §5.3.1)
)

// Defaults of the Config fields.
const (
	DefaultRefresh    = time.Hour
	DefaultTimeout    = 10 * time.Second
	DefaultMaxCRLSize = 16 << 20
	DefaultOCSPMaxAge = time.Hour
	maxOCSPSize       = 1 << 20
	// maxEntries bounds the cache for chains Status meets that Refresh
	// has not seen.
	maxEntries = 1 << 16
	// kickGap spaces the refreshes Status asks for.
	kickGap = 2 * time.Second
	// fetchWorkers is how many chains a refresh checks at once: enough
	// that a few silent responders do not hold up the others, few enough
	// not to flood a CA's responder with one daemon's requests.
	fetchWorkers = 8
)

// Config holds a Checker's dependencies and settings.
type Config struct {
	// Client fetches CRLs and OCSP responses; nil = a client like
	// http.DefaultTransport's (the environment's proxy settings) whose
	// dialer refuses loopback, link-local, unspecified and multicast
	// addresses (see dialGuard). A Client given here dials as it likes
	// (tests put a fault-injecting transport here). Redirects are never
	// followed, by either.
	Client *http.Client
	// AllowLoopback lets the client New makes dial loopback addresses:
	// for tests only, whose certstatustest CA serves on 127.0.0.1.
	AllowLoopback bool
	// Timeout bounds each fetch (csc.cert_status.timeout); 0 = DefaultTimeout.
	Timeout time.Duration
	// Refresh is the interval of Run (csc.cert_status.refresh); 0 =
	// DefaultRefresh. An OCSP response without nextUpdate is good for
	// two (and at most OCSPMaxAge after its thisUpdate).
	Refresh time.Duration
	// MaxCRLSize caps a CRL's size in bytes; 0 = DefaultMaxCRLSize.
	MaxCRLSize int64
	// OCSPMaxAge is how long after its thisUpdate an OCSP response
	// without nextUpdate is current (csc.cert_status.ocsp_max_age,
	// RFC 6960 §4.2.2.1); 0 = DefaultOCSPMaxAge.
	OCSPMaxAge time.Duration
	Now        func() time.Time // nil = time.Now
	Logger     *slog.Logger     // nil = discard
	Metrics    Metrics          // nil = none
}

// Settings are the Config fields a running Checker lets change
// (Reconfigure): what csc.cert_status.* sets besides enabled. Zero fields
// take the defaults, as in Config.
type Settings struct {
	Refresh    time.Duration
	Timeout    time.Duration
	OCSPMaxAge time.Duration
}

// withDefaults fills in s's zero fields.
func (s Settings) withDefaults() Settings {
	if s.Timeout <= 0 {
		s.Timeout = DefaultTimeout
	}
	if s.Refresh <= 0 {
		s.Refresh = DefaultRefresh
	}
	if s.OCSPMaxAge <= 0 {
		s.OCSPMaxAge = DefaultOCSPMaxAge
	}
	return s
}

// Metrics receives what a Checker's refreshes find; cmd adapts it to
// Prometheus. Methods must be safe for concurrent use and must not block.
type Metrics interface {
	// ObserveCheck is called once per source asked about one certificate
	// in a refresh: source "ocsp" (a responder) or "crl" (a distribution
	// point), result "ok" (a usable answer) or "failed".
	ObserveCheck(source, result string)
	// SetUnusable is called after every refresh with how many of the
	// chains it was given cannot sign because of their certificate, by
	// why (each key of UnusableReasons, zero included): "expired"
	// (outside the leaf's validity), "revoked", "suspended" or "unknown"
	// (no current answer).
	SetUnusable(counts map[string]int)
}

// UnusableReasons are the keys of Metrics.SetUnusable.
var UnusableReasons = []string{"expired", "revoked", "suspended", "unknown"}

// Checker caches the revocation status of certificate chains. It is safe
// for concurrent use.
type Checker struct {
	cfg Config
	// set holds the Settings in use; cfg's copies of them are not read.
	set atomic.Pointer[Settings]

	mu      sync.RWMutex
	entries map[[32]byte]entry
	// kick asks Run for a refresh before the next tick: Status met a
	// chain to check that no refresh has seen (a certificate imported or
	// a credential enabled since).
	kick chan struct{}
	// again asks Run for a refresh at once: Reconfigure changed the
	// settings.
	again chan struct{}

	// hmu guards history: per certificate (certKey), what Refresh has
	// taken from its answers (history.go).
	hmu     sync.Mutex
	history map[[32]byte]*history
}

// entry is what is known of one chain.
type entry struct {
	status Status
	// until is when the answer stops being current; zero for a chain
	// with nothing to check (always current).
	until time.Time
	// open is what the Settings bound of until: the earliest thisUpdate
	// and the earliest fetch time of the OCSP answers without nextUpdate
	// it combines (zero: none), kept so that a tightened setting also
	// bounds an answer kept while its sources fail (capped).
	open struct{ this, fetched time.Time }
}

// capped returns e with until no later than s allows for its answers
// without nextUpdate: OCSPMaxAge after their thisUpdate and two Refresh
// intervals after their fetch, as ocsp decides for a fresh answer. It
// never moves until later (answers with nextUpdate end there, whatever
// the Settings): a loosened setting applies from the next answer fetched.
func (e entry) capped(s Settings) entry {
	if e.open.this.IsZero() {
		return e
	}
	for _, end := range []time.Time{e.open.this.Add(s.OCSPMaxAge), e.open.fetched.Add(2 * s.Refresh)} {
		if end.Before(e.until) {
			e.until = end
		}
	}
	return e
}

// New returns a Checker with cfg's defaults filled in.
func New(cfg Config) *Checker {
	if cfg.Client == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.DialContext = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second,
			Control: dialGuard(cfg.AllowLoopback)}).DialContext
		cfg.Client = &http.Client{Transport: tr}
	} else {
		cl := *cfg.Client
		cfg.Client = &cl
	}
	cfg.Client.CheckRedirect = refuseRedirect
	if cfg.MaxCRLSize <= 0 {
		cfg.MaxCRLSize = DefaultMaxCRLSize
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	c := &Checker{cfg: cfg, entries: map[[32]byte]entry{}, kick: make(chan struct{}, 1),
		again: make(chan struct{}, 1), history: map[[32]byte]*history{}}
	set := Settings{Refresh: cfg.Refresh, Timeout: cfg.Timeout, OCSPMaxAge: cfg.OCSPMaxAge}.withDefaults()
	c.set.Store(&set)
	return c
}

// settings returns the Settings in use.
func (c *Checker) settings() Settings { return *c.set.Load() }

// Reconfigure replaces the Settings (a SIGHUP reload of
// csc.cert_status.*) and, when they differ from those in use (zero fields
// taking the defaults), asks Run for a refresh at once, which fetches
// every chain's answers again from its sources with them; a refresh under
// way finishes with the old ones or the new, setting by setting. The
// answers taken so far stay until the refresh replaces them, but no
// longer current than the new settings allow (entry.capped): an answer
// without nextUpdate kept because its responder no longer answers stops
// being current OCSPMaxAge after its thisUpdate, as a fresh one would.
// Settings equal to those in use change nothing and fetch nothing, so
// that a reload for another reason (a certificate rotated by a cron job)
// does not send every credential's requests to the CAs' responders
// again. It reports whether the Settings changed.
func (c *Checker) Reconfigure(s Settings) bool {
	s = s.withDefaults()
	c.mu.Lock()
	if s == c.settings() {
		c.mu.Unlock()
		return false
	}
	c.set.Store(&s)
	for k, e := range c.entries {
		c.entries[k] = e.capped(s)
	}
	c.mu.Unlock()
	select {
	case c.again <- struct{}{}:
	default:
	}
	return true
}

func key(chain [][]byte) [32]byte {
	h := sha256.New()
	for _, der := range chain {
		fmt.Fprintf(h, "%d:", len(der))
		h.Write(der)
	}
	var k [32]byte
	h.Sum(k[:0])
	return k
}

// Status returns the last good answer for chain (DER certificates, leaf
// first) and whether it is current: false when the chain names a
// responder or distribution point and no answer was fetched yet, or the
// last one is past its nextUpdate. A chain never answered is Valid and
// not current. Status only reads the cache (it parses a chain it has not
// seen once, to learn whether it has anything to check, and then asks Run
// for a refresh).
func (c *Checker) Status(chain [][]byte) (Status, bool) {
	k := key(chain)
	c.mu.RLock()
	e, ok := c.entries[k]
	c.mu.RUnlock()
	if !ok {
		e = entry{status: Valid}
		if checkable(chain) {
			e.until = time.Unix(0, 0) // never answered: not current
			select {
			case c.kick <- struct{}{}:
			default:
			}
		}
		c.mu.Lock()
		if len(c.entries) < maxEntries {
			if _, raced := c.entries[k]; !raced {
				c.entries[k] = e
			}
		}
		c.mu.Unlock()
	}
	return e.status, e.until.IsZero() || c.cfg.Now().Before(e.until)
}

// checkable reports whether chain has something to check (see linkOf).
// An unparsable chain is checkable (and so never current).
func checkable(chain [][]byte) bool {
	certs := make([]*x509.Certificate, len(chain))
	for i, der := range chain {
		cert, err := x509.ParseCertificate(der)
		if err != nil {
			return true
		}
		certs[i] = cert
	}
	for i := range certs {
		if linkOf(certs, i) != skip {
			return true
		}
	}
	return false
}

// link says what to do with certificate i of a chain.
type link int

const (
	skip       link = iota // nothing to check
	check                  // check against certificate i+1, its issuer
	unverified             // names a source, but its issuer is not in the chain
)

// linkOf decides for certificate i of certs: a certificate that names no
// OCSP responder and no CRL has nothing to check; one whose issuer is the
// next in the chain is checked against it. The last certificate of a
// longer chain is where the chain ends (a root, or an intermediate whose
// root the relying party holds) and is not checked; a leaf alone that
// names a source cannot be verified without its issuer.
func linkOf(certs []*x509.Certificate, i int) link {
	cert := certs[i]
	switch {
	case !names(cert):
		return skip
	case i+1 < len(certs):
		return check
	case i == 0 && !isSelfSigned(cert):
		return unverified
	}
	return skip
}

func names(cert *x509.Certificate) bool {
	return len(cert.OCSPServer) > 0 || len(cert.CRLDistributionPoints) > 0
}

// Run calls Refresh with the chains list returns, at once, then every
// Config.Refresh — sooner when an answer would stop being current before
// then (see wait) — and whenever Status met a chain to check that no
// refresh has seen, and at once after Reconfigure, until ctx is done.
func (c *Checker) Run(ctx context.Context, list func(context.Context) ([][][]byte, error)) {
	t := time.NewTimer(c.settings().Refresh)
	defer t.Stop()
	for {
		chains, err := list(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			c.cfg.Logger.Error("certificate status: listing the credentials failed", "err", err)
		} else {
			c.Refresh(ctx, chains)
		}
		t.Reset(c.wait())
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-c.again:
		case <-c.kick:
			// At most one extra refresh per kickGap, however often
			// Status meets chains the store does not list.
			select {
			case <-ctx.Done():
				return
			case <-time.After(kickGap):
			}
		}
	}
}

// wait is how long Run waits for the next refresh: Config.Refresh, or
// until a margin (a minute, or a tenth of Refresh if shorter) before the
// first current answer stops being current (an OCSP response with a near
// nextUpdate, or without one and so OCSPMaxAge after its thisUpdate), so
// that its successor is fetched before signing has to stop; but at least
// that margin (and kickGap), so that an answer published close to its own
// end is not fetched again and again.
func (c *Checker) wait() time.Duration {
	refresh := c.settings().Refresh
	margin := min(refresh/10, time.Minute)
	floor := min(refresh, max(kickGap, margin))
	now := c.cfg.Now()
	d := refresh
	c.mu.RLock()
	for _, e := range c.entries {
		if !e.until.IsZero() && now.Before(e.until) {
			d = min(d, e.until.Sub(now)-margin)
		}
	}
	c.mu.RUnlock()
	return max(d, floor)
}

// Refresh fetches fresh answers for chains and publishes each chain's as
// soon as it is decided, so that a chain waits for its own sources only,
// not for the whole list: a chain whose fetch fails keeps its last good
// answer (but is revoked, or suspended, when the history of one of its
// certificates says so: see standing). At the end, chains not in the list
// are forgotten, and so is the history of certificates no listed chain
// holds.
//
// fetchWorkers chains are checked at once. Within one call each CRL is
// fetched once, and each certificate checked once against its issuer
// (the chains that share it wait for that check), and a host
// that did not answer (a connection refused, reset or timed out) is not
// asked again: its later OCSP requests and CRLs fail at once, so that a
// chain goes to its next source without waiting for the time limit again.
func (c *Checker) Refresh(ctx context.Context, chains [][][]byte) {
	p := &pass{crls: map[string]*flight[*x509.RevocationList]{}, links: map[[32]byte]*flight[linkAnswer]{},
		down: map[string]error{}, seen: map[[32]byte]bool{}}
	keys := make([][32]byte, len(chains))
	listed := make(map[[32]byte]bool, len(chains))
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(fetchWorkers, len(chains)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				c.refreshChain(ctx, p, chains[i], keys[i])
			}
		}()
	}
	for i, chain := range chains {
		keys[i] = key(chain)
		if !listed[keys[i]] {
			listed[keys[i]] = true
			work <- i
		}
	}
	close(work)
	wg.Wait()

	unusable := make(map[string]int, len(UnusableReasons))
	for _, r := range UnusableReasons {
		unusable[r] = 0
	}
	c.mu.Lock()
	for k := range c.entries {
		if !listed[k] {
			delete(c.entries, k)
		}
	}
	for i, chain := range chains {
		c.countUnusable(unusable, chain, c.entries[keys[i]])
	}
	c.mu.Unlock()
	c.forget(p.seen)
	if c.cfg.Metrics != nil {
		c.cfg.Metrics.SetUnusable(unusable)
	}
}

// refreshChain checks chain, whose key is k, and publishes its entry.
func (c *Checker) refreshChain(ctx context.Context, p *pass, chain [][]byte, k [32]byte) {
	got, err := c.check(ctx, p, chain)
	var standing Status
	if err != nil {
		standing = c.standing(chain)
	}
	c.mu.Lock()
	e, had := c.entries[k]
	switch {
	case err == nil:
		e = got
	case !had:
		e = entry{status: Valid, until: time.Unix(0, 0)}
	}
	// A revocation or hold taken about a certificate of the chain
	// (through another chain, or an earlier refresh) is not undone by
	// the last good answer.
	e.status = worse(e.status, standing)
	// The last good answer no longer current than the settings in use
	// allow now (they may have been tightened since it was fetched),
	// read under the lock that Reconfigure caps the entries under: a
	// Reconfigure during this refresh bounds what it keeps.
	e = e.capped(c.settings())
	c.entries[k] = e
	c.mu.Unlock()
	if err != nil {
		c.cfg.Logger.Warn("certificate status: no fresh answer", "subject", subject(chain), "err", err,
			"last_answer_until", e.until)
	} else if got.status != Valid {
		c.cfg.Logger.Warn("certificate status: signing certificate "+string(got.status), "subject", subject(chain))
	}
}

// pass is what the workers of one Refresh share.
type pass struct {
	mu sync.Mutex
	// crls holds each CRL fetched (or being fetched) in this pass, by
	// URL.
	crls map[string]*flight[*x509.RevocationList]
	// links holds each certificate's check against its issuer in this
	// pass (linkKey): an intermediate many chains share is asked about
	// once, and its history takes one answer, not several fetched
	// concurrently, of which one a second older than another would be
	// refused as a replay.
	links map[[32]byte]*flight[linkAnswer]
	// down holds the hosts that did not answer in this pass (breaker),
	// with the failure.
	down map[string]error
	// seen collects the certificates of the chains checked (certKey).
	seen map[[32]byte]bool
}

// flight is one piece of work of a pass that the workers share; done is
// closed when v or err is set.
type flight[T any] struct {
	done chan struct{}
	v    T
	err  error
}

// once returns the result of do for k in m (guarded by p.mu): done by
// whoever asks first, once per pass; the others wait for it. A CRL
// flight waits on nothing; a link flight waits on CRL flights only, so
// no wait is circular.
func once[K comparable, T any](ctx context.Context, p *pass, m map[K]*flight[T], k K, do func() (T, error)) (T, error) {
	p.mu.Lock()
	f, ok := m[k]
	if !ok {
		f = &flight[T]{done: make(chan struct{})}
		m[k] = f
	}
	p.mu.Unlock()
	if !ok {
		f.v, f.err = do()
		close(f.done)
	}
	select {
	case <-f.done:
		return f.v, f.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// linkAnswer is what checkOne returns.
type linkAnswer struct {
	status Status
	answer answer
}

// linkKey identifies the check of cert against issuer: a cross-signed
// issuer (the same name and key, another certificate) is the same
// check, whose OCSP CertID and signatures are the same.
func linkKey(cert, issuer *x509.Certificate) [32]byte {
	return key([][]byte{cert.Raw, issuer.RawSubject, issuer.RawSubjectPublicKeyInfo})
}

// skipped is the error of a fetch from a host that did not answer
// earlier in the pass (nil: go ahead).
func (p *pass) skipped(host string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err, ok := p.down[host]; ok {
		return fmt.Errorf("not asked: %s did not answer earlier in this refresh (%w)", host, err)
	}
	return nil
}

// trip marks host as not answering for the rest of the pass; it reports
// whether it was not so marked before.
func (p *pass) trip(host string, err error) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.down[host]; ok {
		return false
	}
	p.down[host] = err
	return true
}

// countUnusable adds chain, whose answer is e, to counts when its
// certificate keeps it from signing: the leaf's validity first, then the
// answer, as signHash refuses it.
func (c *Checker) countUnusable(counts map[string]int, chain [][]byte, e entry) {
	if c.cfg.Metrics == nil {
		return
	}
	now := c.cfg.Now()
	if len(chain) == 0 {
		return
	}
	if leaf, err := x509.ParseCertificate(chain[0]); err == nil && (now.Before(leaf.NotBefore) || now.After(leaf.NotAfter)) {
		counts["expired"]++
		return
	}
	switch {
	case e.status != Valid:
		counts[string(e.status)]++
	case !e.until.IsZero() && !now.Before(e.until):
		counts["unknown"]++
	}
}

func subject(chain [][]byte) string {
	if len(chain) == 0 {
		return ""
	}
	cert, err := x509.ParseCertificate(chain[0])
	if err != nil {
		return "(unparsable)"
	}
	return cert.Subject.String()
}

// check fetches the status of every link of chain, combined in an entry:
// its until is when the combined answer stops being current (zero:
// nothing to check). The certificates of chain are added to p.seen.
//
// Every link is asked, even after one failed: a link answered revoked
// or suspended decides the chain whatever the others did, so that status
// is returned (with until over the links that answered) and the failures
// are only logged; otherwise a failure is the error, and the chain has no
// fresh answer.
func (c *Checker) check(ctx context.Context, p *pass, chain [][]byte) (entry, error) {
	certs := make([]*x509.Certificate, len(chain))
	for i, der := range chain {
		cert, err := x509.ParseCertificate(der)
		if err != nil {
			return entry{}, fmt.Errorf("certificate %d: %w", i, err)
		}
		certs[i] = cert
	}
	// Before any check, which may fail: the history of a link is kept
	// while another link of its chain has no answer.
	p.mu.Lock()
	for _, cert := range certs {
		p.seen[certKey(cert)] = true
	}
	p.mu.Unlock()
	e := entry{status: Valid}
	var errs []error
	for i, cert := range certs {
		switch linkOf(certs, i) {
		case skip:
			continue
		case unverified:
			errs = append(errs, fmt.Errorf("%s names a revocation source but its issuer is not in the chain", cert.Subject))
			continue
		}
		issuer := certs[i+1]
		l, err := once(ctx, p, p.links, linkKey(cert, issuer), func() (linkAnswer, error) {
			s, a, err := c.checkOne(ctx, p, cert, issuer)
			return linkAnswer{s, a}, err
		})
		s, a := l.status, l.answer
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", cert.Subject, err))
			continue
		}
		e.status = worse(e.status, s)
		if e.until.IsZero() || a.until.Before(e.until) {
			e.until = a.until
		}
		if a.open {
			if e.open.this.IsZero() || a.this.Before(e.open.this) {
				e.open.this = a.this
			}
			if e.open.fetched.IsZero() || a.fetched.Before(e.open.fetched) {
				e.open.fetched = a.fetched
			}
		}
	}
	err := errors.Join(errs...)
	switch {
	case err == nil:
	case e.status != Valid:
		c.cfg.Logger.Warn("certificate status: a link without an answer, another "+string(e.status),
			"subject", subject(chain), "err", err)
	default:
		return entry{}, err
	}
	return e, nil
}

func isSelfSigned(cert *x509.Certificate) bool {
	return bytes.Equal(cert.RawIssuer, cert.RawSubject) && cert.CheckSignatureFrom(cert) == nil
}

func worse(a, b Status) Status {
	rank := map[Status]int{Valid: 0, Suspended: 1, Revoked: 2}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// checkOne asks cert's OCSP responders, then its CRL distribution points,
// and returns the first usable answer that its history takes, with the
// status the history leaves.
func (c *Checker) checkOne(ctx context.Context, p *pass, cert, issuer *x509.Certificate) (Status, answer, error) {
	var errs []error
	k := certKey(cert)
	for _, u := range cert.OCSPServer {
		a, err := c.ocsp(ctx, p, u, cert, issuer)
		var s Status
		if err == nil {
			s, err = c.take(k, "ocsp", a)
		}
		c.observeCheck("ocsp", err)
		if err == nil {
			return s, a, nil
		}
		errs = append(errs, fmt.Errorf("OCSP %s: %w", u, err))
	}
	for _, u := range cert.CRLDistributionPoints {
		crl, err := once(ctx, p, p.crls, u, func() (*x509.RevocationList, error) { return c.fetchCRL(ctx, p, u) })
		if err != nil {
			c.observeCheck("crl", err)
			errs = append(errs, fmt.Errorf("CRL %s: %w", u, err))
			continue
		}
		a, err := c.crlStatus(crl, cert, issuer)
		var s Status
		if err == nil {
			s, err = c.take(k, "crl", a)
		}
		c.observeCheck("crl", err)
		if err == nil {
			return s, a, nil
		}
		errs = append(errs, fmt.Errorf("CRL %s: %w", u, err))
	}
	return "", answer{}, errors.Join(errs...)
}

func (c *Checker) observeCheck(source string, err error) {
	if c.cfg.Metrics == nil {
		return
	}
	result := "ok"
	if err != nil {
		result = "failed"
	}
	c.cfg.Metrics.ObserveCheck(source, result)
}

// untilOf is how long an answer with nextUpdate next, fetched now, is good.
func (c *Checker) untilOf(now, next time.Time) time.Time {
	if next.IsZero() {
		return now.Add(2 * c.settings().Refresh)
	}
	return next
}

// fresh checks an answer's thisUpdate and nextUpdate against now.
func fresh(now, this, next time.Time) error {
	switch {
	case crlscope.Future(this, now): // beyond crlscope.Skew
		return fmt.Errorf("thisUpdate %s is in the future", this.UTC().Format(time.RFC3339))
	case !next.IsZero() && !now.Before(next):
		return fmt.Errorf("stale: nextUpdate %s has passed", next.UTC().Format(time.RFC3339))
	}
	return nil
}

// ocsp asks the responder u about cert. A response without nextUpdate
// ("newer information is available all the time", RFC 6960 §4.2.2.1) is
// current for OCSPMaxAge after its thisUpdate.
func (c *Checker) ocsp(ctx context.Context, p *pass, u string, cert, issuer *x509.Certificate) (answer, error) {
	req, err := ocsp.CreateRequest(cert, issuer, nil)
	if err != nil {
		return answer{}, err
	}
	body, err := c.fetch(ctx, p, http.MethodPost, u, req, maxOCSPSize)
	if err != nil {
		return answer{}, err
	}
	resp, err := ocsp.ParseResponseForCert(body, cert, issuer)
	if err != nil {
		return answer{}, err
	}
	// The library picked the single response by serial number alone.
	if err := matchCertID(body, req, cert.SerialNumber); err != nil {
		return answer{}, err
	}
	// A delegated responder must be certified by the issuer for
	// id-kp-OCSPSigning (RFC 6960 §4.2.2.2); the library checked the
	// issuer's signature on it.
	if rc := resp.Certificate; rc != nil && !bytes.Equal(rc.Raw, issuer.Raw) {
		if !hasEKU(rc, x509.ExtKeyUsageOCSPSigning) {
			return answer{}, errors.New("responder certificate lacks id-kp-OCSPSigning")
		}
		now := c.cfg.Now()
		if now.Before(rc.NotBefore) || now.After(rc.NotAfter) {
			return answer{}, errors.New("responder certificate is not valid now")
		}
	}
	now := c.cfg.Now()
	if err := fresh(now, resp.ThisUpdate, resp.NextUpdate); err != nil {
		return answer{}, err
	}
	a := answer{this: resp.ThisUpdate, until: c.untilOf(now, resp.NextUpdate),
		open: resp.NextUpdate.IsZero(), fetched: now}
	if a.open {
		maxAge := c.settings().OCSPMaxAge
		end := resp.ThisUpdate.Add(maxAge)
		if !now.Before(end) {
			return answer{}, fmt.Errorf("stale: no nextUpdate, and thisUpdate %s is more than %s ago",
				resp.ThisUpdate.UTC().Format(time.RFC3339), maxAge)
		}
		if end.Before(a.until) {
			a.until = end
		}
	}
	switch resp.Status {
	case ocsp.Good:
		a.status = Valid
	case ocsp.Revoked:
		a.status = Revoked
		if resp.RevocationReason == ocsp.CertificateHold {
			a.status = Suspended
		}
	default:
		return answer{}, errors.New("responder does not know the certificate")
	}
	return a, nil
}

func hasEKU(cert *x509.Certificate, want x509.ExtKeyUsage) bool {
	for _, u := range cert.ExtKeyUsage {
		if u == want {
			return true
		}
	}
	return false
}

func (c *Checker) fetchCRL(ctx context.Context, p *pass, u string) (*x509.RevocationList, error) {
	body, err := c.fetch(ctx, p, http.MethodGet, u, nil, c.cfg.MaxCRLSize)
	if err != nil {
		return nil, err
	}
	if b, _ := pem.Decode(body); b != nil && b.Type == "X509 CRL" {
		body = b.Bytes
	}
	return x509.ParseRevocationList(body)
}

// crlStatus reads cert's status from crl, which must be signed by issuer,
// a complete CRL for cert (crlscope.Covers), current, and say when it is
// superseded (nextUpdate).
func (c *Checker) crlStatus(crl *x509.RevocationList, cert, issuer *x509.Certificate) (answer, error) {
	if !bytes.Equal(crl.RawIssuer, issuer.RawSubject) {
		return answer{}, errors.New("issued by another CA")
	}
	if err := crl.CheckSignatureFrom(issuer); err != nil {
		return answer{}, fmt.Errorf("signature: %w", err)
	}
	if err := crlscope.Covers(crl, cert); err != nil {
		return answer{}, err
	}
	if crl.NextUpdate.IsZero() {
		// RFC 5280 §5.1.2.5: conforming CRL issuers MUST include it.
		return answer{}, errors.New("no nextUpdate: the CRL never says it is superseded")
	}
	now := c.cfg.Now()
	if err := fresh(now, crl.ThisUpdate, crl.NextUpdate); err != nil {
		return answer{}, err
	}
	a := answer{status: Valid, this: crl.ThisUpdate, until: c.untilOf(now, crl.NextUpdate), number: crl.Number}
	for _, e := range crl.RevokedCertificateEntries {
		if e.SerialNumber.Cmp(cert.SerialNumber) != 0 {
			continue
		}
		a.status = Revoked
		if e.ReasonCode == ocsp.CertificateHold {
			a.status = Suspended
		}
		break
	}
	return a, nil
}

// fetch does one request of at most max response bytes, over http or
// https only, unless u's host did not answer earlier in the pass p. A
// request or a response body that fails (the host does not answer in
// time, refuses the connection, resets it) marks the host as not
// answering for the rest of p; a refused redirect or address does not.
func (c *Checker) fetch(ctx context.Context, p *pass, method, rawURL string, body []byte, max int64) ([]byte, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, errors.New("not an http(s) URL")
	}
	if err := p.skipped(u.Host); err != nil {
		return nil, err
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, c.settings().Timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/ocsp-request")
	}
	unreachable := func(err error) error {
		var refused *refusedAddress
		// Not when the refresh itself is cancelled (a shutdown).
		if parent.Err() == nil && !errors.Is(err, errRedirect) && !errors.As(err, &refused) && p.trip(u.Host, err) {
			c.cfg.Logger.Warn("certificate status: a host did not answer, not asked again in this refresh",
				"host", u.Host, "err", err)
		}
		return err
	}
	resp, err := c.cfg.Client.Do(req)
	if err != nil {
		return nil, unreachable(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, unreachable(err)
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("response larger than %d bytes", max)
	}
	return data, nil
}

// errRedirect is the error of a fetch answered by a redirect: an OCSP
// responder or CRL distribution point is asked at the URL the
// certificate names, never sent on elsewhere (a redirect to
// http://127.0.0.1/ or http://169.254.169.254/ would make signd a
// proxy into its own network).
var errRedirect = errors.New("redirect refused")

func refuseRedirect(req *http.Request, _ []*http.Request) error {
	return fmt.Errorf("%w (to %s)", errRedirect, req.URL.Redacted())
}

// refusedAddress is the error of a dial to an address dialGuard refuses.
type refusedAddress struct{ addr netip.Addr }

func (e *refusedAddress) Error() string {
	return fmt.Sprintf("address %s refused: loopback, link-local, unspecified and multicast addresses are not fetched from", e.addr)
}

// thisNetwork is 0.0.0.0/8, "this network" (RFC 1122 §3.2.1.3), which
// Linux connects to the host itself.
var thisNetwork = netip.MustParsePrefix("0.0.0.0/8")

// dialGuard is the dialer Control of the client New makes: it refuses to
// connect to a loopback (unless allowLoopback), link-local (169.254/16,
// fe80::/10: cloud metadata services), unspecified or multicast address,
// after name resolution, so that neither a certificate's URL nor a name
// that resolves there reaches the box itself or its metadata service.
// Private addresses (10/8, 172.16/12, 192.168/16, fc00::/7) are allowed:
// a trust service provider's internal CA often serves OCSP on its LAN.
func dialGuard(allowLoopback bool) func(network, address string, _ syscall.RawConn) error {
	return func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("address %q refused: %w", address, err)
		}
		a := ap.Addr().Unmap()
		switch {
		case a.IsLoopback() && allowLoopback:
			return nil
		case a.IsLoopback(), a.IsLinkLocalUnicast(), a.IsLinkLocalMulticast(), a.IsInterfaceLocalMulticast(),
			a.IsMulticast(), a.IsUnspecified(), thisNetwork.Contains(a):
			return &refusedAddress{a}
		}
		return nil
	}
}
