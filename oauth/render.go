package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/oauth/pages"
)

// This file is the one error renderer of the public HTTP server. Handlers
// and middleware return errors; Echo hands them to Renderer.Handle, its
// HTTPErrorHandler, which decides what the client sees:
//   - the error value names its answer where the handler knows it: a
//     redirect to the client once its redirect URI is validated
//     (redirectError, RFC 6749 §4.1.2.1, RFC 9207), or the HTML error page
//     with a message key (pageError);
//   - otherwise the route says: it tags its requests with a Dialect
//     (WithDialect) and the dialect's Map turns the error into the
//     protocol's *Error (a request over its rate limit, a store that
//     cannot write: the renderer's defaults, 429 and 503);
//   - otherwise (health endpoints, unknown paths, the body limit) the
//     daemon's own JSON {error, error_description}.
//
// Internal error text is logged here, once, and never sent.

// Format is the shape of a dialect's error response.
type Format int

// The formats.
const (
	// FormatJSON is {error, error_description} as application/json.
	FormatJSON Format = iota
	// FormatJSONUTF8 is {error, error_description} as
	// application/json;charset=UTF-8.
	FormatJSONUTF8
	// FormatOAuth is RFC 6749 §5.2: FormatJSONUTF8 with Cache-Control:
	// no-store and Pragma: no-cache, and error_description restricted to
	// the characters the RFC allows.
	FormatOAuth
	// FormatPage is the HTML error page of the browser endpoints.
	FormatPage
)

// Dialect is how the errors of one group of endpoints are written. The
// route or group tags its requests with it (WithDialect); the profile that
// owns the endpoints owns its Map.
type Dialect struct {
	// Name names the dialect in the log ("oauth", "csc", "oidc").
	Name   string
	Format Format
	// Map turns err into the protocol's error response, or returns nil
	// for the renderer's defaults: an *Error as it is, a store that cannot
	// write as StoreUnavailable, anything else 500 server_error with
	// Internal as its description. An *Error without a code is answered
	// without a body (RFC 6750 §3.1). Map does not log: the renderer logs
	// every error that is not the client's.
	Map func(err error) *Error
	// Internal is the error_description of a 500 server_error; "" = none.
	Internal string
}

const dialectKey = "signd.error.dialect"

// WithDialect returns the route or group middleware that tags each request
// with d; it changes nothing else.
func WithDialect(d *Dialect) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			c.Set(dialectKey, d)
			return next(c)
		}
	}
}

// DialectOf returns the dialect the route tagged the request with, or nil.
func DialectOf(c echo.Context) *Dialect {
	d, _ := c.Get(dialectKey).(*Dialect)
	return d
}

// Renderer writes the error responses of the public HTTP server; install
// Handle as Echo's HTTPErrorHandler. Build it with NewRenderer.
type Renderer struct {
	log    *slog.Logger
	pages  *pages.Pages
	daemon *Dialect // of requests no route tagged
}

// NewRenderer builds the renderer; log receives the internal errors (nil =
// discard). It panics only when the embedded page templates do not parse.
func NewRenderer(log *slog.Logger) *Renderer {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p, err := pages.New(pages.Options{})
	if err != nil {
		panic(err) // the templates are embedded: every test would fail
	}
	return &Renderer{log: log, pages: p, daemon: &Dialect{Format: FormatJSON, Internal: "internal error", Map: daemonError}}
}

// WithPages makes the renderer's error pages look like the others (ui.*):
// the daemon builds one *pages.Pages for all of them.
func (r *Renderer) WithPages(p *pages.Pages) *Renderer {
	r.pages = p
	return r
}

const renderedKey = "signd.error.rendered"

// Handle is the HTTPErrorHandler: it writes err in the dialect the error or
// the route chose. A HEAD request is answered without a body. A response
// already sent is left alone.
func (r *Renderer) Handle(err error, c echo.Context) {
	if c.Response().Committed {
		// Echo may hand the same error over more than once (each layer
		// that handles errors passes it on): warn once, and only when the
		// response is a handler's, not this renderer's.
		if c.Get(renderedKey) == nil {
			c.Set(renderedKey, true)
			r.log.WarnContext(c.Request().Context(), "error after the response was sent", "path", c.Request().URL.Path, "err", err)
		}
		return
	}
	c.Set(renderedKey, true)
	d := DialectOf(c)
	if d == nil {
		d = r.daemon
	}
	var re *redirectError
	var pe *PageError
	var werr error
	switch {
	case errors.As(err, &re):
		werr = r.redirect(c, re)
	case errors.As(err, &pe):
		for k, vs := range pe.header {
			c.Response().Header()[k] = vs
		}
		werr = r.pages.RenderError(c, pe.status, pe.lang, pe.key)
	case d.Format == FormatPage:
		werr = r.page(c, d, err)
	default:
		werr = r.writeJSON(c, d, r.resolve(c, d, err))
	}
	if werr != nil {
		r.log.WarnContext(c.Request().Context(), "writing the error response failed", "path", c.Request().URL.Path, "err", werr)
		if !c.Response().Committed {
			_ = c.NoContent(http.StatusInternalServerError)
		}
	}
}

