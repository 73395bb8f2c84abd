package enroll

import (
	"context"
	"encoding/base32"
	"errors"
	"log/slog"
	"net/http"
	"regexp"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"

	"github.com/signd/signd/admin"
	"github.com/signd/signd/oauth"
	"github.com/signd/signd/oauth/forms"
	"github.com/signd/signd/oauth/pages"
	"github.com/signd/signd/oauth/passwords"
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
	fieldTOTP      = "totp_secret"
	fieldTOTPCode  = "totp_code"
	csrfCookie     = "signd_enroll_csrf"
	// MaxForm bounds the posted form: two passwords and two PINs at their
	// longest, the CSRF token and the language fit with room to spare.
	MaxForm = 8 << 10
)

// Handler serves the enrollment page. Fill the dependencies and call
// Mount.
type Handler struct {
	Backend Backend          // required (admin.Local)
	Forms   Forms            // required (the browser flow)
	Logger  *slog.Logger     // nil = discard
	Now     func() time.Time // nil = time.Now; the TOTP code's time
	Pages   *pages.Pages     // nil = the built-in look
	// Issuer names the service in the authenticator app (the otpauth
	// URI); "" = "signd".
	Issuer string

	pages *pages.Pages
	log   *slog.Logger
	now   func() time.Time
}

// View is what the enrollment template reads besides pages.Data: the
// TOTP secret offered (optional for the user), as text and as an
// otpauth:// URI for authenticator apps.
type View struct {
	TOTPSecret, TOTPURI string
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
	if h.now = h.Now; h.now == nil {
		h.now = time.Now
	}
	page := oauth.WithDialect(oauth.PageDialect())
	g.GET(route, h.form, page)
	// The middlewares answer in the language of the query, cookie and
	// Accept-Language: they do not read the body before the handler
	// bounds it.
	g.POST(route, h.submit, page, h.sameOrigin, h.Forms.LimitForms(h.pages.RequestLang))
	return nil
}

// sameOrigin refuses a post from another site, as the account page does
// (forms.RefuseCrossSite).
func (h *Handler) sameOrigin(next echo.HandlerFunc) echo.HandlerFunc {
	return forms.RefuseCrossSite(h.log, "enrollment", h.Forms.CrossSite, func(r *http.Request) (string, []any) {
		return h.pages.RequestLang(r), nil
	})(next)
}

// lang is the page language by the one rule of every page (pages.Lang);
// the form carries the language it was shown in.
func (h *Handler) lang(r *http.Request) string {
	return h.pages.Lang(r, r.URL.Query().Get("ui_locales"), r.PostForm.Get(fieldLang))
}

// totpSecretRE is a secret totpKey makes: 160 bits in base32.
var totpSecretRE = regexp.MustCompile(`^[A-Z2-7]{32}$`)

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
	return h.render(c, lang, username, "", "")
}

// render shows the form with a fresh double-submit CSRF token, and the
// TOTP secret totpSecret offers ("" = a new one).
func (h *Handler) render(c echo.Context, lang, username, errKey, totpSecret string) error {
	token, err := oauth.NewSecret()
	if err != nil {
		return err
	}
	key, err := h.totpKey(username, totpSecret)
	if err != nil {
		return err
	}
	c.SetCookie(h.csrf().Cookie(token, 0))
	return h.pages.Render(c, pages.Status, "enroll", &pages.Data{
		Lang: lang, TitleKey: "enroll.title", Action: c.Param("token"), CSRF: token, Error: errKey, Username: username,
		Account: View{TOTPSecret: key.Secret(), TOTPURI: key.URL()},
	}, "")
}

