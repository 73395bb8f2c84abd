package reload

import (
	"context"
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"

	"github.com/signd/signd/cmd/signd/daemonaudit"
	"github.com/signd/signd/cmd/signd/httpserver"
	"github.com/signd/signd/config"
	"github.com/signd/signd/csc/certstatus"
	"github.com/signd/signd/store"
)

// Reloader applies what SIGHUP reloads without dropping a connection,
// the keys of the key table marked Reload: the TLS certificate and key
// (from server.tls.*, read again), log.level, the certificate-status
// settings (csc.cert_status.refresh, timeout and ocsp_max_age; when one
// changed, every credential's OCSP responders and CRLs are fetched again
// at once) and the provisioning API's certificate and key and CRL. The
// configuration is loaded again as at start (file, environment, flags);
// a configuration with problems, or a file that does not load, changes
// nothing. Every other key is read at start only: a reload that changes
// one (turning csc.cert_status or the provisioning API on or off, who may
// administer signd, a limit, the store...) is refused naming each such
// key, as is turning TLS on or off, and changes nothing, so that the
// reload's config_loaded entry records a configuration wholly in force.
type Reloader struct {
	// Load loads the configuration as at start.
	Load func() (*config.Config, error)
	// Start is the configuration the daemon started with: a reload that
	// changes a key of it without Reload is refused (nil = not checked).
	Start *config.Config
	// Level is the loggers' level, set to log.level.
	Level *slog.LevelVar
	// Certs serves the TLS certificate; nil without TLS.
	Certs *httpserver.CertSource
	// CertStatus is the certificate-status checker; nil when
	// csc.cert_status is off.
	CertStatus *certstatus.Checker
	// API reads the provisioning API's certificate and key and its CRL
	// (admin.api_cert_file, api_key_file, api_client_crl) of a
	// configuration; apply puts them in force, crl is the CRL it puts in
	// force (nil: none), recorded in the reload's config_loaded entry.
	// nil when admin.api_listen is empty.
	API    func(cfg *config.Config) (apply func(), crl *x509.RevocationList, err error)
	Logger *slog.Logger
	// Notify tells systemd a state (sdnotify.Send, or nothing before
	// READY=1).
	Notify func(state string)
	// Audit appends the reload's config_loaded entry: ok with the new
	// file's digest, or refused with why nothing changed; nil = none.
	Audit func(e *store.AuditEntry) error
	Now   func() time.Time
}

// Reload runs one reload and says what it did, or why it did nothing.
func (r *Reloader) Reload() error {
	cfg, err := r.Load()
	if err != nil {
		r.record(daemonaudit.ConfigRefused("configuration refused", r.Now()))
		return fmt.Errorf("reload: configuration refused, nothing changed: %w", err)
	}
	if (r.Certs != nil) != cfg.Server.TLS.Enabled() {
		r.record(daemonaudit.ConfigRefused("turning TLS on or off needs a restart", r.Now()))
		return fmt.Errorf("reload: turning TLS on or off needs a restart; nothing changed")
	}
	if keys := needRestart(r.Start, cfg); len(keys) > 0 {
		verb := "needs"
		if len(keys) > 1 {
			verb = "need"
		}
		why := strings.Join(keys, ", ") + " " + verb + " a restart"
		r.record(daemonaudit.ConfigRefused(why, r.Now()))
		return fmt.Errorf("reload: %s; nothing changed", why)
	}
	// csc.cert_status.enabled and admin.api_listen are read at start
	// only: needRestart refuses turning either on or off; these hold a
	// Reloader without Start to what it was given.
	cs := cfg.CSC.CertStatus
	if (r.CertStatus != nil) != cs.Enabled {
		r.record(daemonaudit.ConfigRefused("turning csc.cert_status on or off needs a restart", r.Now()))
		return fmt.Errorf("reload: turning csc.cert_status on or off needs a restart; nothing changed")
	}
	if (r.API != nil) != (cfg.Admin.APIListen != "") {
		r.record(daemonaudit.ConfigRefused("turning the provisioning API on or off needs a restart", r.Now()))
		return fmt.Errorf("reload: turning the provisioning API (admin.api_listen) on or off needs a restart; nothing changed")
	}
	applyAPI := func() {}
	var crl *x509.RevocationList
	if r.API != nil {
		apply, c, err := r.API(cfg)
		if err != nil {
			r.record(daemonaudit.ConfigRefused("provisioning API certificate or CRL not loaded", r.Now()))
			return fmt.Errorf("reload: %w; the previous certificate and CRL stay", err)
		}
		applyAPI, crl = apply, c
	}
	if r.Certs != nil {
		if err := r.Certs.Load(cfg.Server.TLS.CertFile, cfg.Server.TLS.KeyFile); err != nil {
			r.record(daemonaudit.ConfigRefused("TLS certificate or key not loaded", r.Now()))
			return fmt.Errorf("reload: %w; the previous certificate stays", err)
		}
	}
	applyAPI()
	r.Level.Set(cfg.Log.SlogLevel())
	refetch := false
	if r.CertStatus != nil {
		refetch = r.CertStatus.Reconfigure(certstatus.Settings{Refresh: cs.Refresh, Timeout: cs.Timeout, OCSPMaxAge: cs.OCSPMaxAge})
	}
	e := daemonaudit.ConfigLoaded(cfg, daemonaudit.ConfigReload, r.Now())
	if r.API != nil {
		daemonaudit.APIClientCRL(e, crl)
	}
	r.record(e)
	r.Logger.Info("reloaded", "tls", r.Certs != nil, "log_level", cfg.Log.Level, "cert_status", r.CertStatus != nil,
		"cert_status_refetch", refetch, "api", r.API != nil)
	return nil
}

// needRestart returns the keys without Reload whose value differs
// between start and cfg, in the order of the key table; none when start
// is nil.
func needRestart(start, cfg *config.Config) []string {
	if start == nil {
		return nil
	}
	var out []string
	for _, k := range start.Changed(cfg) {
		if !k.Reload {
			out = append(out, k.Name)
		}
	}
	return out
}

// record appends e to the audit log; a store that fails is logged (the
// reload has been applied, or refused, all the same).
func (r *Reloader) record(e *store.AuditEntry) {
	if r.Audit == nil {
		return
	}
	if err := r.Audit(e); err != nil {
		r.Logger.Error("reload: the audit entry could not be written", "outcome", e.Outcome, "err", err)
	}
}

// SIGHUP turns SIGHUP into values of the returned channel until ctx is
// done. signal.Notify runs before it returns: a SIGHUP after that never
// takes the default action (ending the process).
func SIGHUP(ctx context.Context) <-chan struct{} {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGHUP)
	ch := make(chan struct{})
	go func() {
		defer signal.Stop(sig)
		for {
			select {
			case <-ctx.Done():
				return
			case <-sig:
				select {
				case ch <- struct{}{}:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return ch
}

// Run reloads on every value of hup until ctx is done, telling systemd
// RELOADING=1 before and READY=1 after (sd_notify(3)) through notify.
func (r *Reloader) Run(ctx context.Context, hup <-chan struct{}) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			r.Notify(daemon.SdNotifyReloading)
			if err := r.Reload(); err != nil {
				r.Logger.Error("reload failed", "err", err)
			}
			r.Notify(daemon.SdNotifyReady)
		}
	}
}