// resolve maps err to the *Error d answers, and logs it unless it is a
// protocol error the handler chose.
func (r *Renderer) resolve(c echo.Context, d *Dialect, err error) *Error {
	var oe *Error
	if d.Map != nil {
		oe = d.Map(err)
	}
	if oe == nil {
		switch {
		case errors.As(err, &oe):
		case StoreUnavailable(err) != nil:
			oe = StoreUnavailable(err)
		case RateLimited(err) != nil:
			oe = RateLimited(err)
		default:
			oe = &Error{Code: CodeServerError, Status: http.StatusInternalServerError, Description: d.Internal}
		}
	}
	if !errors.As(err, new(*Error)) {
		r.logCause(c, d, err, oe.Status)
	}
	return oe
}

// logCause logs an error that is not the client's: a canceled request at
// Info, an unavailable store or token (503) at Warn, anything else at
// Error.
func (r *Renderer) logCause(c echo.Context, d *Dialect, err error, status int) {
	if status < 500 {
		return
	}
	attrs := []any{"dialect", d.Name, "path", c.Request().URL.Path, "err", err}
	switch {
	case errors.Is(err, context.Canceled):
		r.log.InfoContext(c.Request().Context(), "request canceled", attrs...)
	case status == http.StatusServiceUnavailable:
		r.log.WarnContext(c.Request().Context(), "service unavailable", attrs...)
	default:
		r.log.ErrorContext(c.Request().Context(), "request failed", attrs...)
	}
}

type errorBody struct {
	Error       string `json:"error"`
	Description string `json:"error_description,omitempty"`
}

// writeJSON writes oe in d's JSON format: its status (400 when unset) and
// headers (WWW-Authenticate, Retry-After, Allow), then {error,
// error_description}.
func (r *Renderer) writeJSON(c echo.Context, d *Dialect, oe *Error) error {
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
	desc := oe.Description
	if d.Format == FormatOAuth {
		noStore(h)
		desc = safeDescription(desc)
	}
	if oe.Code == "" || c.Request().Method == http.MethodHead {
		return c.NoContent(status)
	}
	body := errorBody{Error: oe.Code, Description: desc}
	if d.Format == FormatJSON {
		return c.JSON(status, body)
	}
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	return c.Blob(status, "application/json;charset=UTF-8", data)
}

// page answers an error of a browser endpoint that is not a pageError: a
// client error Echo found as the generic request page, a store that
// cannot write as "try later" with Retry-After, anything else as the
// internal-error page (500). Its language is the one rule of every page
// (pages.Lang) over the request.
func (r *Renderer) page(c echo.Context, d *Dialect, err error) error {
	var he *echo.HTTPError
	switch {
	case errors.As(err, &he) && he.Code < 500:
		return r.pages.RenderError(c, he.Code, r.pages.RequestLang(c.Request()), "errorpage.request")
	case StoreUnavailable(err) != nil:
		r.logCause(c, d, err, http.StatusServiceUnavailable)
		c.Response().Header().Set("Retry-After", RetryAfter)
		return r.pages.RenderError(c, http.StatusServiceUnavailable, r.pages.RequestLang(c.Request()), "errorpage.later")
	}
	r.logCause(c, d, err, http.StatusInternalServerError)
	return r.pages.RenderError(c, http.StatusInternalServerError, r.pages.RequestLang(c.Request()), "errorpage.server")
}

// redirect sends re to the client: an *Error as it is, a store that cannot
// write as temporarily_unavailable (RFC 6749 §4.1.2.1), anything else
// logged and sent as server_error.
func (r *Renderer) redirect(c echo.Context, re *redirectError) error {
	oe := r.resolve(c, &Dialect{Name: "oauth", Internal: "Internal error"}, re.err)
	p := url.Values{"error": {oe.Code}}
	if d := safeDescription(oe.Description); d != "" {
		p.Set("error_description", d)
	}
	if re.to.Page && navigation(c.Request()) {
		return r.pages.RenderRedirect(c, re.to.Lang, redirectMessage(oe), location(re.to, re.issuer, p))
	}
	return redirectTo(c, re.to, re.issuer, p)
}

