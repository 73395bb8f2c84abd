package oauth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/oauth/pages"
	"github.com/signd/signd/oauth/passwords"
	"github.com/signd/signd/store"
)

// The account page: a signed-in user lists their signing credentials and
// disables (or enables again) their own. It uses the login of the
// authorization flows (the same password, one-time code, lockout and
// login session cookie) and the forms' defences (sameOriginOnly, a CSRF
// token, the page CSP without any script).
//
//	GET  /oauth2/account        the credentials, or the login form
//	POST /oauth2/account/login  answer the login form
//	POST /oauth2/account        disable or enable one credential
//	POST /oauth2/account/logout end the login session (sign out)
//
// The login form's CSRF token is a double-submit cookie (no session exists
// yet); once signed in the token is derived from the session cookie's value
// (which the page's HttpOnly cookie keeps from scripts and other sites).

// Account is what the account page reads and changes; csc.Account
// implements it for the signing credentials.
type Account interface {
	// Credentials lists username's credentials.
	Credentials(ctx context.Context, username string) ([]AccountCredential, error)
	// SetEnabled disables (enabled false) or enables username's
	// credential id. It returns ErrAccountRefused when id is not theirs
	// or the change is not the owner's to make.
	SetEnabled(ctx context.Context, username, id string, enabled bool) error
}

// ErrAccountRefused is Account.SetEnabled's refusal: unknown, someone
// else's, pending, or disabled by an administrator.
var ErrAccountRefused = errors.New("oauth: the credential cannot be changed by its owner")

// AccountCredential is one row of the account page.
type AccountCredential struct {
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
	accountCSRFCookie = "signd_account_csrf"
	decisionDisable   = "disable"
	decisionEnable    = "enable"
	accountCSRFLabel  = "signd account page CSRF token v1\x00"
)

// accountView is what the account templates see besides pageData.
type accountView struct {
	Username    string
	Credentials []accountRow
}

type accountRow struct {
	AccountCredential
	ValidFrom, ValidTo string
}

// mountAccount registers the account page when an Account is configured.
func (s *Server) mountAccount(g *echo.Group) {
	if s.cfg.Account == nil {
		return
	}
	page := WithDialect(pageDialect())
	g.GET(pathAccount, s.accountPage, page)
	limit := s.formLimit(s.accountLang)
	g.POST(pathAccount, s.accountChange, page, s.accountSameOrigin, limit)
	g.POST(pathAccountLogin, s.accountLogin, page, s.accountSameOrigin, limit)
	g.POST(pathAccountLogout, s.accountLogout, page, s.accountSameOrigin)
}

// accountSameOrigin is sameOriginOnly for the account forms: the same
// rules (fetchmeta.go), the refusal in the page's language.
func (s *Server) accountSameOrigin(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		reason := s.crossSite(r.Header)
		if reason == "" {
			return next(c)
		}
		s.log.Warn("account form refused: posted from another site", "path", r.URL.Path, "reason", reason,
			"origin", clip(r.Header.Get(headerOrigin)), "sec_fetch_site", clip(r.Header.Get(headerSecFetchSite)))
		return newPageError(http.StatusForbidden, s.accountLang(r), "errorpage.crosssite")
	}
}

// accountLang is the page language: the lang form or query parameter (nl
// or en), else Accept-Language, else Dutch.
func (s *Server) accountLang(r *http.Request) string {
	if l := r.FormValue(fieldLang); l == pages.EN || l == pages.NL {
		return l
	}
	return s.pages.AcceptLanguage(r.Header.Get("Accept-Language"))
}

