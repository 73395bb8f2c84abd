package main

import (
	"net/url"
	"strings"

	"github.com/signd/signd/config"

	"github.com/signd/signd/csc"
	"github.com/signd/signd/oauth"
	"github.com/signd/signd/oauth/account"
	"github.com/signd/signd/oauth/authlogin"
	"github.com/signd/signd/oauth/browser"
	"github.com/signd/signd/oauth/pages"
	"github.com/signd/signd/oauth/passwords"
	"github.com/signd/signd/oidc"
	"github.com/signd/signd/store"
)

// oauthServer builds the authorization server (/oauth2/*) with the scope
// profiles service and credential (csc) and openid (the provider), and
// starts the background sweep of expired tokens, SAD, codes, requests and
// login sessions.
func (s *services) oauthServer(provider *oidc.Provider) (*oauth.Server, error) {
	o := s.cfg.OAuth
	srv, err := oauth.New(oauth.Config{
		Store: s.views.oauth,
		Profiles: []oauth.Profile{
			csc.ServiceProfile{},
			&csc.CredentialProfile{Store: s.views.credential, Now: s.now, Revocation: s.revocation,
				MaxSignatures: s.cfg.CSC.MaxHashesPerRequest},
			&oidc.Profile{Provider: provider},
		},
		Issuer:         s.cfg.Server.BaseURL,
		AccessTokenTTL: o.AccessTokenTTL,
		SADTTL:         o.SADTTL,
		SweepBatch:     o.SweepBatch,
		TokenLimit:     s.limits.token,
		Logger:         s.logger.With("service", "oauth"),
		Now:            s.now,
	})
	if err != nil {
		return nil, err
	}
	s.onShutdown = append(s.onShutdown, s.startSweeper(srv, o.SweepInterval))
	return srv, nil
}

// The checker every door asks about passwords and PINs (csc's
// credentials/authorize: wire_csc.go); the authorization server the browser
// flow builds on; the login session the account page shares.
var (
	_ authlogin.Passwords = (*passwords.Checker)(nil)
	_ browser.Passwords   = (*passwords.Checker)(nil)
	_ account.Passwords   = (*passwords.Checker)(nil)
	_ browser.Core        = (*oauth.Server)(nil)
	_ account.Sessions    = (*browser.Handler)(nil)
)

// browserFlow builds the browser flow of authz (/oauth2/authorize, the
// login and consent pages) with the oauth.* timeouts and the forms' rate
// limit.
func (s *services) browserFlow(authz *oauth.Server) (*browser.Handler, error) {
	o := s.cfg.OAuth
	return browser.New(browser.Config{
		Core:           authz,
		Store:          s.views.oauth,
		Passwords:      s.passwords,
		SecureCookies:  servedOverHTTPS(s.cfg),
		CodeTTL:        o.CodeTTL,
		LoginTimeout:   o.LoginTimeout,
		ConsentTimeout: o.ConsentTimeout,
		ProcessTimeout: o.ProcessTimeout,
		SessionTTL:     o.SessionTTL,
		FormLimit:      s.limits.forms,
		Logger:         s.logger.With("service", "oauth"),
		Now:            s.now,
		Pages:          s.pages,
	})
}

// accountPage builds the account page (/oauth2/account) over the login
// sessions of the browser flow: a signed-in user disables or enables their
// own credentials (csc.Account).
func (s *services) accountPage(flow *browser.Handler) *account.Handler {
	return &account.Handler{
		Backend:   &csc.Account{Store: s.views.account, Revocation: s.revocation, Now: s.now},
		Sessions:  flow,
		Passwords: s.passwords,
		Logger:    s.logger.With("service", "oauth"),
		Now:       s.now,
		Pages:     s.pages,
	}
}

// newPages builds the pages of every service with the ui.* branding;
// a template that does not parse or render stops the start, naming its
// file and line.
func newPages(cfg *config.Config) (*pages.Pages, error) {
	base := ""
	if u, err := url.Parse(cfg.Server.BaseURL); err == nil {
		base = strings.TrimRight(u.Path, "/")
	}
	return pages.New(pages.Options{
		TemplatesDir: cfg.UI.TemplatesDir, ProductName: cfg.UI.ProductName,
		LogoFile: cfg.UI.LogoFile, PrimaryColor: cfg.UI.PrimaryColor, BasePath: base,
		SecureCookies: servedOverHTTPS(cfg),
	})
}

// passwordChecker builds the checker of passwords, one-time codes and
// signing PINs, with the lockout of oauth.max_failures and oauth.lockout.*,
// which the authorization server's pages and the CSC API share. It logs
// as the authorization server.
func (s *services) passwordChecker() (*passwords.Checker, error) {
	o := s.cfg.OAuth
	cfg := passwords.Config{
		Store:       s.views.passwords,
		Hasher:      s.hasher,
		MaxFailures: o.MaxFailures,
		Lockout:     passwords.Lockout{Base: o.Lockout.Base, Max: o.Lockout.Max, PermanentAfter: o.Lockout.PermanentAfter},
		Logger:      s.logger.With("service", "oauth"),
		Now:         s.now,
	}
	if s.metrics != nil {
		cfg.Metrics = s.metrics
	}
	if s.checkHook != nil {
		cfg.Hasher = hookedHasher{s.hasher, s.checkHook}
	}
	return passwords.New(cfg)
}

// hookedHasher is the password checker's hasher with a hook before each
// evaluation (app.checkHook, tests).
type hookedHasher struct {
	*store.Hasher
	before func()
}

func (h hookedHasher) Check(encoded string, secret []byte) (bool, error) {
	h.before()
	return h.Hasher.Check(encoded, secret)
}

// servedOverHTTPS reports whether browsers reach signd over https: signd
// terminates TLS (server.tls) or server.base_url is https (a reverse proxy
// terminates it). It decides the pages' Secure, __Host- cookies
// (forms.PageCookie) and Strict-Transport-Security; a plain-http loopback
// base_url (development) gets neither.
func servedOverHTTPS(cfg *config.Config) bool {
	if cfg.Server.TLS.CertFile != "" {
		return true
	}
	u, err := url.Parse(cfg.Server.BaseURL)
	return err == nil && u.Scheme == "https"
}
