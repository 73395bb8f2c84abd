package browser

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/oauth"
	"github.com/signd/signd/oauth/forms"
	"github.com/signd/signd/store"
)

// This file refuses login and consent form posts that a browser marks as
// coming from another site, before anything else looks at them. It follows
// the resource isolation policy of W3C Fetch Metadata Request Headers
// (web.dev "Protect your resources from web attacks with Fetch Metadata")
// and the OWASP Cross-Site Request Forgery Prevention Cheat Sheet
// ("Fetch Metadata headers", "Verifying Origin with standard headers"):
//
//   - Sec-Fetch-Site: same-origin, same-site and none (a user action such
//     as a bookmark) pass; cross-site is refused — the policy lets a
//     cross-site request through only as a top-level GET navigation, and
//     these endpoints take only POST. A value no browser sends is refused
//     too. Browsers without Fetch Metadata send no header: that passes to
//     the Origin check.
//   - Origin, when present, must be the origin of server.base_url (the
//     issuer), exactly: same scheme, host and port. "null" (an opaque
//     origin: a sandboxed frame, a data: URL, a redirect chain that crossed
//     sites) is refused. This also refuses a same-site sibling (another
//     subdomain), which Sec-Fetch-Site lets through.
//   - Neither header: the request passes (old browsers and non-browser
//     clients); the browser binding cookie and the CSRF token still apply.
//
// It is not applied to /oauth2/authorize (a client may legitimately post
// an authorization request from its own site, OIDC Core §3.1.2.1) nor to
// /oauth2/token and /oauth2/revoke (server to server, no browser). Referer
// is not checked: signd's pages send none (Referrer-Policy: no-referrer),
// and OWASP makes it only a fallback to Origin.

// The request headers the check reads.
const (
	headerSecFetchSite = "Sec-Fetch-Site"
	headerOrigin       = "Origin"
)

// sameOriginOnly is the route middleware of the form endpoints
// (forms.RefuseCrossSite): the refusal page is in the pending request's
// language, else the request's (Dutch when unknown), and the log names
// its client.
func (h *Handler) sameOriginOnly(next echo.HandlerFunc) echo.HandlerFunc {
	return forms.RefuseCrossSite(h.log, "oauth", h.CrossSite, func(r *http.Request) (string, []any) {
		if req := h.postedRequest(r); req != nil {
			return req.Lang, []any{"client_id", req.ClientID}
		}
		return h.pages.RequestLang(r), []any{"client_id", ""}
	})(next)
}

// CrossSite returns why a form post with header hdr must be refused as
// cross-site, or "" when it may go on.
func (h *Handler) CrossSite(hdr http.Header) string {
	switch site := hdr.Values(headerSecFetchSite); {
	case len(site) > 1:
		return "Sec-Fetch-Site sent more than once"
	case len(site) == 1:
		switch site[0] {
		case "same-origin", "same-site", "none":
		case "cross-site":
			return "Sec-Fetch-Site is cross-site"
		default:
			return "Sec-Fetch-Site has an unknown value"
		}
	}
	switch origin := hdr.Values(headerOrigin); {
	case len(origin) == 0:
		return ""
	case len(origin) > 1:
		return "Origin sent more than once"
	case origin[0] == "null":
		return "Origin is null (an opaque origin)"
	default:
		if o, err := oauth.SerializeOrigin(origin[0], true); err != nil || o != h.origin {
			return "Origin is not the origin of server.base_url"
		}
	}
	return ""
}

// postedRequest returns the pending request a refused form names, for the
// language of the error page, or nil. It only reads.
func (h *Handler) postedRequest(r *http.Request) *store.AuthRequest {
	if err := r.ParseForm(); err != nil {
		return nil
	}
	handles := r.PostForm[fieldRequest]
	if len(handles) != 1 || handles[0] == "" {
		return nil
	}
	var req *store.AuthRequest
	if err := h.store.View(r.Context(), func(tx oauth.Tx) (err error) {
		req, err = tx.AuthRequest(store.Fingerprint(handles[0]))
		return err
	}); err != nil {
		return nil
	}
	return req
}
