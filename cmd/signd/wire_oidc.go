package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/signd/signd/config"
	"github.com/signd/signd/oidc"
	"github.com/signd/signd/store"
)

// newKeyRing builds the OIDC signing-key ring over a store and a key store
// (the daemon's token, or the admin CLI's lazily opened one). now may be
// nil (time.Now).
func newKeyRing(cfg *config.Config, st store.Store, keys oidc.KeyStore, now func() time.Time, logger *slog.Logger) *oidc.KeyRing {
	return &oidc.KeyRing{Store: keyRingView(st), HSM: keys, IDTokenTTL: cfg.OIDC.IDTokenTTL, Now: now, Logger: logger}
}

// oidcProvider builds the OpenID Connect provider: it reads (or creates,
// 0600) the pairwise salt file and makes sure a signing key of the shared
// key ring is active, generating the first one in the HSM on a fresh
// installation.
func (s *services) oidcProvider() (*oidc.Provider, error) {
	c := s.cfg.OIDC
	salt, err := oidc.LoadSalt(c.PairwiseSaltFile)
	if err != nil {
		return nil, err
	}
	subjects, err := oidc.NewPairwise(salt)
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	active, err := s.keys.Ensure(ctx)
	if err != nil {
		return nil, fmt.Errorf("oidc signing key: %w", err)
	}
	if _, err := s.keys.Purge(ctx); err != nil {
		s.logger.Warn("oidc: purging expired signing keys failed", "err", err)
	}
	s.logger.Info("oidc signing key", "kid", active.KID)
	return &oidc.Provider{
		Issuer: s.cfg.Server.BaseURL, Claims: oidc.Claims{Namespace: c.ClaimNamespace},
		Store: s.views.oidc, Keys: s.keys, Subjects: subjects, IDTokenTTL: c.IDTokenTTL,
		Now: s.now, Logger: s.logger,
	}, nil
}
