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

	"github.com/signd/signd/oauth/pages"
	"github.com/signd/signd/oauth/passwords"
	"github.com/signd/signd/oauth/ratelimit"
	"github.com/signd/signd/store"
)

// Config holds the dependencies and settings of a Server. Zero durations
// take the defaults of the oauth.* configuration keys.
type Config struct {
	Store Store
	// Passwords checks passwords, one-time codes and signing PINs with the
	// lockout (a *passwords.Checker, shared with the CSC API's
	// auth/login and credentials/authorize).
	Passwords Passwords
	// Profiles are the scope profiles; exactly one must match a request.
	Profiles []Profile
	// Issuer is server.base_url: the iss of every authorization response
	// and the realm of WWW-Authenticate. Its path (if any) prefixes the
	// session cookie's path.
	Issuer string
	// SecureCookies marks the session and browser binding cookies Secure
	// and names the binding cookie __Host-signd_flow (Path=/) instead of
	// signd_flow; set it when Issuer is https or TLS is configured.
	SecureCookies bool

	CodeTTL        time.Duration // default 60s
	AccessTokenTTL time.Duration // default 1h
	SADTTL         time.Duration // default 5m
	LoginTimeout   time.Duration // default 10m, from the authorize request to a completed login
	ConsentTimeout time.Duration // default 5m, from showing the consent page to its answer
	ProcessTimeout time.Duration // default 10m, from the authorize request to the redirect back
	SessionTTL     time.Duration // default 8h, login session (SSO)
	// SweepBatch (default 32) is the most expired records Sweep removes
	// in one write transaction.
	SweepBatch int

	// TokenLimit throttles POST /oauth2/token per authenticated client
	// (ratelimit.token); FormLimit the login form and the account page's
	// login and change forms per remote address (ratelimit.forms). nil =
	// no limit (throttle.go).
	TokenLimit, FormLimit *ratelimit.Limiter

	Logger *slog.Logger     // nil = discard
	Now    func() time.Time // nil = time.Now
}

// Passwords is what the authorization server asks of the password
// checker: the login page's and the account page's password and one-time
// code, auth/login's password, the consent page's signing PIN. Every door
// shares one lockout; *passwords.Checker is one.
type Passwords interface {
	Login(ctx context.Context, username, password, code string, now time.Time) (*store.User, bool, error)
	LoginWithoutCode(ctx context.Context, username, password string, now time.Time) (*store.User, bool, error)
	CheckPIN(ctx context.Context, username, pin string, otp *string) (passwords.PINResult, *store.User, error)
}

// Server is the authorization server. Build it with New and mount it with
// Mount.
type Server struct {
	cfg       Config
	store     Store
	passwords Passwords
	profiles  []Profile
	// infos[i] is profiles[i].Info(), read once by New.
	infos  []ProfileInfo
	byName map[string]Profile
	// detailTypes maps a profile's name to its ProfileInfo.DetailType.
	detailTypes map[string]string
	issuer      string
	origin      string // serialized origin of issuer: the only Origin the forms accept
	cookiePath  string
	pages       *pages.Pages
	log         *slog.Logger
	now         func() time.Time
	// dummySecret is compared when the client is unknown, so an unknown
	// client costs what a wrong secret costs.
	dummySecret string
	// bindingName and bindingPath name the browser binding cookie.
	bindingName, bindingPath string
}

// The routes, relative to the server root.
const (
	pathAuthorize = "/oauth2/authorize"
	pathLogin     = "/oauth2/login"
	pathConsent   = "/oauth2/consent"
	pathToken     = "/oauth2/token"
	pathRevoke    = "/oauth2/revoke"
)

// sessionCookie is the name of the login session cookie.
const sessionCookie = "signd_session"

