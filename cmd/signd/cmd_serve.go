package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"runtime/trace"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/signd/signd/admin"
	"github.com/signd/signd/cmd/signd/adminapi"
	"github.com/signd/signd/cmd/signd/adminrpc"
	"github.com/signd/signd/cmd/signd/cli"
	"github.com/signd/signd/cmd/signd/daemonaudit"
	"github.com/signd/signd/cmd/signd/httpserver"
	"github.com/signd/signd/cmd/signd/metrics"
	"github.com/signd/signd/cmd/signd/reload"
	"github.com/signd/signd/cmd/signd/sdnotify"
	"github.com/signd/signd/cmd/signd/storeadmin"
	"github.com/signd/signd/cmd/signd/storeopen"
	"github.com/signd/signd/config"
	"github.com/signd/signd/store"
)

// serveCmd is `signd serve` (cli.Deps.Serve); load reads the
// configuration as every command does.
func (a *app) serveCmd(load func(*cobra.Command) (*config.Config, error)) *cobra.Command {
	var traceFile string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the daemon: HTTP API on server.listen, admin API on server.admin_socket",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := load(cmd)
			if err != nil {
				return err
			}
			if traceFile != "" {
				stop, err := startTrace(traceFile)
				if err != nil {
					return err
				}
				defer stop()
			}
			return a.serve(cmd.Context(), cfg, func() (*config.Config, error) { return load(cmd) })
		},
	}
	// For profiling only (the signHash benchmark's phase table): not
	// listed in the help.
	cmd.Flags().StringVar(&traceFile, "trace", "", "write a runtime execution trace to this new file until the daemon stops")
	_ = cmd.Flags().MarkHidden("trace")
	return cmd
}

// startTrace writes a runtime execution trace (runtime/trace) to path, a
// new file (0600), until stop is called. Requests are trace tasks with
// their phases as regions; `signd-load phases` tabulates them.
func startTrace(path string) (stop func(), err error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("--trace: %w", err)
	}
	if err := trace.Start(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--trace: %w", err)
	}
	return func() {
		trace.Stop()
		f.Close()
	}, nil
}