// daemonError is the mapping of the daemon's own endpoints: an oversized
// body, and a client error of Echo or a middleware (404, 405, 413) with
// Echo's message as the description.
func daemonError(err error) *Error {
	var mbe *http.MaxBytesError
	var he *echo.HTTPError
	switch {
	case errors.As(err, &mbe):
		return Errorf(CodeInvalidRequest, http.StatusRequestEntityTooLarge, "request body larger than %d bytes", mbe.Limit)
	case errors.As(err, &he) && he.Code < 500:
		return &Error{Code: statusCode(he.Code), Status: he.Code, Description: fmt.Sprint(he.Message)}
	}
	return nil
}

// statusCode is the error code of a client error status at the daemon's
// own endpoints.
func statusCode(status int) string {
	switch status {
	case http.StatusNotFound:
		return "not_found"
	case http.StatusMethodNotAllowed:
		return "method_not_allowed"
	case http.StatusUnauthorized:
		return CodeInvalidToken
	case http.StatusServiceUnavailable:
		return CodeTemporarilyUnavailable
	}
	return CodeInvalidRequest
}

// tokenDialect is the dialect of the token and revocation endpoints:
// RFC 6749 §5.2 JSON; an oversized body or a client error of Echo is
// invalid_request.
func tokenDialect() *Dialect {
	return &Dialect{Name: "oauth", Format: FormatOAuth, Internal: "Internal error", Map: func(err error) *Error {
		var mbe *http.MaxBytesError
		var he *echo.HTTPError
		switch {
		case errors.As(err, &mbe):
			return Errorf(CodeInvalidRequest, http.StatusRequestEntityTooLarge, "Request body too large")
		case errors.As(err, &he) && he.Code < 500:
			return Errorf(CodeInvalidRequest, he.Code, "Invalid request")
		}
		return nil
	}}
}

// PageDialect is the dialect of the authorize, login and consent
// endpoints and of the account page: the HTML error page, unless the
// handler answers with a redirect.
func PageDialect() *Dialect { return &Dialect{Name: "oauth", Format: FormatPage} }

// BearerError is an RFC 6750 §3 error of a protected resource with its
// challenge: WWW-Authenticate: Bearer realm="…"[, error="…"[,
// error_description="…"]]. code "" is a request without credentials
// (§3.1: no error code, no body).
func BearerError(realm, code, desc string, status int) *Error {
	v := `Bearer realm="` + realm + `"`
	if code != "" {
		v += `, error="` + code + `"`
		if desc != "" {
			v += `, error_description="` + desc + `"`
		}
	}
	return &Error{Code: code, Description: desc, Status: status, Header: http.Header{"Www-Authenticate": {v}}}
}

// PageError is an error shown as the HTML error page, never redirected.
type PageError struct {
	status int
	key    string // message key
	lang   string
	header http.Header // set on the response (Retry-After of a 429)
}

func (e *PageError) Error() string { return "oauth: error page " + e.key }

// WithHeader sets h on the error page's response (Retry-After of a 429)
// and returns e.
func (e *PageError) WithHeader(h http.Header) *PageError {
	e.header = h
	return e
}

// NewPageError is the error page with status and the message key in lang
// (oauth/pages).
func NewPageError(status int, lang, key string) *PageError {
	return &PageError{status: status, key: key, lang: lang}
}

// redirectError is an error the client learns by a redirect to its
// validated redirect URI.
type redirectError struct {
	to     Target
	issuer string
	err    error
}

func (e *redirectError) Error() string {
	return fmt.Sprintf("oauth: redirect to the client: %v", e.err)
}

func (e *redirectError) Unwrap() error { return e.err }

// RedirectError returns err as the redirect to t the renderer sends.
func (s *Server) RedirectError(t Target, err error) error {
	return &redirectError{to: t, issuer: s.issuer, err: err}
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

// Target is where a flow's answer goes once the client's redirect URI is
// validated.
type Target struct {
	RedirectURI string
	State       string // echoed when non-empty
	Status      int    // 302 answering a GET, 303 answering a POST (RFC 9700 §4.12)
	Lang        string // page language of an error page
	Page        bool   // an error is shown as a page first (ProfileInfo.ErrorPage)
}

// RedirectTo sends params plus state and iss (RFC 9207) to the redirect
// URI, keeping a query the URI already has.
func (s *Server) RedirectTo(c echo.Context, t Target, params url.Values) error {
	return redirectTo(c, t, s.issuer, params)
}

func redirectTo(c echo.Context, t Target, issuer string, params url.Values) error {
	noStore(c.Response().Header())
	return c.Redirect(t.Status, location(t, issuer, params))
}

// location is the redirect URI with params plus state and iss.
func location(t Target, issuer string, params url.Values) string {
	if t.State != "" {
		params.Set("state", t.State)
	}
	params.Set("iss", issuer)
	loc := t.RedirectURI
	if strings.Contains(loc, "?") {
		loc += "&" + params.Encode()
	} else {
		loc += "?" + params.Encode()
	}
	return loc
}
