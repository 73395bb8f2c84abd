package main

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"math/big"
	"slices"

	"github.com/signd/signd/config"
	"github.com/signd/signd/csc"
	"github.com/signd/signd/csc/sad"
	"github.com/signd/signd/csc/signhash"
	"github.com/signd/signd/hsm"
	"github.com/signd/signd/oauth"
	"github.com/signd/signd/oauth/authlogin"
	"github.com/signd/signd/oauth/passwords"
	"github.com/signd/signd/store"
	"github.com/signd/signd/tsa"
)

// The concrete types csc runs on.
var (
	_ csc.Store              = (*store.Scoped[csc.Tx])(nil)
	_ csc.Signer             = (*hsm.Token)(nil)
	_ signhash.SchemeChecker = (*hsm.Token)(nil)
	_ csc.PSSReporter        = (*hsm.Token)(nil)
	_ csc.PasswordLogin      = (*authlogin.Login)(nil)
	_ csc.TokenRevoker       = (*oauth.Server)(nil)
	_ sad.PINChecker         = (*passwords.Checker)(nil)
)

// pageTokenSecret names the MAC key of credentials/list page tokens in the
// store's secrets bucket: generated on first start, kept across restarts.
const pageTokenSecret = "csc_page_token"

// cscHandler builds the CSC service (mounted under /csc/v1). auth/revoke
// is served by the authorization server authz and, with csc.auth_login,
// auth/login by a pageless login (oauth/authlogin) on its tokens; the
// passwords of auth/login and the signing PINs of credentials/authorize
// are checked by the password checker, with the pages' lockout.
func (s *services) cscHandler(authz *oauth.Server) (*csc.Handler, error) {
	key, err := s.store.Secret(context.Background(), pageTokenSecret, 32)
	if err != nil {
		return nil, fmt.Errorf("csc: page token key: %w", err)
	}
	var m csc.Metrics
	if s.metrics != nil {
		m = s.metrics
	}
	c := s.cfg.CSC
	h := &csc.Handler{
		Store:   s.views.csc,
		Signer:  s.token,
		BaseURL: s.cfg.Server.BaseURL,
		Info: csc.InfoConfig{
			Name: c.Name, Logo: c.Logo, Region: c.Region, Lang: c.Lang, Description: c.Description,
		},
		MaxResultsDefault: c.MaxResultsDefault,
		MaxResultsLimit:   c.MaxResultsLimit,
		MaxHashes:         c.MaxHashesPerRequest,
		PageTokenKey:      key,
		PIN:               s.passwords,
		SADTTL:            s.cfg.OAuth.SADTTL,
		Now:               s.now,
		Logger:            s.logger,
		Metrics:           m,
		Revoker:           authz,
		Revocation:        s.revocation,
		TimestampLimit:    s.limits.timestamp,
		AuthLoginLimit:    s.limits.authLogin,
		// A node of a cluster: a key its HSM lacks may be on the others'.
		Clustered: s.cfg.Store.BackendName() == config.BackendEtcd,
	}
	if c.AuthLogin {
		login, err := authlogin.New(authlogin.Config{
			Store: s.views.oauth, Passwords: s.passwords,
			ClientID: c.AuthLoginClient, Scope: "service", RefreshTTL: c.RefreshTokenTTL,
			AccessTokenTTL: s.cfg.OAuth.AccessTokenTTL, Logger: s.logger.With("service", "oauth"), Now: s.now,
		})
		if err != nil {
			return nil, err
		}
		h.Login = login
		s.checkAuthLoginClient(c.AuthLoginClient)
	}
	if c.Timestamp.Enabled {
		ts, err := s.timeStamper()
		if err != nil {
			return nil, err
		}
		h.TimeStamper = ts
	}
	return h, nil
}

// timeStamper builds the TSA of signatures/timestamp: tokens signed by the
// newest key on the token whose certificate is labelled csc.timestamp.label
// (s.tsa, which mount made).
func (s *services) timeStamper() (csc.TimeStamper, error) {
	c := s.cfg.CSC.Timestamp
	policy, err := tsa.ParsePolicy(c.Policy)
	if err != nil {
		return nil, fmt.Errorf("csc.timestamp.policy: %w", err)
	}
	a := &tsa.Authority{
		Source: s.tsa, Policy: policy,
		Accuracy: c.Accuracy, Now: s.now,
	}
	if _, _, err := a.Source.Current(context.Background()); err != nil {
		s.logger.Warn("csc: signatures/timestamp is enabled but cannot sign yet; it answers server_error until a TSA certificate is imported (signd tsa enroll, signd tsa import-cert)", "err", err)
	}
	return tsaStamper{a}, nil
}

// tsaStamper adapts tsa.Authority to csc.TimeStamper.
type tsaStamper struct{ a *tsa.Authority }

func (t tsaStamper) TimeStamp(ctx context.Context, hash crypto.Hash, digest []byte, nonce *big.Int) ([]byte, *big.Int, error) {
	tok, err := t.a.Stamp(ctx, tsa.Request{Hash: hash, Digest: digest, Nonce: nonce})
	if errors.Is(err, tsa.ErrNotEnrolled) {
		return nil, nil, fmt.Errorf("%w: %w", csc.ErrTimeStampNotEnrolled, err)
	}
	if err != nil {
		return nil, nil, err
	}
	return tok.DER, tok.Serial, nil
}

// checkAuthLoginClient warns at startup when csc.auth_login_client is not
// a registered client with scope service: auth/login then answers
// server_error until an operator adds it (which needs no restart).
func (s *services) checkAuthLoginClient(id string) {
	err := s.store.View(context.Background(), func(tx store.Tx) error {
		c, err := tx.Client(id)
		if err != nil {
			return err
		}
		if !slices.Contains(c.Scopes, "service") {
			return errors.New("not registered for scope service")
		}
		return nil
	})
	if err != nil {
		s.logger.Warn("csc.auth_login_client cannot receive tokens: auth/login will fail", "client_id", id, "err", err)
	}
}
