package enroll

import (
	"context"
	"crypto/subtle"
	"errors"
	"log/slog"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/admin"
	"github.com/signd/signd/oauth"
	"github.com/signd/signd/oauth/pages"
)

// Backend checks and uses enrollment links; *admin.Local is one.
type Backend interface {
	// EnrollmentUser returns the user of an open link, or
	// admin.ErrEnrollmentRefused.
	EnrollmentUser(ctx context.Context, token string) (string, error)
	// Enroll sets the password and PIN and closes the link, once.
	Enroll(ctx context.Context, req admin.EnrollRequest) (string, error)
}

// Forms is the form defences the browser flow lends the page;
// *browser.Handler is one.
type Forms interface {
	// CrossSite says why a form post must be refused as cross-site
	// (Fetch Metadata, Origin), "" when it may go on.
	CrossSite(h http.Header) string
	// LimitForms throttles a form per remote address (ratelimit.forms).
	LimitForms(lang func(*http.Request) string) echo.MiddlewareFunc
	// CookiePath and SecureCookies are those of the server's cookies.
	CookiePath() string
	SecureCookies() bool
}

// Form fields, the CSRF cookie and the body limit of the page.
const (
	route          = "/oauth2/enroll/:token"
	fieldCSRF      = "csrf_token"
	fieldLang      = "lang"
	fieldPassword  = "password"
	fieldPassword2 = "password2"
	fieldPIN       = "pin"
	fieldPIN2      = "pin2"
	csrfCookie     = "signd_enroll_csrf"
	// MaxForm bounds the posted form: two passwords and two PINs at their
	// longest, the CSRF token and the language fit with room to spare.
	MaxForm = 8 << 10
)

// Handler serves the enrollment page. Fill the dependencies and call
// Mount.
type Handler struct {
	Backend Backend      // required (admin.Local)
	Forms   Forms        // required (the browser flow)
	Logger  *slog.Logger // nil = discard
	Pages   *pages.Pages // nil = the built-in look

	pages *pages.Pages
	log   *slog.Logger
}

// Mount registers the page on g (the daemon's root group), its errors in
// the pages' dialect; the post refuses other sites and shares the forms'
// rate limit.
func (h *Handler) Mount(g *echo.Group) error {
	if h.Backend == nil || h.Forms == nil {
		return errors.New("enroll: Handler.Backend and Handler.Forms are required")
	}
	h.pages, h.log = h.Pages, h.Logger
	if h.pages == nil {
		var err error
		if h.pages, err = pages.New(pages.Options{}); err != nil {
			return err
		}
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	page := oauth.WithDialect(oauth.PageDialect())
	g.GET(route, h.form, page)
	// The middlewares answer in the language of the query, cookie and
	// Accept-Language: they do not read the body before the handler
	// bounds it.
	g.POST(route, h.submit, page, h.sameOrigin, h.Forms.LimitForms(h.pages.RequestLang))
	return nil
}

// sameOrigin refuses a post from another site, as the account page does.
func (h *Handler) sameOrigin(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		reason := h.Forms.CrossSite(r.Header)
		if reason == "" {
			return next(c)
		}
		h.log.WarnContext(r.Context(), "enrollment form refused: posted from another site", "reason", reason,
			"origin", oauth.Clip(r.Header.Get("Origin")), "sec_fetch_site", oauth.Clip(r.Header.Get("Sec-Fetch-Site")))
		return oauth.NewPageError(http.StatusForbidden, h.pages.RequestLang(r), "errorpage.crosssite")
	}
}

// lang is the page language by the one rule of every page (pages.Lang);
// the form carries the language it was shown in.
func (h *Handler) lang(r *http.Request) string {
	return h.pages.Lang(r, r.URL.Query().Get("ui_locales"), r.PostForm.Get(fieldLang))
}

// refused is the one page of a link that is not open: unknown, used or
// expired alike.
func refused(lang string) error {
	return oauth.NewPageError(http.StatusNotFound, lang, "enroll.refused")
}

