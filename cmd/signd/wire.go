package main

import (
	"log/slog"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/cmd/signd/adminrpc"
	"github.com/signd/signd/cmd/signd/metrics"
	"github.com/signd/signd/cmd/signd/storeadmin"
	"github.com/signd/signd/cmd/signd/storeopen"
	"github.com/signd/signd/cmd/signd/version"
	"github.com/signd/signd/config"
	"github.com/signd/signd/csc"
	"github.com/signd/signd/csc/certstatus"
	"github.com/signd/signd/hsm"
	"github.com/signd/signd/oauth"
	"github.com/signd/signd/oauth/account"
	"github.com/signd/signd/oauth/browser"
	"github.com/signd/signd/oauth/pages"
	"github.com/signd/signd/oauth/passwords"
	"github.com/signd/signd/oidc"
	"github.com/signd/signd/store"
	"github.com/signd/signd/tsa"
)

// services is what the protocol services are built from. serve fills it once
// the store and token are open; each wire_*.go builds one service from it.
type services struct {
	cfg    *config.Config
	store  storeopen.Backend
	token  *hsm.Token
	hasher *store.Hasher
	// checkHook, when set, runs before each evaluation of the password
	// checker (app.checkHook).
	checkHook func()
	logger    *slog.Logger
	now       func() time.Time // never nil
	// onShutdown collects what the services need to stop (background
	// loops); serve runs them after the listeners drained.
	onShutdown []func()
	// metrics receives the services' measurements; nil = none.
	metrics *metrics.Metrics

	// keys is the OIDC signing-key ring; serve builds it once and shares it
	// with the admin service. mount builds one when it is nil.
	keys *oidc.KeyRing

	// pages renders every HTML page (ui.*); nil = the built-in look.
	pages *pages.Pages

	// views is the store typed once for every service (wire_store.go);
	// mount sets it.
	views *storeViews

	// revocation is the certificate status checker (wire_certstatus.go);
	// mount sets it, nil when csc.cert_status is off.
	revocation csc.Revocation
	// certStatusChecker is revocation's checker, which a SIGHUP reload
	// reconfigures; nil when csc.cert_status is off.
	certStatusChecker *certstatus.Checker
	// tsa finds the time-stamping key and certificate (wire_csc.go);
	// mount sets it, before the certificate status checker that checks
	// its chains too, nil when csc.timestamp is off.
	tsa *tsa.HSMSource
	// certStatusLoopback is app.certStatusLoopback (tests).
	certStatusLoopback bool

	// passwords checks passwords, one-time codes and signing PINs with
	// one lockout for the login, consent and account pages, auth/login
	// and credentials/authorize (wire_oauth.go); mount sets it.
	passwords *passwords.Checker

	// limits are the rate limits (wire_ratelimit.go); mount sets them.
	limits rateLimits
}

// mounter is what every HTTP service of the daemon is (oauth.Server,
// browser.Handler, account.Handler, csc.Handler, oidc.Provider on the public router; adminrpc.Handler and
// storeadmin.Handler on the admin socket's): it registers its routes on a
// group of the router and fails when it lacks a dependency.
type mounter interface {
	Mount(g *echo.Group) error
}

var (
	_ mounter = (*oauth.Server)(nil)
	_ mounter = (*browser.Handler)(nil)
	_ mounter = (*account.Handler)(nil)
	_ mounter = (*csc.Handler)(nil)
	_ mounter = (*oidc.Provider)(nil)
	_ mounter = (*adminrpc.Handler)(nil)
	_ mounter = storeadmin.Handler{}
)

// mount builds every protocol service and mounts it onto e, each with its
// own routes, error dialect and background work. The store is typed once
// for all of them (newStoreViews). The OpenID provider is built once: it
// serves its own routes and is the authorization server's openid scope
// profile.
func (s *services) mount(e *echo.Echo) error {
	s.views = newStoreViews(s.store)
	if s.cfg.CSC.Timestamp.Enabled {
		s.tsa = &tsa.HSMSource{Token: s.token, Records: s.views.tsaKeys, Label: s.cfg.CSC.Timestamp.Label, Now: s.now}
	}
	s.revocation = s.certStatus()
	var err error
	if s.limits, err = s.newRateLimits(); err != nil {
		return err
	}
	if s.keys == nil {
		s.keys = newKeyRing(s.cfg, s.store, s.token, s.now, s.logger)
	}
	provider, err := s.oidcProvider()
	if err != nil {
		return err
	}
	if s.passwords, err = s.passwordChecker(); err != nil {
		return err
	}
	authz, err := s.oauthServer(provider)
	if err != nil {
		return err
	}
	flow, err := s.browserFlow(authz)
	if err != nil {
		return err
	}
	signer, err := s.cscHandler(authz)
	if err != nil {
		return err
	}
	for _, m := range []struct {
		prefix string
		svc    mounter
	}{{"", authz}, {"", flow}, {"", s.accountPage(flow)}, {"", s.enrollPage(flow)}, {"/csc/v1", signer}, {"", provider}} {
		if err := m.svc.Mount(e.Group(m.prefix)); err != nil {
			return err
		}
	}
	return nil
}

// newMetrics is the daemon's collectors, signd_build_info naming this
// build.
func newMetrics() *metrics.Metrics {
	b := version.Info()
	return metrics.New(metrics.Build{Version: b.Version, Commit: b.Commit, GoVersion: b.GoVersion})
}
