package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/signd/signd/cmd/signd/daemonaudit"
	"github.com/signd/signd/config"
	"github.com/signd/signd/oidc"
	"github.com/signd/signd/store"
)

// newKeyRing builds the OIDC signing-key ring over a store and a key store
// (the daemon's token, or the admin CLI's lazily opened one). now may be
// nil (time.Now).
func newKeyRing(cfg *config.Config, st store.Store, keys oidc.KeyStore, now func() time.Time, logger *slog.Logger) *oidc.KeyRing {
	return &oidc.KeyRing{
		Store: keyRingView(st), HSM: keys, Algorithm: cfg.OIDC.SigningAlg,
		IDTokenTTL: cfg.OIDC.IDTokenTTL, Now: now, Logger: logger,
	}
}

// ensureSigningKeys makes sure the key ring holds an active key of RS256
// and of oidc.signing_alg, and signs once with each: a token that lacks the
// mechanism fails the start with the algorithm to choose instead. It then
// checks the algorithms clients registered: a client whose algorithm has
// no key that signs is logged as an error (its logins fail until the key
// exists), the daemon still starts. It returns the default algorithm's
// active key. rec records each key it changes, in the change's
// transaction.
func (s *services) ensureSigningKeys(ctx context.Context, rec oidc.Recorder) (*store.SigningKey, error) {
	// Where the token's capabilities are known before any key is made
	// (the mechanism list of C_GetMechanismList), a missing
	// CKM_EC_KEY_PAIR_GEN or CKM_RSA_PKCS_PSS could be refused here
	// without the generation attempt; until then the token's answer (or
	// hsm's ErrUnsupportedAlgorithm) to the generation or the probe
	// signature says it.
	active, err := s.keys.Ensure(ctx, rec)
	if err == nil {
		err = s.probeSigningKeys(ctx, s.keys.Required())
	}
	if u := (*oidc.UnsupportedAlgorithmError)(nil); errors.As(err, &u) {
		if u.Algorithm == s.keys.DefaultAlg() {
			return nil, fmt.Errorf("oidc.signing_alg %v", u)
		}
		return nil, fmt.Errorf("oidc: every provider signs RS256 (OpenID Connect Core §15.1): %v", u)
	}
	if err != nil {
		return nil, err
	}
	var clients []store.Client
	if err := s.store.View(ctx, func(tx store.Tx) (err error) {
		clients, err = tx.Clients()
		return err
	}); err != nil {
		return nil, err
	}
	checked := map[string]error{} // algorithm → why no key signs with it
	for i := range clients {
		c := &clients[i]
		alg := c.IDTokenSignedResponseAlg
		if alg == "" || slices.Contains(s.keys.Required(), alg) {
			continue
		}
		err, done := checked[alg]
		if !done {
			if _, err = s.keys.EnsureAlg(ctx, alg, rec); err == nil {
				err = s.probeSigningKeys(ctx, []string{alg})
			}
			checked[alg] = err
		}
		if err != nil {
			s.logger.Error("oidc: no key signs the ID-token algorithm a client registered; its logins fail", "client_id", c.ID, "alg", alg, "err", err)
		}
	}
	return active, nil
}

// probeSigningKeys signs a throw-away JWS with the active key of each of
// algs, so that a token that can make a key but not sign with it (no
// CKM_RSA_PKCS_PSS for PS256) fails the start instead of every login.
func (s *services) probeSigningKeys(ctx context.Context, algs []string) error {
	for _, alg := range algs {
		if _, err := s.keys.Sign(ctx, alg, map[string]string{"probe": "signd start"}); err != nil {
			return err
		}
	}
	return nil
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
	// What the daemon changes by itself is audited (Actor "signd"), each
	// change in its transaction: a start that cannot audit it fails.
	rec := daemonaudit.OIDCKeys(s.now)
	active, err := s.ensureSigningKeys(ctx, rec)
	if err != nil {
		return nil, fmt.Errorf("oidc signing key: %w", err)
	}
	if _, err := s.keys.Purge(ctx, rec); err != nil {
		s.logger.Warn("oidc: purging expired signing keys failed", "err", err)
	}
	s.logger.Info("oidc signing key", "kid", active.KID, "alg", active.Algorithm)
	return &oidc.Provider{
		Issuer: s.cfg.Server.BaseURL, Claims: oidc.Claims{Namespace: c.ClaimNamespace},
		Store: s.views.oidc, Keys: s.keys, Subjects: subjects, IDTokenTTL: c.IDTokenTTL,
		Now: s.now, Logger: s.logger,
	}, nil
}
