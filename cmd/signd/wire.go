package main

import (
	"log/slog"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/config"
	"github.com/signd/signd/hsm"
	"github.com/signd/signd/oidc"
	"github.com/signd/signd/store"
)

// services is what the protocol services are built from. serve fills it once
// the store and token are open; each wire_*.go mounts one service on it.
type services struct {
	cfg    *config.Config
	store  backend
	token  *hsm.Token
	hasher *store.Hasher
	logger *slog.Logger
	now    func() time.Time // never nil
	// onShutdown collects what the services need to stop (background
	// loops); serve runs them after the listeners drained.
	onShutdown []func()
	// metrics receives the CSC measurements (metrics.go); nil = none.
	metrics *metrics

	// oidc is the OpenID Connect provider, built once by oidcProvider
	// (wire_oidc.go) for both its routes and its oauth scope profile.
	oidc *oidc.Provider

	// views is the store typed once for every service (wire_store.go);
	// mount sets it.
	views *storeViews
}

// mount wires every protocol service onto e. Each service brings its own
// routes, error writer and background work.
func (s *services) mount(e *echo.Echo) error {
	s.views = newStoreViews(s.store)
	for _, m := range []func(*echo.Echo) error{s.mountOAuth, s.mountCSC, s.mountOIDC} {
		if err := m(e); err != nil {
			return err
		}
	}
	return nil
}
