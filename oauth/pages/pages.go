package pages

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/text/language"
)

//go:embed templates/pages.html templates/account.html templates/style.css
var templateFS embed.FS

// Pages renders the login, consent, account and error pages. Build it
// with New.
type Pages struct {
	tmpl    *template.Template
	style   template.CSS
	csp     string // the page CSP without form-action
	matcher language.Matcher
}

// New parses the embedded templates.
func New() (*Pages, error) {
	tmpl, err := template.ParseFS(templateFS, "templates/pages.html", "templates/account.html")
	if err != nil {
		return nil, fmt.Errorf("oauth: templates: %w", err)
	}
	css, err := templateFS.ReadFile("templates/style.css")
	if err != nil {
		return nil, fmt.Errorf("oauth: style: %w", err)
	}
	sum := sha256.Sum256(css)
	return &Pages{
		tmpl:  tmpl,
		style: template.CSS(css), // our own file, embedded
		// No script at all; the one inline style block by hash.
		csp: "default-src 'none'; style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) +
			"'; frame-ancestors 'none'; base-uri 'none'",
		matcher: newLangMatcher(),
	}, nil
}

// Data is what the templates see.
type Data struct {
	Lang     string
	TitleKey string
	Style    template.CSS
	Client   string // client name
	Action   string // form action
	Request  string // request handle (hidden input)
	CSRF     string // CSRF token (hidden input)
	Username string // echoed into the login form after a failure
	Error    string // message key of an error shown on the page
	Consent  *ConsentView

	// The error page shown before an error redirect (RenderRedirect): its
	// link back to the application and its meta refresh content attribute.
	Back    template.URL
	Refresh template.HTMLAttr
	// Account is the account page's view (the credentials of the user
	// signed in), which the account templates read.
	Account any
}

// T translates a message key into the page language.
func (d *Data) T(key string) string { return Msg(d.Lang, key) }

// ConsentView is the consent page's description of what the user
// approves, in the page language.
type ConsentView struct {
	Title       string
	Permissions []string
	Items       []ConsentItem
	RequirePIN  bool
}

// ConsentItem is one labelled value of the consent page; Code shows it in
// a monospace font.
type ConsentItem struct {
	Label, Value string
	Code         bool
}

// Render writes page name with status. formTarget, when set, is the
// redirect URI the page's form may end up at: Chromium applies the CSP
// form-action directive to the redirect that answers a form submission, so
// the client's origin must be allowed beside 'self'.
func (p *Pages) Render(c echo.Context, status int, name string, d *Data, formTarget string) error {
	d.Style = p.style
	if d.TitleKey == "" {
		d.TitleKey = name + ".title"
	}
	var buf bytes.Buffer
	if err := p.tmpl.ExecuteTemplate(&buf, name, d); err != nil {
		return fmt.Errorf("oauth: render %s: %w", name, err)
	}
	h := c.Response().Header()
	formAction := "form-action 'self'"
	if src := cspSource(formTarget); src != "" {
		formAction += " " + src
	}
	h.Set("Content-Security-Policy", p.csp+"; "+formAction)
	// same-origin, not the daemon's no-referrer: under no-referrer a
	// browser sends "Origin: null" on the page's own form post (Fetch
	// Standard, "append a request Origin header"), which the forms refuse
	// as an opaque origin. same-origin still sends no Referer to any other
	// origin, the client's redirect URI included.
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	h.Set("Pragma", "no-cache")
	h.Set("Content-Language", d.Lang)
	return c.HTMLBlob(status, buf.Bytes())
}

// RenderError writes the HTML error page (never a redirect): unknown
// client, bad redirect URI, unknown or answered request, internal error.
func (p *Pages) RenderError(c echo.Context, status int, lang, key string) error {
	return p.Render(c, status, "error", &Data{Lang: lang, TitleKey: "errorpage.title", Error: key}, "")
}

// cspSource turns a redirect URI into a CSP source expression: the origin
// of an http(s) URI, the scheme of a private-use URI (com.example.app:).
// Anything that could break out of the header gives "".
func cspSource(uri string) string {
	if uri == "" {
		return ""
	}
	u, err := url.Parse(uri)
	if err != nil || u.Scheme == "" {
		return ""
	}
	scheme := strings.ToLower(u.Scheme)
	for _, r := range scheme {
		if !('a' <= r && r <= 'z' || '0' <= r && r <= '9' || r == '+' || r == '-' || r == '.') {
			return ""
		}
	}
	if scheme != "http" && scheme != "https" {
		return scheme + ":"
	}
	for _, r := range u.Host {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune(".-:[]", r)) {
			return ""
		}
	}
	if u.Host == "" {
		return ""
	}
	return scheme + "://" + u.Host
}

// Status is the status of the login, consent and account pages: 200, also
// when one is shown again with an error (browsers and scripted clients
// treat the page the same).
const Status = http.StatusOK

// RedirectDelay is how long the error page shown before an error redirect
// stays before the browser follows the redirect on its own.
const RedirectDelay = 5 * time.Second

// RenderRedirect writes the error page whose button and meta refresh lead
// to loc, the client's redirect URI with the error; key is the message of
// the case. loc is built from a registered redirect URI, so it is trusted
// as a URL (a private-use scheme such as com.example.app: is one too).
func (p *Pages) RenderRedirect(c echo.Context, lang, key, loc string) error {
	return p.Render(c, Status, "redirect", &Data{
		Lang: lang, TitleKey: "errorpage.title", Error: key,
		Back:    template.URL(loc),
		Refresh: template.HTMLAttr(fmt.Sprintf(`content="%s"`, refreshContent(loc))),
	}, "")
}

// refreshContent is the content of the meta refresh: the delay and the
// URL, HTML-escaped for the attribute.
func refreshContent(loc string) string {
	return template.HTMLEscapeString(strconv.Itoa(int(RedirectDelay/time.Second)) + "; url=" + loc)
}
