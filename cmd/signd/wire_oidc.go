package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/config"
	"github.com/signd/signd/oauth"
	"github.com/signd/signd/oidc"
	"github.com/signd/signd/store"
)

// newKeyRing builds the OIDC signing-key ring over a store and a key store
// (the daemon's token, or the admin CLI's lazily opened one). now may be
// nil (time.Now).
func newKeyRing(cfg *config.Config, st store.Store, keys oidc.KeyStore, now func() time.Time, logger *slog.Logger) *oidc.KeyRing {
	return &oidc.KeyRing{Store: keyRingView(st), HSM: keys, IDTokenTTL: cfg.OIDC.IDTokenTTL, Now: now, Logger: logger}
}

// oidcProvider builds the OpenID Connect provider once: it reads (or
// creates, 0600) the pairwise salt file and makes sure a signing key is
// active, generating the first one in the HSM on a fresh installation.
func (s *services) oidcProvider() (*oidc.Provider, error) {
	if s.oidc != nil {
		return s.oidc, nil
	}
	c := s.cfg.OIDC
	salt, err := oidc.LoadSalt(c.PairwiseSaltFile)
	if err != nil {
		return nil, err
	}
	subjects, err := oidc.NewPairwise(salt)
	if err != nil {
		return nil, err
	}
	keys := newKeyRing(s.cfg, s.store, s.token, s.now, s.logger)
	ctx := context.Background()
	active, err := keys.Ensure(ctx)
	if err != nil {
		return nil, fmt.Errorf("oidc signing key: %w", err)
	}
	if _, err := keys.Purge(ctx); err != nil {
		s.logger.Warn("oidc: purging expired signing keys failed", "err", err)
	}
	s.logger.Info("oidc signing key", "kid", active.KID)
	s.oidc = &oidc.Provider{
		Issuer: s.cfg.Server.BaseURL, Claims: oidc.Claims{Namespace: c.ClaimNamespace},
		Store: s.views.oidc, Keys: keys, Subjects: subjects, IDTokenTTL: c.IDTokenTTL,
		Now: s.now, Logger: s.logger,
	}
	return s.oidc, nil
}

// oidcProfile returns the openid scope profile for the authorization
// server's Config.Profiles.
func (s *services) oidcProfile() (oauth.Profile, error) {
	p, err := s.oidcProvider()
	if err != nil {
		return nil, err
	}
	return &oidc.Profile{Provider: p}, nil
}

// mountOIDC wires the OIDC service onto e: discovery, JWKS and
// /userinfo. The openid profile is registered with the authorization server
// by mountOAuth (oidcProfile).
func (s *services) mountOIDC(e *echo.Echo) error {
	p, err := s.oidcProvider()
	if err != nil {
		return err
	}
	p.Mount(e)
	return nil
}
