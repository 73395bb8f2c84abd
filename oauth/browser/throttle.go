package browser

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/oauth"
	"github.com/signd/signd/oauth/ratelimit"
)

// LimitForms is the route middleware of the form endpoints: a post over
// FormLimit's bucket of its remote address gets the 429 error page, in the
// language lang finds, with Retry-After.
func (h *Handler) LimitForms(lang func(*http.Request) string) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			err := h.cfg.FormLimit.Allow(ratelimit.RemoteKey(c.RealIP()))
			var r *ratelimit.Refused
			if !errors.As(err, &r) {
				return next(c)
			}
			return oauth.NewPageError(http.StatusTooManyRequests, lang(c.Request()), "errorpage.ratelimit").
				WithHeader(http.Header{"Retry-After": {r.Seconds()}})
		}
	}
}

// loginLang is the language of a login form post's error page: its pending
// request's; when it names none, the one rule of every page (pages.Lang).
func (h *Handler) loginLang(r *http.Request) string {
	if req := h.postedRequest(r); req != nil {
		return req.Lang
	}
	return h.pages.RequestLang(r)
}
