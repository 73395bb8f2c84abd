package forms

import (
	"log/slog"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/oauth"
)

// RefuseCrossSite is the route middleware of a page's form posts (the
// login, consent, account and enrollment forms): a post that crossSite
// finds a reason to refuse (browser.Handler.CrossSite: Fetch Metadata,
// then Origin) gets the 403 page in the language lang gives, with a
// warning log naming form, the reason and the headers, and its handler
// does not run. lang also returns the log line's extra attributes.
func RefuseCrossSite(log *slog.Logger, form string, crossSite func(http.Header) string,
	lang func(*http.Request) (string, []any)) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			reason := crossSite(r.Header)
			if reason == "" {
				return next(c)
			}
			l, attrs := lang(r)
			log.WarnContext(r.Context(), form+" form refused: posted from another site", append([]any{
				"path", r.URL.Path, "reason", reason,
				"origin", oauth.Clip(r.Header.Get("Origin")), "sec_fetch_site", oauth.Clip(r.Header.Get("Sec-Fetch-Site"))}, attrs...)...)
			return oauth.NewPageError(http.StatusForbidden, l, "errorpage.crosssite")
		}
	}
}