// New validates cfg and builds the server.
func New(cfg Config) (*Server, error) {
	switch {
	case cfg.Store == nil:
		return nil, errors.New("oauth: Config.Store is required")
	case cfg.Passwords == nil:
		return nil, errors.New("oauth: Config.Passwords is required")
	case len(cfg.Profiles) == 0:
		return nil, errors.New("oauth: at least one profile is required")
	}
	iss, err := url.Parse(cfg.Issuer)
	if err != nil || iss.Scheme == "" || iss.Host == "" {
		return nil, fmt.Errorf("oauth: issuer %q is not an absolute URL", cfg.Issuer)
	}
	origin, err := serializeOrigin(cfg.Issuer, false)
	if err != nil {
		return nil, fmt.Errorf("oauth: issuer %q is not an http(s) URL", cfg.Issuer)
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&cfg.CodeTTL, 60*time.Second)
	def(&cfg.AccessTokenTTL, time.Hour)
	def(&cfg.SADTTL, 5*time.Minute)
	def(&cfg.LoginTimeout, 10*time.Minute)
	def(&cfg.ConsentTimeout, 5*time.Minute)
	def(&cfg.ProcessTimeout, 10*time.Minute)
	def(&cfg.SessionTTL, 8*time.Hour)
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
		cfg: cfg, store: cfg.Store, passwords: cfg.Passwords, profiles: cfg.Profiles,
		byName:      map[string]Profile{},
		detailTypes: map[string]string{},
		issuer:      strings.TrimRight(cfg.Issuer, "/"),
		origin:      origin,
		cookiePath:  strings.TrimRight(iss.Path, "/") + "/oauth2/",
		log:         cfg.Logger,
		now:         cfg.Now,
	}
	s.bindingName, s.bindingPath = bindingCookiePlain, s.cookiePath
	if cfg.SecureCookies {
		s.bindingName, s.bindingPath = bindingCookieSecure, "/" // a __Host- cookie must have Path=/
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
	if s.pages, err = pages.New(); err != nil {
		return nil, err
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
//	GET, POST /oauth2/authorize   start a flow (login or consent page, or a redirect)
//	POST      /oauth2/login       answer the login page
//	POST      /oauth2/consent     answer the consent page
//	POST      /oauth2/token       redeem a code (JSON)
//	POST      /oauth2/revoke      revoke an access token, SAD or refresh token (RFC 7009)
//
// Each route is tagged with its error dialect, which the Renderer (Echo's
// error handler) writes: the pages answer with an HTML page or a redirect,
// the token and revocation endpoints with RFC 6749 §5.2 JSON.
// The login and consent forms refuse posts from other sites
// (sameOriginOnly); authorize does not, as a client may post to it. The
// login form and the token endpoint are rate limited (throttle.go). The
// account page (/oauth2/account) is oauth/account's, on the login session
// of this server (session.go).
func (s *Server) Mount(g *echo.Group) error {
	page, token := WithDialect(PageDialect()), WithDialect(tokenDialect())
	g.GET(pathAuthorize, s.authorize, page)
	g.POST(pathAuthorize, s.authorize, page)
	g.POST(pathLogin, s.login, page, s.sameOriginOnly, s.LimitForms(s.loginLang))
	g.POST(pathConsent, s.consent, page, s.sameOriginOnly)
	g.POST(pathToken, s.token, token)
	g.POST(pathRevoke, s.revoke, token)
	return nil
}

// Issuer returns the issuer (server.base_url without a trailing slash).
func (s *Server) Issuer() string { return s.issuer }

// profileOf returns the profile a stored grant names.
func (s *Server) profileOf(name string) (Profile, error) {
	p, ok := s.byName[name]
	if !ok {
		return nil, fmt.Errorf("oauth: no profile %q (stored by another configuration?)", name)
	}
	return p, nil
}

// infoOf returns the ProfileInfo of the profile named name (zero if none).
func (s *Server) infoOf(name string) ProfileInfo {
	for _, info := range s.infos {
		if info.Name == name {
			return info
		}
	}
	return ProfileInfo{}
}

// match returns the one profile that claims scopes and its ProfileInfo,
// or invalid_scope.
func (s *Server) match(scopes []string) (Profile, ProfileInfo, *Error) {
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

// request builds the profile's view of a grant.
func (s *Server) request(client *store.Client, user *store.User, g *store.Grant) *Request {
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

func promptString(p Prompt) string {
	switch p {
	case PromptNone:
		return "none"
	case PromptLogin:
		return "login"
	}
	return ""
}

// client returns the client with id, or nil when there is none.
func (s *Server) client(ctx context.Context, id string) (*store.Client, error) {
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
