package oidc

import (
	"log/slog"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/oauth"
	"github.com/signd/signd/store"
)

// Paths the provider serves. The authorization server (package oauth)
// serves /oauth2/authorize, /oauth2/token and /oauth2/revoke.
const (
	PathDiscovery = "/.well-known/openid-configuration"
	PathJWKS      = "/.well-known/jwks.json"
	PathUserinfo  = "/userinfo"

	PathAuthorize = "/oauth2/authorize"
	PathToken     = "/oauth2/token"
	PathRevoke    = "/oauth2/revoke"
)

// Provider is the OpenID Connect provider: discovery, JWKS, /userinfo and
// ID tokens. Its fields are its dependencies; cmd fills them.
type Provider struct {
	// Issuer is server.base_url, exactly: the iss of every ID token and
	// the base of every endpoint URL.
	Issuer   string
	Claims   Claims
	Store    Store
	Keys     *KeyRing
	Subjects *Pairwise
	// IDTokenTTL is the ID-token lifetime (oidc.id_token_ttl).
	IDTokenTTL time.Duration
	Now        func() time.Time // nil = time.Now
	Logger     *slog.Logger     // nil = discard
}

func (p *Provider) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

func (p *Provider) log() *slog.Logger {
	if p.Logger != nil {
		return p.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// Mount registers the provider's routes on g at their paths (PathDiscovery,
// PathJWKS, PathUserinfo; the daemon passes its root group). Each route is
// tagged with the provider's error dialect, which the daemon's renderer
// writes.
func (p *Provider) Mount(g *echo.Group) error {
	errs := oauth.WithDialect(p.dialect())
	g.GET(PathDiscovery, p.discovery, errs)
	g.GET(PathJWKS, p.jwks, errs)
	bearer := oauth.RequireBearer(oauth.BearerConfig{
		Store: store.ViewAs(p.Store, func(tx Tx) oauth.BearerTx { return tx }),
		Now:   p.Now, Realm: p.Issuer, Scope: ScopeOpenID, AllowFormBody: true,
	})
	g.GET(PathUserinfo, p.userinfo, errs, bearer)
	g.POST(PathUserinfo, p.userinfo, errs, bearer)
	return nil
}
