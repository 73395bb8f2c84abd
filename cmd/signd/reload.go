package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"

	"github.com/signd/signd/cmd/signd/httpserver"
	"github.com/signd/signd/config"
	"github.com/signd/signd/store"
)

// reloader applies what SIGHUP reloads without dropping a connection: the
// TLS certificate and key (from server.tls.*, read again) and log.level.
// The configuration is loaded again as at start (file, environment,
// flags); a configuration with problems changes nothing. Other keys need a
// restart and are not looked at.
type reloader struct {
	load   func() (*config.Config, error)
	level  *slog.LevelVar
	certs  *httpserver.CertSource // nil without TLS
	logger *slog.Logger
	// notify tells systemd a state (sdnotify.Send, or nothing before READY=1).
	notify func(state string)
	// audit appends the reload's config_loaded entry: ok with the new
	// file's digest, or refused with why nothing changed.
	audit func(e *store.AuditEntry) error
	now   func() time.Time
}

// reload runs one reload and says what it did, or why it did nothing.
func (r *reloader) reload() error {
	cfg, err := r.load()
	if err != nil {
		r.record(configRefusedEntry("configuration refused", r.now()))
		return fmt.Errorf("reload: configuration refused, nothing changed: %w", err)
	}
	if (r.certs != nil) != cfg.Server.TLS.Enabled() {
		r.record(configRefusedEntry("turning TLS on or off needs a restart", r.now()))
		return fmt.Errorf("reload: turning TLS on or off needs a restart; nothing changed")
	}
	if r.certs != nil {
		if err := r.certs.Load(cfg.Server.TLS.CertFile, cfg.Server.TLS.KeyFile); err != nil {
			r.record(configRefusedEntry("TLS certificate or key not loaded", r.now()))
			return fmt.Errorf("reload: %w; the previous certificate stays", err)
		}
	}
	r.level.Set(cfg.Log.SlogLevel())
	r.record(configLoadedEntry(cfg, configReload, r.now()))
	r.logger.Info("reloaded", "tls", r.certs != nil, "log_level", cfg.Log.Level)
	return nil
}

// record appends e to the audit log; a store that fails is logged (the
// reload has been applied, or refused, all the same).
func (r *reloader) record(e *store.AuditEntry) {
	if r.audit == nil {
		return
	}
	if err := r.audit(e); err != nil {
		r.logger.Error("reload: the audit entry could not be written", "outcome", e.Outcome, "err", err)
	}
}

// sighup turns SIGHUP into values of the returned channel until ctx is
// done. signal.Notify runs before it returns: a SIGHUP after that never
// takes the default action (ending the process).
func sighup(ctx context.Context) <-chan struct{} {
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

// run reloads on every value of hup until ctx is done, telling systemd
// RELOADING=1 before and READY=1 after (sd_notify(3)) through notify.
func (r *reloader) run(ctx context.Context, hup <-chan struct{}) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			r.notify(daemon.SdNotifyReloading)
			if err := r.reload(); err != nil {
				r.logger.Error("reload failed", "err", err)
			}
			r.notify(daemon.SdNotifyReady)
		}
	}
}
