package main

import (
	"net/url"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/csc"
	"github.com/signd/signd/oauth"
)

// mountOAuth wires the authorization server onto e: /oauth2/*
// with the scope profiles service and credential (csc) and openid (oidc),
// and the background sweep of expired tokens, SAD, codes, requests and
// login sessions.
func (s *services) mountOAuth(e *echo.Echo) error {
	openid, err := s.oidcProfile()
	if err != nil {
		return err
	}
	o := s.cfg.OAuth
	srv, err := oauth.New(oauth.Config{
		Store:  s.views.oauth,
		Hasher: s.hasher,
		Profiles: []oauth.Profile{
			csc.ServiceProfile{},
			&csc.CredentialProfile{Store: s.views.credential, Now: s.now},
			openid,
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
		MaxFailures:    o.MaxFailures,
		Logger:         s.logger.With("service", "oauth"),
		Now:            s.now,
	})
	if err != nil {
		return err
	}
	srv.Mount(e)
	s.onShutdown = append(s.onShutdown, srv.StartSweeper(o.SweepInterval))
	return nil
}

func isHTTPS(baseURL string) bool {
	u, err := url.Parse(baseURL)
	return err == nil && u.Scheme == "https"
}