// totpKey is the TOTP key offered to username: secret (posted back by the
// form when its code was wrong), or a new one of 160 bits (SHA-1, 6
// digits, 30 s: what authenticator apps support, as admin.EnrollTOTP).
func (h *Handler) totpKey(username, secret string) (*otp.Key, error) {
	issuer := h.Issuer
	if issuer == "" {
		issuer = "signd"
	}
	opts := totp.GenerateOpts{Issuer: issuer, AccountName: username, Period: 30, SecretSize: 20,
		Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1}
	if secret != "" {
		raw, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(secret)
		if err != nil {
			return nil, err
		}
		opts.Secret = raw
	}
	return totp.Generate(opts)
}

// csrf is the form's double-submit CSRF cookie: for the enrollment pages
// only over plain http; under https __Host-signd_enroll_csrf with Path=/,
// which no sibling subdomain can plant.
func (h *Handler) csrf() forms.CSRFCookie {
	return forms.NewCSRFCookie(csrfCookie, h.Forms.CookiePath()+"enroll/", h.Forms.SecureCookies())
}

// submit is POST /oauth2/enroll/{token}.
func (h *Handler) submit(c echo.Context) error {
	r := c.Request()
	r.Body = http.MaxBytesReader(c.Response(), r.Body, MaxForm)
	if err := r.ParseForm(); err != nil {
		return oauth.NewPageError(http.StatusBadRequest, h.pages.RequestLang(r), "errorpage.request")
	}
	for _, k := range []string{fieldCSRF, fieldLang, fieldPassword, fieldPassword2, fieldPIN, fieldPIN2, fieldTOTP, fieldTOTPCode} {
		if len(r.PostForm[k]) > 1 {
			return oauth.NewPageError(http.StatusBadRequest, h.lang(r), "errorpage.request")
		}
	}
	lang := h.lang(r)
	if !h.csrf().Matches(r, r.PostForm.Get(fieldCSRF)) {
		h.log.WarnContext(r.Context(), "enrollment form with a wrong or missing CSRF token")
		return oauth.NewPageError(http.StatusBadRequest, lang, "errorpage.csrf")
	}
	token := c.Param("token")
	f := r.PostForm
	// The TOTP secret the form offered: kept across a refusal when it is
	// one the page could have made, else a new one is offered.
	secret := f.Get(fieldTOTP)
	if !totpSecretRE.MatchString(secret) {
		secret = ""
	}
	again := func(key string) error {
		username, err := h.Backend.EnrollmentUser(r.Context(), token)
		if errors.Is(err, admin.ErrEnrollmentRefused) {
			return refused(lang)
		}
		if err != nil {
			return err
		}
		return h.render(c, lang, username, key, secret)
	}
	if f.Get(fieldPassword) != f.Get(fieldPassword2) || f.Get(fieldPIN) != f.Get(fieldPIN2) {
		return again("enroll.error.mismatch")
	}
	req := admin.EnrollRequest{Token: token, Password: f.Get(fieldPassword), PIN: f.Get(fieldPIN), IP: c.RealIP()}
	if code := f.Get(fieldTOTPCode); code != "" {
		// The user asked for the second factor: the code must be one of
		// the secret the form showed, now.
		step, ok := passwords.TOTPStep(code, secret, h.now())
		if secret == "" || !ok {
			return again("enroll.error.totp")
		}
		req.TOTPSecret, req.TOTPStep = secret, step
	}
	username, err := h.Backend.Enroll(r.Context(), req)
	switch {
	case errors.Is(err, admin.ErrEnrollmentRefused):
		return refused(lang)
	case errors.Is(err, admin.ErrEnrollPassword):
		return again("enroll.error.password")
	case errors.Is(err, admin.ErrEnrollPIN):
		return again("enroll.error.pin")
	case errors.Is(err, admin.ErrEnrollTOTP):
		return again("enroll.error.totp")
	case err != nil:
		return err
	}
	c.SetCookie(h.csrf().Cookie("", -1))
	return h.pages.Render(c, pages.Status, "enroll-done", &pages.Data{Lang: lang, TitleKey: "enroll.title", Username: username}, "")
}
