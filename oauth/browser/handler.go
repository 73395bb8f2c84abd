package browser

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/oauth"
	"github.com/signd/signd/oauth/forms"
	"github.com/signd/signd/oauth/pages"
	"github.com/signd/signd/oauth/passwords"
	"github.com/signd/signd/oauth/ratelimit"
	"github.com/signd/signd/store"
)

// Core is what the browser flow asks of the authorization server: its
// clients and scope profiles, the profile's view of a grant, and the
// redirect to the client that its renderer writes; *oauth.Server is one.
type Core interface {
	Issuer() string
	Client(ctx context.Context, id string) (*store.Client, error)
	Match(scopes []string) (oauth.Profile, oauth.ProfileInfo, *oauth.Error)
	ProfileOf(name string) (oauth.Profile, error)
	InfoOf(name string) oauth.ProfileInfo
	Request(client *store.Client, user *store.User, g *store.Grant) *oauth.Request
	RedirectError(t oauth.Target, err error) error
	RedirectTo(c echo.Context, t oauth.Target, params url.Values) error
}

// Passwords checks the login page's password and one-time code and the
// consent page's signing PIN, with the lockout every door shares;
// *passwords.Checker is one.
type Passwords interface {
	Login(ctx context.Context, username, password, code string, now time.Time) (*store.User, bool, error)
	CheckPIN(ctx context.Context, username, pin string, otp *string) (passwords.PINResult, *store.User, error)
}

// Config holds the dependencies and settings of the browser flow. Zero
// durations take the defaults of the oauth.* configuration keys.
type Config struct {
	Core      Core        // required: the authorization server
	Store     oauth.Store // required: the authorization server's view of the store
	Passwords Passwords   // required
	// SecureCookies marks the login session and browser binding cookies
	// Secure and gives them the __Host- prefix with Path=/
	// (__Host-signd_session, __Host-signd_flow: forms.PageCookie) instead
	// of signd_session and signd_flow under the issuer's /oauth2/; set it
	// when the issuer is https or TLS is configured.
	SecureCookies bool

	CodeTTL        time.Duration // default 60s
	LoginTimeout   time.Duration // default 10m, from the authorize request to a completed login
	ConsentTimeout time.Duration // default 5m, from showing the consent page to its answer
	ProcessTimeout time.Duration // default 10m, from the authorize request to the redirect back
	SessionTTL     time.Duration // default 8h, login session (SSO)

	// FormLimit throttles the login form and the account page's login and
	// change forms per remote address (ratelimit.forms); nil = no limit
	// (throttle.go).
	FormLimit *ratelimit.Limiter

	Logger *slog.Logger     // nil = discard
	Now    func() time.Time // nil = time.Now
	// Pages renders the pages (ui.*); nil = the built-in look.
	Pages *pages.Pages
}

// Handler serves the browser flow. Build it with New and mount it with
// Mount.
type Handler struct {
	cfg       Config
	core      Core
	store     oauth.Store
	passwords Passwords
	pages     *pages.Pages
	origin    string // serialized origin of the issuer: the only Origin the forms accept
	// cookiePath is the issuer's path followed by /oauth2/.
	cookiePath string
	// sessionName and sessionPath name the login session cookie,
	// bindingName and bindingPath the browser binding cookie
	// (forms.PageCookie).
	sessionName, sessionPath string
	bindingName, bindingPath string
	log                      *slog.Logger
	now                      func() time.Time
}

// The routes, relative to the server root.
const (
	pathAuthorize = "/oauth2/authorize"
	pathLogin     = "/oauth2/login"
	pathConsent   = "/oauth2/consent"
)

// sessionCookie is the name of the login session cookie, bindingCookie
// that of the browser binding cookie (binding.go), both without the
// __Host- prefix that forms.PageCookie adds under https.
const (
	sessionCookie = "signd_session"
	bindingCookie = "signd_flow"
)

// New validates cfg and builds the browser flow.
func New(cfg Config) (*Handler, error) {
	switch {
	case cfg.Core == nil:
		return nil, errors.New("oauth: browser.Config.Core is required")
	case cfg.Store == nil:
		return nil, errors.New("oauth: browser.Config.Store is required")
	case cfg.Passwords == nil:
		return nil, errors.New("oauth: browser.Config.Passwords is required")
	}
	issuer := cfg.Core.Issuer()
	iss, err := url.Parse(issuer)
	if err != nil {
		return nil, fmt.Errorf("oauth: issuer %q is not an absolute URL", issuer)
	}
	origin, err := oauth.SerializeOrigin(issuer, false)
	if err != nil {
		return nil, fmt.Errorf("oauth: issuer %q is not an http(s) URL", issuer)
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&cfg.CodeTTL, 60*time.Second)
	def(&cfg.LoginTimeout, 10*time.Minute)
	def(&cfg.ConsentTimeout, 5*time.Minute)
	def(&cfg.ProcessTimeout, 10*time.Minute)
	def(&cfg.SessionTTL, 8*time.Hour)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	h := &Handler{
		cfg: cfg, core: cfg.Core, store: cfg.Store, passwords: cfg.Passwords,
		origin:     origin,
		cookiePath: strings.TrimRight(iss.Path, "/") + "/oauth2/",
		log:        cfg.Logger,
		now:        cfg.Now,
	}
	h.sessionName, h.sessionPath = forms.PageCookie(sessionCookie, h.cookiePath, cfg.SecureCookies)
	h.bindingName, h.bindingPath = forms.PageCookie(bindingCookie, h.cookiePath, cfg.SecureCookies)
	if h.pages = cfg.Pages; h.pages == nil {
		if h.pages, err = pages.New(pages.Options{}); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// Mount registers the endpoints on g at the paths below (the daemon passes
// its root group):
//
//	GET, POST /oauth2/authorize   start a flow (login or consent page, or a redirect)
//	POST      /oauth2/login       answer the login page
//	POST      /oauth2/consent     answer the consent page
//
// The routes are tagged with the page dialect (oauth.PageDialect), which
// the Renderer (Echo's error handler) writes: an HTML page or a redirect to
// the client. The login and consent forms refuse posts from other sites
// (sameOriginOnly); authorize does not, as a client may post to it. The
// login form is rate limited (throttle.go).
func (h *Handler) Mount(g *echo.Group) error {
	page := oauth.WithDialect(oauth.PageDialect())
	g.GET(pathAuthorize, h.authorize, page)
	g.POST(pathAuthorize, h.authorize, page)
	g.POST(pathLogin, h.login, page, h.sameOriginOnly, h.LimitForms(h.loginLang))
	g.POST(pathConsent, h.consent, page, h.sameOriginOnly)
	return nil
}