// form is GET /oauth2/enroll/{token}.
func (h *Handler) form(c echo.Context) error {
	r := c.Request()
	lang := h.pages.RequestLang(r)
	username, err := h.Backend.EnrollmentUser(r.Context(), c.Param("token"))
	if errors.Is(err, admin.ErrEnrollmentRefused) {
		return refused(lang)
	}
	if err != nil {
		return err
	}
	return h.render(c, lang, username, "")
}

// render shows the form with a fresh double-submit CSRF token.
func (h *Handler) render(c echo.Context, lang, username, errKey string) error {
	token, err := oauth.NewSecret()
	if err != nil {
		return err
	}
	c.SetCookie(h.cookie(token, 0))
	return h.pages.Render(c, pages.Status, "enroll", &pages.Data{
		Lang: lang, TitleKey: "enroll.title", Action: c.Param("token"), CSRF: token, Error: errKey, Username: username,
	}, "")
}

// cookie is the CSRF cookie, for the enrollment pages only; maxAge -1
// expires it.
func (h *Handler) cookie(value string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: csrfCookie, Value: value, Path: h.Forms.CookiePath() + "enroll/", MaxAge: maxAge,
		HttpOnly: true, Secure: h.Forms.SecureCookies(), SameSite: http.SameSiteStrictMode}
}

// submit is POST /oauth2/enroll/{token}.
func (h *Handler) submit(c echo.Context) error {
	r := c.Request()
	r.Body = http.MaxBytesReader(c.Response(), r.Body, MaxForm)
	if err := r.ParseForm(); err != nil {
		return oauth.NewPageError(http.StatusBadRequest, h.pages.RequestLang(r), "errorpage.request")
	}
	for _, k := range []string{fieldCSRF, fieldLang, fieldPassword, fieldPassword2, fieldPIN, fieldPIN2} {
		if len(r.PostForm[k]) > 1 {
			return oauth.NewPageError(http.StatusBadRequest, h.lang(r), "errorpage.request")
		}
	}
	lang := h.lang(r)
	ck, err := c.Cookie(csrfCookie)
	if err != nil || ck.Value == "" || subtle.ConstantTimeCompare([]byte(ck.Value), []byte(r.PostForm.Get(fieldCSRF))) != 1 {
		h.log.WarnContext(r.Context(), "enrollment form with a wrong or missing CSRF token")
		return oauth.NewPageError(http.StatusBadRequest, lang, "errorpage.csrf")
	}
	token := c.Param("token")
	f := r.PostForm
	if f.Get(fieldPassword) != f.Get(fieldPassword2) || f.Get(fieldPIN) != f.Get(fieldPIN2) {
		username, err := h.Backend.EnrollmentUser(r.Context(), token)
		if errors.Is(err, admin.ErrEnrollmentRefused) {
			return refused(lang)
		}
		if err != nil {
			return err
		}
		return h.render(c, lang, username, "enroll.error.mismatch")
	}
	username, err := h.Backend.Enroll(r.Context(), admin.EnrollRequest{
		Token: token, Password: f.Get(fieldPassword), PIN: f.Get(fieldPIN), IP: c.RealIP(),
	})
	switch {
	case errors.Is(err, admin.ErrEnrollmentRefused):
		return refused(lang)
	case errors.Is(err, admin.ErrEnrollPassword), errors.Is(err, admin.ErrEnrollPIN):
		key := "enroll.error.password"
		if errors.Is(err, admin.ErrEnrollPIN) {
			key = "enroll.error.pin"
		}
		u, uerr := h.Backend.EnrollmentUser(r.Context(), token)
		if uerr != nil {
			return refused(lang)
		}
		return h.render(c, lang, u, key)
	case err != nil:
		return err
	}
	c.SetCookie(h.cookie("", -1))
	return h.pages.Render(c, pages.Status, "enroll-done", &pages.Data{Lang: lang, TitleKey: "enroll.title", Username: username}, "")
}
