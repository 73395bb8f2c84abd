package oauth

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"
)

// This file is the one error writer of the authorization server. Handlers
// return *Error values (or internal errors); what the client sees is
// decided here:
//   - at the token and revocation endpoints: RFC 6749 §5.2 JSON;
//   - at the authorize, login and consent endpoints before the redirect URI
//     is known to be the client's: an HTML error page (pageError);
//   - after that: a redirect to the client (redirectTo).

// pageError is an error shown as the HTML error page, never redirected.
type pageError struct {
	status int
	key    string // message key
	lang   string
}

func (e *pageError) Error() string { return "oauth: error page " + e.key }

func newPageError(status int, lang, key string) *pageError {
	return &pageError{status: status, key: key, lang: lang}
}

// pageErrors is the route middleware of the HTML endpoints: a *pageError
// becomes its page, anything else is logged and becomes the internal-error
// page (500). Handlers that know the redirect URI answer errors themselves
// with a redirect.
func (s *Server) pageErrors(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		err := next(c)
		if err == nil || c.Response().Committed {
			return err
		}
		var pe *pageError
		if errors.As(err, &pe) {
			return s.pages.renderError(c, pe.status, pe.lang, pe.key)
		}
		var he *echo.HTTPError
		if errors.As(err, &he) && he.Code < 500 {
			return s.pages.renderError(c, he.Code, langNL, "errorpage.request")
		}
		if oe := StoreUnavailable(err); oe != nil {
			s.log.Warn("oauth page: store not writable", "path", c.Request().URL.Path, "err", err)
			c.Response().Header().Set("Retry-After", RetryAfter)
			return s.pages.renderError(c, oe.Status, langNL, "errorpage.later")
		}
		s.log.Error("oauth page failed", "path", c.Request().URL.Path, "err", err)
		return s.pages.renderError(c, http.StatusInternalServerError, langNL, "errorpage.server")
	}
}

// jsonErrors is the route middleware of the token and revocation
// endpoints: RFC 6749 §5.2 JSON with no-store.
func (s *Server) jsonErrors(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		err := next(c)
		if err == nil || c.Response().Committed {
			return err
		}
		return s.writeJSONError(c, err)
	}
}

type errorBody struct {
	Error       string `json:"error"`
	Description string `json:"error_description,omitempty"`
}

// writeJSONError writes err as {error, error_description}. An *Error keeps
// its status (400 when unset) and headers; an oversized body is
// invalid_request; anything else is logged and becomes a bare 500
// server_error.
func (s *Server) writeJSONError(c echo.Context, err error) error {
	var oe *Error
	var mbe *http.MaxBytesError
	var he *echo.HTTPError
	switch {
	case errors.As(err, &oe):
	case errors.As(err, &mbe):
		oe = Errorf(CodeInvalidRequest, http.StatusRequestEntityTooLarge, "Request body too large")
	case errors.As(err, &he) && he.Code < 500:
		oe = Errorf(CodeInvalidRequest, he.Code, "Invalid request")
	case StoreUnavailable(err) != nil:
		s.log.Warn("oauth request: store not writable", "path", c.Request().URL.Path, "err", err)
		oe = StoreUnavailable(err)
	default:
		s.log.Error("oauth request failed", "path", c.Request().URL.Path, "err", err)
		oe = Errorf(CodeServerError, http.StatusInternalServerError, "Internal error")
	}
	status := oe.Status
	if status == 0 {
		status = http.StatusBadRequest
	}
	h := c.Response().Header()
	for k, vs := range oe.Header {
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	noStore(h)
	body, jerr := json.Marshal(errorBody{Error: oe.Code, Description: safeDescription(oe.Description)})
	if jerr != nil {
		return jerr
	}
	return c.Blob(status, "application/json;charset=UTF-8", body)
}

func noStore(h http.Header) {
	h.Set("Cache-Control", "no-store")
	h.Set("Pragma", "no-cache")
}

// safeDescription keeps only the characters RFC 6749 allows in
// error_description (%x20-21 / %x23-5B / %x5D-7E).
func safeDescription(s string) string {
	ok := true
	for i := 0; i < len(s); i++ {
		if !allowedDescByte(s[i]) {
			ok = false
			break
		}
	}
	if ok {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if allowedDescByte(s[i]) {
			b.WriteByte(s[i])
		} else {
			b.WriteByte('?')
		}
	}
	return b.String()
}

func allowedDescByte(c byte) bool {
	return c == 0x20 || c == 0x21 || (c >= 0x23 && c <= 0x5b) || (c >= 0x5d && c <= 0x7e)
}

// target is where a flow's answer goes once the client's redirect URI is
// validated.
type target struct {
	redirectURI string
	state       string // echoed when non-empty
	status      int    // 302 answering a GET, 303 answering a POST (RFC 9700 §4.12)
}

// redirectTo sends params plus state and iss (RFC 9207) to the redirect
// URI, keeping a query the URI already has.
func (s *Server) redirectTo(c echo.Context, t target, params url.Values) error {
	if t.state != "" {
		params.Set("state", t.state)
	}
	params.Set("iss", s.issuer)
	loc := t.redirectURI
	if strings.Contains(loc, "?") {
		loc += "&" + params.Encode()
	} else {
		loc += "?" + params.Encode()
	}
	noStore(c.Response().Header())
	return c.Redirect(t.status, loc)
}

// redirectError redirects err to the client: an *Error as it is, a store
// that cannot write as temporarily_unavailable (RFC 6749 §4.1.2.1),
// anything else logged and sent as server_error.
func (s *Server) redirectError(c echo.Context, t target, err error) error {
	var oe *Error
	switch {
	case errors.As(err, &oe):
	case StoreUnavailable(err) != nil:
		s.log.Warn("oauth flow: store not writable", "path", c.Request().URL.Path, "err", err)
		oe = StoreUnavailable(err)
	default:
		s.log.Error("oauth flow failed", "path", c.Request().URL.Path, "err", err)
		oe = Errorf(CodeServerError, http.StatusInternalServerError, "Internal error")
	}
	p := url.Values{"error": {oe.Code}}
	if d := safeDescription(oe.Description); d != "" {
		p.Set("error_description", d)
	}
	return s.redirectTo(c, t, p)
}
