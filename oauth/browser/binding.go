package browser

import (
	"encoding/base64"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/oauth"
	"github.com/signd/signd/oauth/forms"
	"github.com/signd/signd/store"
)

// This file binds every pending authorization request to the browser that
// was shown its first page, against login CSRF (OWASP Cross-Site Request
// Forgery Prevention Cheat Sheet, "Login CSRF"): the request handle and
// CSRF token of a login form are no secret from whoever loaded that form,
// so an attacker could load the login page himself and make a victim's
// browser post it with his own credentials, logging the victim into the
// attacker's session. The forms are therefore answerable only by a browser
// that presents the binding cookie the request was created with.
//
// One browser keeps one binding value across its flows: the value is
// created when the browser has none and reused when it has one, so several
// tabs (several pending requests) work side by side. It is not rotated at
// login either (that would orphan the other tabs' pending requests).
//
// A planted value (session fixation: an attacker who made the victim's
// browser hold a binding value he knows) does not give him the victim's
// flow: the victim's request handle and CSRF token travel only in the
// victim's own pages, so he still cannot answer the victim's forms, and the
// victim's own requests stay bound to the victim's browser. The other way
// round, posting the attacker's own forms through the victim's browser with
// the planted value, is refused by the Origin / Sec-Fetch-Site check
// (fetchmeta.go): neither a cross-site page nor a sibling subdomain can send
// signd's origin as Origin. Under TLS the cookie carries the __Host- prefix,
// so neither a sibling subdomain nor a plain-http response can set it at all
// (RFC 6265bis, cookie name prefixes); over plain http an attacker on the
// network can set any cookie anyway.

// noBindingCookie is bindingValue's problem when the request has none.
const noBindingCookie = "no binding cookie"

// bindingCookieLen is the length of a well-formed binding value: newSecret's
// 32 bytes in unpadded base64url.
const bindingCookieLen = 43

// bindingValue returns the request's one well-formed binding cookie value,
// or why it has none: no cookie, the cookie more than once (a cookie of the
// same name set by another path or a parent domain: ambiguous, so refused),
// or a value that newSecret cannot have made (empty, oversized, wrong
// alphabet).
func (h *Handler) bindingValue(r *http.Request) (value, problem string) {
	value, n := forms.OneCookie(r, h.bindingName)
	switch {
	case n == 0:
		return "", noBindingCookie
	case n > 1:
		return "", "binding cookie sent more than once"
	case !wellFormedSecret(value):
		return "", "malformed binding cookie"
	}
	return value, ""
}

// wellFormedSecret reports whether v is what newSecret returns.
func wellFormedSecret(v string) bool {
	if len(v) != bindingCookieLen {
		return false
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(v)
	return err == nil && len(b) == oauth.SecretBytes
}

// bindBrowser binds the new request of f to the browser: the browser's
// binding value when it has a well-formed one, else a fresh one. The
// cookie to (re)set is kept in f and sent when the request is stored, so
// its expiry always covers the newest request bound to it.
func (h *Handler) bindBrowser(c echo.Context, f *flow, now time.Time) error {
	value, problem := h.bindingValue(c.Request())
	if problem != "" {
		if problem != noBindingCookie {
			h.log.InfoContext(c.Request().Context(), "browser binding cookie replaced", "client_id", f.req.ClientID, "reason", problem)
		}
		var err error
		if value, err = oauth.NewSecret(); err != nil {
			return err
		}
	}
	lifetime := h.requestLifetime()
	f.req.BindingHash = store.Fingerprint(value)
	f.binding = &http.Cookie{
		Name: h.bindingName, Value: value, Path: h.bindingPath,
		MaxAge: int(lifetime / time.Second), Expires: now.Add(lifetime),
		HttpOnly: true, Secure: h.cfg.SecureCookies, SameSite: http.SameSiteLaxMode,
	}
	return nil
}

// sendBinding sets the binding cookie of a request that was just stored.
func sendBinding(c echo.Context, f *flow) {
	if f.binding != nil {
		c.SetCookie(f.binding)
		f.binding = nil
	}
}

// checkBinding refuses a form post from a browser other than the one the
// request is bound to: 403, nothing changed, a warning without secrets.
// The fingerprints are compared in constant time.
func (h *Handler) checkBinding(r *http.Request, req *store.AuthRequest) error {
	value, problem := h.bindingValue(r)
	if problem == "" && !oauth.MatchesFingerprint(value, req.BindingHash) {
		problem = "binding cookie of another browser"
	}
	if problem == "" {
		return nil
	}
	h.log.Warn("oauth form refused: not the browser the request is bound to",
		"client_id", req.ClientID, "path", r.URL.Path, "reason", problem)
	return oauth.NewPageError(http.StatusForbidden, req.Lang, "errorpage.browser")
}