// serve opens the store and the token, starts both listeners and blocks
// until ctx is done; then it stops accepting, drains in-flight requests of
// both listeners within server.shutdown_timeout (cutting what is left),
// closes the store and finalizes the token (in that order). SIGHUP runs
// load again and applies the TLS certificates, log.level, the
// certificate-status settings and the provisioning API's CRL
// (reload.Reloader).
func (a *app) serve(ctx context.Context, cfg *config.Config, load func() (*config.Config, error)) error {
	level := new(slog.LevelVar)
	level.Set(cfg.Log.SlogLevel())
	logger := newLeveledLogger(a.stderr, cfg.Log.Format, level)
	logger.Info("starting signd", "config", cfg.Source(), "listen", cfg.Server.Listen,
		"base_url", cfg.Server.BaseURL, "store", storeopen.Name(cfg),
		"pkcs11_module", cfg.PKCS11.Module, "token_label", cfg.PKCS11.TokenLabel)

	// The admin socket's directory is checked first: a daemon that cannot
	// keep its socket to itself must not start.
	adminGID, err := cfg.Server.AdminGID()
	if err != nil {
		return err
	}
	if err := adminrpc.PrepareDir(cfg.Server.AdminSocket); err != nil {
		return err
	}
	roles, err := cli.AdminRoles(cfg, logger)
	if err != nil {
		return err
	}
	if !roles.Map.Configured() {
		logger.Warn("admin.roles is not set: every user the admin socket serves (root, signd's own user, server.admin_group) holds every role, security_officer, administrator and auditor; there is no separation of duties")
	}

	// The provisioning API's CAs, roles, certificate and CRL, read before
	// the store opens: the CRL in force is part of the configuration
	// recorded below.
	api, err := prepareAPI(cfg, a.now, logger)
	if err != nil {
		return err
	}

	db, err := storeopen.Open(cfg, logger)
	if err != nil {
		return err
	}
	defer db.Close()
	// The configuration this daemon runs with, in the audit log before
	// anything else it does; a provisioning API's CRL older than the one
	// the log last recorded in force is refused (a restart does not undo
	// revocations, as a reload does not).
	loaded := daemonaudit.ConfigLoaded(cfg, daemonaudit.ConfigStart, a.clock())
	var crl *x509.RevocationList
	if api != nil {
		crl = api.gate.CRLInForce()
		daemonaudit.APIClientCRL(loaded, crl)
	}
	var rollback *daemonaudit.RollbackError
	if err := daemonaudit.AppendStart(ctx, db, loaded, crl); errors.As(err, &rollback) {
		return fmt.Errorf("admin.api_client_crl %s: %w", cfg.Admin.APIClientCRL, err)
	} else if err != nil {
		return fmt.Errorf("audit log: recording the configuration: %w", err)
	}
	mx := newMetrics()
	token, err := openToken(cfg, logger, mx)
	if err != nil {
		return err
	}
	defer token.Close()
	// Every start says which keys the token does not freeze (a warning
	// per key), in the background: the check reads every key (seconds on
	// a token with thousands), and a token that cannot list them now is
	// not a reason to stay down. It stops at shutdown, before the token
	// closes.
	checkCtx, stopCheck := context.WithCancel(ctx)
	checked := make(chan struct{})
	go func() {
		defer close(checked)
		infos, err := token.CheckKeys(checkCtx)
		switch {
		case err != nil && checkCtx.Err() == nil:
			logger.Warn("hsm: could not check the keys' freeze at start", "err", err)
		case err == nil:
			unfrozen := 0
			for _, k := range infos {
				if len(k.Defects) > 0 {
					unfrozen++
				}
			}
			logger.Info("hsm: checked the keys' freeze at start", "keys", len(infos), "unfrozen", unfrozen)
		}
	}()
	defer func() { stopCheck(); <-checked }()
	mx.WatchToken(token.Status)
	if st, ok := db.(commitStats); ok {
		mx.WatchEtcd(st.Stats)
	}
	hasher, err := a.startupHasher()
	if err != nil {
		return err
	}

	pg, err := newPages(cfg)
	if err != nil {
		return err
	}
	srv := &httpserver.Server{Store: db, Token: token, Logger: logger, BodyLimit: cfg.Server.BodyLimitBytes, TLS: cfg.Server.TLS.CertFile != "",
		HSTS: servedOverHTTPS(cfg), TrustedProxies: cfg.Server.TrustedProxyNets(), ClientIPHeader: cfg.Server.ClientIPHeader, Pages: pg, OnReadiness: mx.ObserveReadiness}
	mx.WatchReadiness(func() bool {
		status, _ := srv.Readiness(context.Background())
		return status == http.StatusOK
	})
	stopState := mx.WatchState(metrics.NewState(metrics.StateOptions{Store: db, Now: a.clock, Logger: logger,
		CheckpointDir: cfg.Audit.CheckpointDir, CheckpointInterval: cfg.Audit.CheckpointInterval}), a.stateTicks)
	defer stopState()
	e := srv.Echo()
	e.Pre(mx.Middleware)
	keys := newKeyRing(cfg, db, token, a.clock, logger) // one ring: the provider's and the admin service's
	svc := &services{cfg: cfg, store: db, token: token, hasher: hasher, logger: logger, now: a.clock, metrics: mx, keys: keys, pages: pg,
		checkHook: a.checkHook, certStatusLoopback: a.certStatusLoopback}
	defer func() {
		for _, stop := range svc.onShutdown {
			stop()
		}
	}()
	if err := svc.mount(e); err != nil {
		return err
	}
	checkpoints, stopCheckpoints, err := serveCheckpoints(cfg, db, token, e, a.checkpointTicks, a.clock, logger)
	if err != nil {
		return err
	}
	defer stopCheckpoints()

	httpLn, err := net.Listen("tcp", cfg.Server.Listen)
	if err != nil {
		return fmt.Errorf("server.listen %s: %w", cfg.Server.Listen, err)
	}
	httpSrv := &http.Server{
		Handler:           e,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    32 << 10,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	var certs *httpserver.CertSource
	if srv.TLS {
		certs = &httpserver.CertSource{}
		if err := certs.Load(cfg.Server.TLS.CertFile, cfg.Server.TLS.KeyFile); err != nil {
			httpLn.Close()
			return err
		}
		httpSrv.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: certs.GetCertificate}
		httpLn = tls.NewListener(httpLn, httpSrv.TLSConfig)
	}

	metricsEP, err := metrics.Listen(cfg.Server.MetricsListen, mx, logger)
	if err != nil {
		httpLn.Close()
		return err
	}
	adminLn, err := adminrpc.Listen(cfg.Server.AdminSocket, adminGID, roles.Map.Groups(), logger)
	if err != nil {
		httpLn.Close()
		metricsEP.Close()
		return err
	}
	defer os.Remove(cfg.Server.AdminSocket)
	ae := adminrpc.NewRouter(logger)
	var apiGate *adminapi.Gate
	if api != nil {
		apiGate = api.gate
	}
	local := admin.New(admin.Config{Store: db, Keys: token, Hasher: hasher, Now: a.now, Logger: logger, OIDCKeys: keys,
		TSALabel: cfg.CSC.Timestamp.Label, DualControl: cfg.Admin.DualControlOps(), PendingTTL: cfg.Admin.PendingTTL,
		RolesNow:      rolesNow(roles, apiGate),
		AuditKeyLabel: cfg.Audit.Label(), Checkpoints: checkpoints,
		EnrollBaseURL: cfg.Server.BaseURL, EnrollmentTTL: cfg.Admin.EnrollmentTTL})
	var apiSrv *http.Server
	var apiLn net.Listener
	var apiReload func(*config.Config) (func(), *x509.RevocationList, error)
	if api != nil {
		if apiSrv, apiLn, err = api.listen(local); err != nil {
			httpLn.Close()
			metricsEP.Close()
			adminLn.Close()
			return err
		}
		defer apiLn.Close()
		apiReload = api.reload
	}
	mounters := []mounter{
		&adminrpc.Handler{
			Service:   local,
			Principal: roles.Principal,
			Identify:  roles.Identify,
			Logger:    logger,
		},
	}
	if sa, ok := db.(storeadmin.Backend); ok { // the bbolt file; etcd has etcdctl
		mounters = append(mounters, storeadmin.Handler{DB: sa, Audit: db, Principal: roles.Principal, Now: a.clock, Logger: logger})
	}
	for _, m := range mounters {
		if err := m.Mount(ae.Group("")); err != nil {
			httpLn.Close()
			metricsEP.Close()
			adminLn.Close()
			return err
		}
	}
	if a.adminHook != nil {
		a.adminHook(ae)
	}
	adminSrv := &http.Server{Handler: ae, ReadHeaderTimeout: 10 * time.Second, ConnContext: adminrpc.ConnContext}

	errc := make(chan error, 4)
	go func() { errc <- httpSrv.Serve(httpLn) }()
	go func() { errc <- adminSrv.Serve(adminLn) }()
	if apiSrv != nil {
		go func() { errc <- apiSrv.Serve(apiLn) }()
		logger.Info("provisioning API listening", "admin_api_listen", apiLn.Addr().String())
		if a.apiReady != nil {
			a.apiReady(apiLn.Addr().String())
		}
	}
	metricsEP.Serve(errc)
	reloadCtx, stopReload := context.WithCancel(ctx)
	hup := a.hup
	if hup == nil {
		hup = reload.SIGHUP(reloadCtx)
	}
	var readySent atomic.Bool // systemd hears of reloads only once it heard READY=1
	reloaded := make(chan struct{})
	go func() {
		defer close(reloaded)
		notify := func(state string) {
			if readySent.Load() {
				sdnotify.Send(logger, state)
			}
		}
		(&reload.Reloader{Load: load, Start: cfg, Level: level, Certs: certs, CertStatus: svc.certStatusChecker, API: apiReload, Logger: logger, Notify: notify, Now: a.clock,
			Audit: func(e *store.AuditEntry) error { return daemonaudit.Append(reloadCtx, db, e) }}).Run(reloadCtx, hup)
	}()
	defer func() { stopReload(); <-reloaded }()
	stopping := sdnotify.Start(ctx, logger, func(ctx context.Context) bool {
		status, _ := srv.Readiness(ctx)
		readySent.Store(status == http.StatusOK)
		return status == http.StatusOK
	})
	logger.Info("signd ready", "listen", httpLn.Addr().String(), "admin_socket", cfg.Server.AdminSocket, "tls", srv.TLS,
		"metrics_listen", metricsEP.Addr())
	if a.metricsReady != nil {
		a.metricsReady(metricsEP.Addr())
	}
	if a.ready != nil {
		a.ready(httpLn.Addr().String(), cfg.Server.AdminSocket)
	}

	var serveErr error
	select {
	case <-ctx.Done():
		logger.Info("shutting down", "reason", context.Cause(ctx).Error())
	case serveErr = <-errc:
		logger.Error("listener failed", "err", serveErr)
	}
	stopping()
	servers := []httpserver.Named{{Name: "HTTP", Server: httpSrv}, {Name: "admin", Server: adminSrv}}
	if apiSrv != nil {
		servers = append(servers, httpserver.Named{Name: "provisioning API", Server: apiSrv})
	}
	if metricsEP != nil {
		servers = append(servers, httpserver.Named{Name: "metrics", Server: metricsEP.Server()})
	}
	httpserver.Drain(ctx, cfg.Server.ShutdownTimeout, logger, servers...)
	logger.Info("stopped")
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return serveErr
	}
	return nil
}

// startupHasher builds the password hasher, which checks the argon2id cost
// at start-up by hashing once with it (store.NewHasher: a refused or
// failing configuration stops the daemon here, not at the first login).
// That hash's working memory (store.DefaultArgon2Params: 64 MiB) is garbage
// once NewHasher returns, but the Go runtime would keep it mapped, and the
// collection that ran during the hash sets the next heap goal to twice
// that: the daemon would idle at about 90 MiB resident and grow to about
// 170 MiB before its next collection. debug.FreeOSMemory collects at once
// and returns the free pages to the kernel (docs/BENCHMARKS.md, "Idle
// memory"); it runs once, before the listeners accept.
func (a *app) startupHasher() (*store.Hasher, error) {
	h, err := a.hasher()
	if err != nil {
		return nil, err
	}
	debug.FreeOSMemory()
	return h, nil
}
