package oauth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/oauth/ratelimit"
	"github.com/signd/signd/store"
)

// Config holds the dependencies and settings of a Server. Zero durations
// take the defaults of the oauth.* configuration keys.
type Config struct {
	Store Store
	// Profiles are the scope profiles; exactly one must match a request.
	Profiles []Profile
	// Issuer is server.base_url: the iss of every authorization response
	// and the realm of WWW-Authenticate. Its path (if any) prefixes the
	// browser flow's cookie paths (oauth/browser).
	Issuer string

	AccessTokenTTL time.Duration // default 1h
	SADTTL         time.Duration // default 5m
	// SweepBatch (default 32) is the most expired records Sweep removes
	// in one write transaction.
	SweepBatch int

	// TokenLimit throttles POST /oauth2/token per authenticated client
	// (ratelimit.token); nil = no limit (throttle.go).
	TokenLimit *ratelimit.Limiter

	Logger *slog.Logger     // nil = discard
	Now    func() time.Time // nil = time.Now
}

// Server is the authorization server. Build it with New and mount it with
// Mount.
type Server struct {
	cfg      Config
	store    Store
	profiles []Profile
	// infos[i] is profiles[i].Info(), read once by New.
	infos  []ProfileInfo
	byName map[string]Profile
	// detailTypes maps a profile's name to its ProfileInfo.DetailType.
	detailTypes map[string]string
	issuer      string
	log         *slog.Logger
	now         func() time.Time
	// dummySecret is compared when the client is unknown, so an unknown
	// client costs what a wrong secret costs.
	dummySecret string
}

// The routes, relative to the server root.
const (
	pathToken  = "/oauth2/token"
	pathRevoke = "/oauth2/revoke"
)

// New validates cfg and builds the server.
func New(cfg Config) (*Server, error) {
	switch {
	case cfg.Store == nil:
		return nil, errors.New("oauth: Config.Store is required")
	case len(cfg.Profiles) == 0:
		return nil, errors.New("oauth: at least one profile is required")
	}
	iss, err := url.Parse(cfg.Issuer)
	if err != nil || iss.Scheme == "" || iss.Host == "" {
		return nil, fmt.Errorf("oauth: issuer %q is not an absolute URL", cfg.Issuer)
	}
	if _, err := SerializeOrigin(cfg.Issuer, false); err != nil {
		return nil, fmt.Errorf("oauth: issuer %q is not an http(s) URL", cfg.Issuer)
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&cfg.AccessTokenTTL, time.Hour)
	def(&cfg.SADTTL, 5*time.Minute)
	if cfg.SweepBatch <= 0 {
		cfg.SweepBatch = defaultSweepBatch
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Server{
		cfg: cfg, store: cfg.Store, profiles: cfg.Profiles,
		byName:      map[string]Profile{},
		detailTypes: map[string]string{},
		issuer:      strings.TrimRight(cfg.Issuer, "/"),
		log:         cfg.Logger,
		now:         cfg.Now,
	}
	for _, p := range cfg.Profiles {
		info := p.Info()
		name := info.Name
		if name == "" {
			return nil, errors.New("oauth: a profile has no name")
		}
		if _, dup := s.byName[name]; dup {
			return nil, fmt.Errorf("oauth: two profiles are named %q", name)
		}
		s.byName[name] = p
		s.detailTypes[name] = info.DetailType
		s.infos = append(s.infos, info)
	}
	if s.dummySecret, err = NewSecret(); err != nil {
		return nil, err
	}
	s.dummySecret = store.HashSecret(s.dummySecret)
	return s, nil
}

// Mount registers the endpoints on g at the paths below (the daemon passes
// its root group):
//
//	POST      /oauth2/token       redeem a code (JSON)
//	POST      /oauth2/revoke      revoke an access token, SAD or refresh token (RFC 7009)
//
// Each route is tagged with its error dialect, which the Renderer (Echo's
// error handler) writes: RFC 6749 §5.2 JSON. The token endpoint is rate
// limited (throttle.go). /oauth2/authorize, the login and consent pages
// are oauth/browser's, the account page oauth/account's.
func (s *Server) Mount(g *echo.Group) error {
	token := WithDialect(tokenDialect())
	g.POST(pathToken, s.token, token)
	g.POST(pathRevoke, s.revoke, token)
	return nil
}

// Issuer returns the issuer (server.base_url without a trailing slash).
func (s *Server) Issuer() string { return s.issuer }

// ProfileOf returns the profile a stored grant names.
func (s *Server) ProfileOf(name string) (Profile, error) {
	p, ok := s.byName[name]
	if !ok {
		return nil, fmt.Errorf("oauth: no profile %q (stored by another configuration?)", name)
	}
	return p, nil
}

// InfoOf returns the ProfileInfo of the profile named name (zero if none).
func (s *Server) InfoOf(name string) ProfileInfo {
	for _, info := range s.infos {
		if info.Name == name {
			return info
		}
	}
	return ProfileInfo{}
}

// Match returns the one profile that claims scopes and its ProfileInfo,
// or invalid_scope.
func (s *Server) Match(scopes []string) (Profile, ProfileInfo, *Error) {
	if len(scopes) == 0 {
		return nil, ProfileInfo{}, Errorf(CodeInvalidScope, http.StatusBadRequest, "Missing parameter scope")
	}
	found := -1
	for i, p := range s.profiles {
		if !p.Match(scopes) {
			continue
		}
		if found >= 0 {
			return nil, ProfileInfo{}, Errorf(CodeInvalidScope, http.StatusBadRequest, "The requested scopes cannot be combined")
		}
		found = i
	}
	if found < 0 {
		return nil, ProfileInfo{}, Errorf(CodeInvalidScope, http.StatusBadRequest, "Unsupported scope")
	}
	return s.profiles[found], s.infos[found], nil
}

// Request builds the profile's view of a grant.
func (s *Server) Request(client *store.Client, user *store.User, g *store.Grant) *Request {
	return &Request{
		Client: client, User: user, Scopes: g.Scopes, RedirectURI: g.RedirectURI,
		Binding: Binding{Details: grantDetails(g, s.detailTypes[g.Profile]), Params: g.Params},
		Nonce:   g.Nonce, Lang: g.Lang, RequestedAt: g.RequestedAt, AuthTime: g.AuthTime,
		Login: loginPolicy(g),
	}
}

func loginPolicy(g *store.Grant) LoginPolicy {
	p := LoginPolicy{SSO: g.SSO, MaxAge: g.MaxAge, HasMaxAge: g.HasMaxAge}
	switch g.Prompt {
	case "none":
		p.Prompt = PromptNone
	case "login":
		p.Prompt = PromptLogin
	}
	return p
}

// PromptString is the stored form of p (store.Grant.Prompt), the inverse
// of the policy Request reads back.
func PromptString(p Prompt) string {
	switch p {
	case PromptNone:
		return "none"
	case PromptLogin:
		return "login"
	}
	return ""
}

// Client returns the client with id, or nil when there is none.
func (s *Server) Client(ctx context.Context, id string) (*store.Client, error) {
	var c *store.Client
	err := s.store.View(ctx, func(tx Tx) (err error) {
		c, err = tx.Client(id)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	return c, err
}