// accountURL is the page's absolute path, for redirects.
func (s *Server) accountURL(lang string) string {
	return s.cookiePath + "account?lang=" + lang
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
func (s *Server) accountPage(c echo.Context) error {
	lang := s.accountLang(c.Request())
	user, _, err := s.sessionUser(c, s.now())
	if err != nil {
		return err
	}
	if user == nil {
		return s.renderAccountLogin(c, lang, "", "")
	}
	return s.renderAccount(c, lang, user, "")
}

// renderAccountLogin shows the login form with a fresh double-submit
// CSRF token.
func (s *Server) renderAccountLogin(c echo.Context, lang, errKey, username string) error {
	token, err := newSecret()
	if err != nil {
		return err
	}
	c.SetCookie(&http.Cookie{
		Name: accountCSRFCookie, Value: token, Path: s.cookiePath + "account",
		HttpOnly: true, Secure: s.cfg.SecureCookies, SameSite: http.SameSiteStrictMode,
	})
	return s.pages.Render(c, pages.Status, "account-login", &pages.Data{
		Lang: lang, TitleKey: "account.title", Action: "account/login", CSRF: token, Error: errKey, Username: username,
	}, "")
}

func (s *Server) renderAccount(c echo.Context, lang string, user *store.User, errKey string) error {
	ck, err := c.Cookie(sessionCookie)
	if err != nil {
		return err
	}
	creds, err := s.cfg.Account.Credentials(c.Request().Context(), user.Username)
	if err != nil {
		return err
	}
	v := &accountView{Username: user.Username}
	for _, cr := range creds {
		row := accountRow{AccountCredential: cr}
		if !cr.NotBefore.IsZero() {
			row.ValidFrom = cr.NotBefore.UTC().Format("2006-01-02 15:04 MST")
			row.ValidTo = cr.NotAfter.UTC().Format("2006-01-02 15:04 MST")
		}
		v.Credentials = append(v.Credentials, row)
	}
	return s.pages.Render(c, pages.Status, "account", &pages.Data{
		Lang: lang, TitleKey: "account.title", Action: "account", CSRF: accountToken(ck.Value), Error: errKey, Account: v,
	}, "")
}

// accountForm parses a posted account form; a field sent twice is a bad
// request.
func (s *Server) accountForm(r *http.Request, fields ...string) error {
	if err := r.ParseForm(); err != nil {
		return newPageError(http.StatusBadRequest, pages.NL, "errorpage.request")
	}
	for _, k := range fields {
		if len(r.PostForm[k]) > 1 {
			return newPageError(http.StatusBadRequest, s.accountLang(r), "errorpage.request")
		}
	}
	return nil
}

// accountLogin is POST /oauth2/account/login: the CSRF cookie and field
// must match, then the login is checked like the authorization flow's.
func (s *Server) accountLogin(c echo.Context) error {
	r := c.Request()
	if err := s.accountForm(r, fieldCSRF, fieldUsername, fieldPassword, fieldOTP, fieldLang); err != nil {
		return err
	}
	lang := s.accountLang(r)
	ck, err := c.Cookie(accountCSRFCookie)
	if err != nil || !sameToken(ck.Value, r.PostForm.Get(fieldCSRF)) {
		s.log.Warn("account login form with a wrong or missing CSRF token")
		return newPageError(http.StatusBadRequest, lang, "errorpage.csrf")
	}
	now := s.now()
	username := r.PostForm.Get(fieldUsername)
	user, ok, err := s.passwords.Login(r.Context(), username, r.PostForm.Get(fieldPassword), r.PostForm.Get(fieldOTP), now)
	switch {
	case errors.Is(err, passwords.ErrBusy):
		return s.renderAccountLogin(c, lang, "error.busy", username)
	case err != nil:
		return err
	case !ok:
		return s.renderAccountLogin(c, lang, "error.credentials", username)
	}
	session, cookie, err := s.newSession(c, user.Username, now)
	if err != nil {
		return err
	}
	err = s.store.Update(r.Context(), func(tx Tx) error {
		if err := recheckAccount(tx, user.Username); err != nil {
			return err
		}
		return session(tx)
	})
	var oe *Error
	if errors.As(err, &oe) {
		return s.renderAccountLogin(c, lang, "error.credentials", username)
	}
	if err != nil {
		return err
	}
	s.log.Info("account page login succeeded", "username", user.Username)
	c.SetCookie(cookie)
	c.SetCookie(&http.Cookie{Name: accountCSRFCookie, Path: s.cookiePath + "account", MaxAge: -1,
		HttpOnly: true, Secure: s.cfg.SecureCookies, SameSite: http.SameSiteStrictMode})
	return c.Redirect(http.StatusSeeOther, s.accountURL(lang))
}

// accountChange is POST /oauth2/account: disable or enable one of the
// signed-in user's credentials, then show the page again (303).
func (s *Server) accountChange(c echo.Context) error {
	r := c.Request()
	if err := s.accountForm(r, fieldCSRF, fieldCredential, fieldDecision, fieldLang); err != nil {
		return err
	}
	lang := s.accountLang(r)
	user, _, err := s.sessionUser(c, s.now())
	if err != nil {
		return err
	}
	ck, cerr := c.Cookie(sessionCookie)
	if user == nil || cerr != nil {
		// Signed out (or the session expired) since the page was shown.
		return c.Redirect(http.StatusSeeOther, s.accountURL(lang))
	}
	if !sameToken(accountToken(ck.Value), r.PostForm.Get(fieldCSRF)) {
		s.log.Warn("account form with a wrong or missing CSRF token", "username", user.Username)
		return newPageError(http.StatusBadRequest, lang, "errorpage.csrf")
	}
	var enable bool
	switch r.PostForm.Get(fieldDecision) {
	case decisionDisable:
	case decisionEnable:
		enable = true
	default:
		return newPageError(http.StatusBadRequest, lang, "errorpage.request")
	}
	id := r.PostForm.Get(fieldCredential)
	if id == "" {
		return newPageError(http.StatusBadRequest, lang, "errorpage.request")
	}
	err = s.cfg.Account.SetEnabled(r.Context(), user.Username, id, enable)
	if errors.Is(err, ErrAccountRefused) {
		s.log.Warn("account page change refused", "username", user.Username, "credential_id", clip(id), "enable", enable)
		return s.renderAccount(c, lang, user, "account.refused")
	}
	if err != nil {
		return err
	}
	s.log.Info("credential status changed by its owner", "username", user.Username, "credential_id", id, "enabled", enable)
	return c.Redirect(http.StatusSeeOther, s.accountURL(lang))
}

// accountLogout is POST /oauth2/account/logout: the signed-in page's CSRF
// token must match the session cookie, then the login session is deleted
// from the store (the flows' single sign-on ends with it) and its cookie
// expired, and the page shows the login form again (303). Without a
// session cookie there is nothing to end: the same redirect.
func (s *Server) accountLogout(c echo.Context) error {
	r := c.Request()
	if err := s.accountForm(r, fieldCSRF, fieldLang); err != nil {
		return err
	}
	lang := s.accountLang(r)
	ck, err := c.Cookie(sessionCookie)
	if err != nil || ck.Value == "" {
		return c.Redirect(http.StatusSeeOther, s.accountURL(lang))
	}
	if !sameToken(accountToken(ck.Value), r.PostForm.Get(fieldCSRF)) {
		s.log.Warn("account logout with a wrong or missing CSRF token")
		return newPageError(http.StatusBadRequest, lang, "errorpage.csrf")
	}
	hash := store.Fingerprint(ck.Value)
	username := ""
	err = s.store.Update(r.Context(), func(tx Tx) error {
		sess, err := tx.Session(hash)
		if err != nil {
			return err
		}
		username = sess.Username
		return tx.DeleteSession(hash)
	})
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	if username != "" {
		s.log.Info("account page logout", "username", username)
	}
	c.SetCookie(&http.Cookie{Name: sessionCookie, Path: s.cookiePath, MaxAge: -1,
		HttpOnly: true, Secure: s.cfg.SecureCookies, SameSite: http.SameSiteLaxMode})
	return c.Redirect(http.StatusSeeOther, s.accountURL(lang))
}
