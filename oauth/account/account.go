package account

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/oauth"
	"github.com/signd/signd/oauth/forms"
	"github.com/signd/signd/oauth/pages"
	"github.com/signd/signd/oauth/passwords"
	"github.com/signd/signd/store"
)

// Backend is what the account page reads and changes; csc.Account
// implements it for the signing credentials.
type Backend interface {
	// Credentials lists username's credentials.
	Credentials(ctx context.Context, username string) ([]Credential, error)
	// SetEnabled disables (enabled false) or enables username's
	// credential id. It returns ErrRefused when id is not theirs or the
	// change is not the owner's to make.
	SetEnabled(ctx context.Context, username, id string, enabled bool) error
}

// ErrRefused is Backend.SetEnabled's refusal: unknown, someone else's,
// pending, or disabled by an administrator.
var ErrRefused = errors.New("oauth: the credential cannot be changed by its owner")

// Credential is one row of the account page.
type Credential struct {
	ID          string
	Description string
	Subject     string    // certificate subject (RFC 4514), "" while pending
	NotBefore   time.Time // certificate validity; zero while pending
	NotAfter    time.Time
	// Status is "enabled", "disabled", "disabled-admin" (by an
	// administrator) or "pending".
	Status string
	// Cert is "valid", "expired", "revoked", "suspended" or "unknown"
	// (no current OCSP or CRL answer); "" while pending.
	Cert string
	// CanDisable and CanEnable say which button the row has.
	CanDisable, CanEnable bool
}

// Paths, form fields and cookies of the account page.
const (
	pathAccount       = "/oauth2/account"
	pathAccountLogin  = "/oauth2/account/login"
	pathAccountLogout = "/oauth2/account/logout"
	fieldCredential   = "credential"
	fieldLang         = "lang"
	fieldCSRF         = "csrf_token"
	fieldUsername     = "username"
	fieldPassword     = "password"
	fieldOTP          = "otp"
	fieldDecision     = "decision"
	accountCSRFCookie = "signd_account_csrf"
	decisionDisable   = "disable"
	decisionEnable    = "enable"
	accountCSRFLabel  = "signd account page CSRF token v1\x00"
)

// accountView is what the account templates see besides pages.Data.
type accountView struct {
	Username    string
	Credentials []accountRow
}

type accountRow struct {
	Credential
	ValidFrom, ValidTo string
}

// Sessions is the browser flow's login session and form defences that the
// account page shares; *browser.Handler is one.
type Sessions interface {
	// SessionUser returns the user of the browser's valid login session,
	// or nil.
	SessionUser(c echo.Context) (*store.User, error)
	// OpenSession opens a login session for username after re-checking
	// the account, and sets its cookie.
	OpenSession(c echo.Context, user *store.User, now time.Time) error
	// EndSession removes the browser's login session and expires its
	// cookie; it returns the session's user ("" when none).
	EndSession(c echo.Context) (string, error)
	// SessionCookie is the browser's login session cookie value ("").
	SessionCookie(c echo.Context) string
	// CookiePath and SecureCookies are those of the server's cookies.
	CookiePath() string
	SecureCookies() bool
	// CrossSite says why a form post must be refused as cross-site
	// (Fetch Metadata, Origin), "" when it may go on.
	CrossSite(h http.Header) string
	// LimitForms throttles a form per remote address (ratelimit.forms).
	LimitForms(lang func(*http.Request) string) echo.MiddlewareFunc
}

// Passwords checks the login form's password and one-time code with the
// lockout of the authorization flows; *passwords.Checker is one.
type Passwords interface {
	Login(ctx context.Context, username, password, code string, now time.Time) (*store.User, bool, error)
}

// Handler serves the account page. Fill the dependencies and call Mount.
type Handler struct {
	Backend   Backend          // required: the user's credentials (csc.Account)
	Sessions  Sessions         // required: the browser flow
	Passwords Passwords        // required
	Logger    *slog.Logger     // nil = discard
	Now       func() time.Time // nil = time.Now
	Pages     *pages.Pages     // nil = the built-in look (ui.*)

	pages *pages.Pages
	log   *slog.Logger
	now   func() time.Time
}

// Mount registers the account page on g (the daemon's root group), its
// errors in the pages' dialect (oauth.PageDialect); every form refuses
// posts from other sites, and all but logout share the login form's rate
// limit.
func (h *Handler) Mount(g *echo.Group) error {
	switch {
	case h.Backend == nil:
		return errors.New("account: Handler.Backend is required")
	case h.Sessions == nil:
		return errors.New("account: Handler.Sessions is required")
	case h.Passwords == nil:
		return errors.New("account: Handler.Passwords is required")
	}
	p := h.Pages
	if p == nil {
		var err error
		if p, err = pages.New(pages.Options{}); err != nil {
			return err
		}
	}
	h.pages, h.log, h.now = p, h.Logger, h.Now
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.now == nil {
		h.now = time.Now
	}
	page := oauth.WithDialect(oauth.PageDialect())
	g.GET(pathAccount, h.accountPage, page)
	limit := h.Sessions.LimitForms(h.accountLang)
	g.POST(pathAccount, h.accountChange, page, h.accountSameOrigin, limit)
	g.POST(pathAccountLogin, h.accountLogin, page, h.accountSameOrigin, limit)
	g.POST(pathAccountLogout, h.accountLogout, page, h.accountSameOrigin)
	return nil
}

