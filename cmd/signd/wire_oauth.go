package main

import (
	"net/url"

	"github.com/signd/signd/csc"
	"github.com/signd/signd/oauth"
	"github.com/signd/signd/oauth/account"
	"github.com/signd/signd/oauth/passwords"
	"github.com/signd/signd/oidc"
)

// oauthServer builds the authorization server (/oauth2/*) with the scope
// profiles service and credential (csc) and openid (the provider), and
// starts the background sweep of expired tokens, SAD, codes, requests and
// login sessions.
func (s *services) oauthServer(provider *oidc.Provider) (*oauth.Server, error) {
	o := s.cfg.OAuth
	srv, err := oauth.New(oauth.Config{
		Store:     s.views.oauth,
		Passwords: s.passwords,
		Profiles: []oauth.Profile{
			csc.ServiceProfile{},
			&csc.CredentialProfile{Store: s.views.credential, Now: s.now, Revocation: s.revocation,
				MaxSignatures: s.cfg.CSC.MaxHashesPerRequest},
			&oidc.Profile{Provider: provider},
		},
		Issuer:         s.cfg.Server.BaseURL,
		SecureCookies:  s.cfg.Server.TLS.CertFile != "" || isHTTPS(s.cfg.Server.BaseURL),
		CodeTTL:        o.CodeTTL,
		AccessTokenTTL: o.AccessTokenTTL,
		SADTTL:         o.SADTTL,
		LoginTimeout:   o.LoginTimeout,
		ConsentTimeout: o.ConsentTimeout,
		ProcessTimeout: o.ProcessTimeout,
		SessionTTL:     o.SessionTTL,
		SweepBatch:     o.SweepBatch,
		TokenLimit:     s.limits.token,
		FormLimit:      s.limits.forms,
		Logger:         s.logger.With("service", "oauth"),
		Now:            s.now,
	})
	if err != nil {
		return nil, err
	}
	s.onShutdown = append(s.onShutdown, s.startSweeper(srv, o.SweepInterval))
	return srv, nil
}

// The checker the authorization server and the account page ask about
// passwords and PINs; the login session the account page shares.
var (
	_ oauth.Passwords   = (*passwords.Checker)(nil)
	_ account.Passwords = (*passwords.Checker)(nil)
	_ account.Sessions  = (*oauth.Server)(nil)
)

// accountPage builds the account page (/oauth2/account) over the login
// sessions of authz: a signed-in user disables or enables their own
// credentials (csc.Account).
func (s *services) accountPage(authz *oauth.Server) *account.Handler {
	return &account.Handler{
		Backend:   &csc.Account{Store: s.views.account, Revocation: s.revocation, Now: s.now},
		Sessions:  authz,
		Passwords: s.passwords,
		Logger:    s.logger.With("service", "oauth"),
		Now:       s.now,
	}
}

// passwordChecker builds the checker of passwords, one-time codes and
// signing PINs, with the lockout of oauth.max_failures and oauth.lockout.*,
// which the authorization server's pages and the CSC API share. It logs
// as the authorization server.
func (s *services) passwordChecker() (*passwords.Checker, error) {
	o := s.cfg.OAuth
	return passwords.New(passwords.Config{
		Store:       s.views.passwords,
		Hasher:      s.hasher,
		MaxFailures: o.MaxFailures,
		Lockout:     passwords.Lockout{Base: o.Lockout.Base, Max: o.Lockout.Max, PermanentAfter: o.Lockout.PermanentAfter},
		Logger:      s.logger.With("service", "oauth"),
		Now:         s.now,
	})
}

func isHTTPS(baseURL string) bool {
	u, err := url.Parse(baseURL)
	return err == nil && u.Scheme == "https"
}