// accountSameOrigin refuses a cross-site post as the authorize forms do
// (forms.RefuseCrossSite), the refusal in the page's language.
func (h *Handler) accountSameOrigin(next echo.HandlerFunc) echo.HandlerFunc {
	return forms.RefuseCrossSite(h.log, "account", h.Sessions.CrossSite, func(r *http.Request) (string, []any) {
		return h.accountLang(r), nil
	})(next)
}

// accountLang is the page language, by the one rule of every page
// (pages.Lang): the ui_locales query parameter, then the lang form or
// query parameter (the page's forms carry the language they were shown
// in), then the language switch's cookie, then Accept-Language, then
// Dutch.
func (h *Handler) accountLang(r *http.Request) string {
	return h.pages.Lang(r, r.URL.Query().Get("ui_locales"), r.FormValue(fieldLang))
}

// accountURL is the page's absolute path, for redirects.
func (h *Handler) accountURL(lang string) string {
	return h.Sessions.CookiePath() + "account?lang=" + lang
}

// accountToken is the CSRF token of a signed-in page: bound to the login
// session, unguessable without its cookie.
func accountToken(sessionValue string) string {
	sum := sha256.Sum256([]byte(accountCSRFLabel + sessionValue))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

func sameToken(a, b string) bool {
	return a != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// accountPage is GET /oauth2/account.
func (h *Handler) accountPage(c echo.Context) error {
	lang := h.accountLang(c.Request())
	user, err := h.Sessions.SessionUser(c)
	if err != nil {
		return err
	}
	if user == nil {
		return h.renderAccountLogin(c, lang, "", "")
	}
	return h.renderAccount(c, lang, user, "")
}

// csrf is the login form's double-submit CSRF cookie: for the account
// page only over plain http; under https __Host-signd_account_csrf with
// Path=/, which no sibling subdomain can plant along with a form it posts.
func (h *Handler) csrf() forms.CSRFCookie {
	return forms.NewCSRFCookie(accountCSRFCookie, h.Sessions.CookiePath()+"account", h.Sessions.SecureCookies())
}

// renderAccountLogin shows the login form with a fresh double-submit
// CSRF token.
func (h *Handler) renderAccountLogin(c echo.Context, lang, errKey, username string) error {
	token, err := oauth.NewSecret()
	if err != nil {
		return err
	}
	c.SetCookie(h.csrf().Cookie(token, 0))
	return h.pages.Render(c, pages.Status, "account-login", &pages.Data{
		Lang: lang, TitleKey: "account.title", Action: "account/login", CSRF: token, Error: errKey, Username: username,
	}, "")
}

func (h *Handler) renderAccount(c echo.Context, lang string, user *store.User, errKey string) error {
	session := h.Sessions.SessionCookie(c)
	if session == "" {
		return http.ErrNoCookie
	}
	creds, err := h.Backend.Credentials(c.Request().Context(), user.Username)
	if err != nil {
		return err
	}
	v := &accountView{Username: user.Username}
	for _, cr := range creds {
		row := accountRow{Credential: cr}
		if !cr.NotBefore.IsZero() {
			row.ValidFrom = cr.NotBefore.UTC().Format("2006-01-02 15:04 MST")
			row.ValidTo = cr.NotAfter.UTC().Format("2006-01-02 15:04 MST")
		}
		v.Credentials = append(v.Credentials, row)
	}
	return h.pages.Render(c, pages.Status, "account", &pages.Data{
		Lang: lang, TitleKey: "account.title", Action: "account", CSRF: accountToken(session), Error: errKey, Account: v,
	}, "")
}

// accountForm parses a posted account form; a field sent twice is a bad
// request.
func (h *Handler) accountForm(r *http.Request, fields ...string) error {
	if err := r.ParseForm(); err != nil {
		return oauth.NewPageError(http.StatusBadRequest, h.pages.RequestLang(r), "errorpage.request")
	}
	for _, k := range fields {
		if len(r.PostForm[k]) > 1 {
			return oauth.NewPageError(http.StatusBadRequest, h.accountLang(r), "errorpage.request")
		}
	}
	return nil
}

// accountLogin is POST /oauth2/account/login: the CSRF cookie and field
// must match, then the login is checked like the authorization flow's.
func (h *Handler) accountLogin(c echo.Context) error {
	r := c.Request()
	if err := h.accountForm(r, fieldCSRF, fieldUsername, fieldPassword, fieldOTP, fieldLang); err != nil {
		return err
	}
	lang := h.accountLang(r)
	if !h.csrf().Matches(r, r.PostForm.Get(fieldCSRF)) {
		h.log.WarnContext(c.Request().Context(), "account login form with a wrong or missing CSRF token")
		return oauth.NewPageError(http.StatusBadRequest, lang, "errorpage.csrf")
	}
	now := h.now()
	username := r.PostForm.Get(fieldUsername)
	ctx := passwords.WithOrigin(r.Context(), passwords.Origin{IP: c.RealIP(), Door: passwords.DoorAccountPage})
	user, ok, err := h.Passwords.Login(ctx, username, r.PostForm.Get(fieldPassword), r.PostForm.Get(fieldOTP), now)
	switch {
	case errors.Is(err, passwords.ErrBusy):
		return h.renderAccountLogin(c, lang, "error.busy", username)
	case err != nil:
		return err
	case !ok:
		return h.renderAccountLogin(c, lang, "error.credentials", username)
	}
	err = h.Sessions.OpenSession(c, user, now)
	// A lock, a disabling or a new password that committed while the
	// password was checked: the login page's answer to a failed login.
	var oe *oauth.Error
	var lr *oauth.LockRefusal
	if errors.As(err, &oe) || errors.As(err, &lr) {
		return h.renderAccountLogin(c, lang, "error.credentials", username)
	}
	if err != nil {
		return err
	}
	h.log.InfoContext(c.Request().Context(), "account page login succeeded", "username", user.Username)
	c.SetCookie(h.csrf().Cookie("", -1))
	return c.Redirect(http.StatusSeeOther, h.accountURL(lang))
}

// accountChange is POST /oauth2/account: disable or enable one of the
// signed-in user's credentials, then show the page again (303).
func (h *Handler) accountChange(c echo.Context) error {
	r := c.Request()
	if err := h.accountForm(r, fieldCSRF, fieldCredential, fieldDecision, fieldLang); err != nil {
		return err
	}
	lang := h.accountLang(r)
	user, err := h.Sessions.SessionUser(c)
	if err != nil {
		return err
	}
	session := h.Sessions.SessionCookie(c)
	if user == nil || session == "" {
		// Signed out (or the session expired) since the page was shown.
		return c.Redirect(http.StatusSeeOther, h.accountURL(lang))
	}
	if !sameToken(accountToken(session), r.PostForm.Get(fieldCSRF)) {
		h.log.WarnContext(c.Request().Context(), "account form with a wrong or missing CSRF token", "username", user.Username)
		return oauth.NewPageError(http.StatusBadRequest, lang, "errorpage.csrf")
	}
	var enable bool
	switch r.PostForm.Get(fieldDecision) {
	case decisionDisable:
	case decisionEnable:
		enable = true
	default:
		return oauth.NewPageError(http.StatusBadRequest, lang, "errorpage.request")
	}
	id := r.PostForm.Get(fieldCredential)
	if id == "" {
		return oauth.NewPageError(http.StatusBadRequest, lang, "errorpage.request")
	}
	ctx := passwords.WithOrigin(r.Context(), passwords.Origin{IP: c.RealIP(), Door: passwords.DoorAccountPage})
	err = h.Backend.SetEnabled(ctx, user.Username, id, enable)
	if errors.Is(err, ErrRefused) {
		h.log.WarnContext(c.Request().Context(), "account page change refused", "username", user.Username, "credential_id", oauth.Clip(id), "enable", enable)
		return h.renderAccount(c, lang, user, "account.refused")
	}
	if err != nil {
		return err
	}
	h.log.InfoContext(c.Request().Context(), "credential status changed by its owner", "username", user.Username, "credential_id", id, "enabled", enable)
	return c.Redirect(http.StatusSeeOther, h.accountURL(lang))
}

// accountLogout is POST /oauth2/account/logout: the signed-in page's CSRF
// token must match the session cookie, then the login session is deleted
// from the store (the flows' single sign-on ends with it) and its cookie
// expired, and the page shows the login form again (303). Without a
// session cookie there is nothing to end: the same redirect.
func (h *Handler) accountLogout(c echo.Context) error {
	r := c.Request()
	if err := h.accountForm(r, fieldCSRF, fieldLang); err != nil {
		return err
	}
	lang := h.accountLang(r)
	session := h.Sessions.SessionCookie(c)
	if session == "" {
		return c.Redirect(http.StatusSeeOther, h.accountURL(lang))
	}
	if !sameToken(accountToken(session), r.PostForm.Get(fieldCSRF)) {
		h.log.WarnContext(c.Request().Context(), "account logout with a wrong or missing CSRF token")
		return oauth.NewPageError(http.StatusBadRequest, lang, "errorpage.csrf")
	}
	username, err := h.Sessions.EndSession(c)
	if err != nil {
		return err
	}
	if username != "" {
		h.log.InfoContext(c.Request().Context(), "account page logout", "username", username)
	}
	return c.Redirect(http.StatusSeeOther, h.accountURL(lang))
}
