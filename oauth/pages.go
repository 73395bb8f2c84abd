package oauth

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"
	"golang.org/x/text/language"
)

//go:embed templates/pages.html templates/account.html templates/style.css
var templateFS embed.FS

// pages renders the login, consent and error pages.
type pages struct {
	tmpl    *template.Template
	style   template.CSS
	csp     string // the page CSP without form-action
	matcher language.Matcher
}

func newPages() (*pages, error) {
	tmpl, err := template.ParseFS(templateFS, "templates/pages.html", "templates/account.html")
	if err != nil {
		return nil, fmt.Errorf("oauth: templates: %w", err)
	}
	css, err := templateFS.ReadFile("templates/style.css")
	if err != nil {
		return nil, fmt.Errorf("oauth: style: %w", err)
	}
	sum := sha256.Sum256(css)
	return &pages{
		tmpl:  tmpl,
		style: template.CSS(css), // our own file, embedded
		// No script at all; the one inline style block by hash.
		csp: "default-src 'none'; style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) +
			"'; frame-ancestors 'none'; base-uri 'none'",
		matcher: newLangMatcher(),
	}, nil
}

// pageData is what the templates see.
type pageData struct {
	Lang     string
	TitleKey string
	Style    template.CSS
	Client   string // client name
	Action   string // form action
	Request  string // request handle (hidden input)
	CSRF     string // CSRF token (hidden input)
	Username string // echoed into the login form after a failure
	Error    string // message key of an error shown on the page
	Consent  *consentView

	// The error page shown before an error redirect (errorpage.go): its
	// link back to the application and its meta refresh content attribute.
	Back    template.URL
	Refresh template.HTMLAttr
	Account *accountView
}

// T translates a message key into the page language.
func (d *pageData) T(key string) string { return msg(d.Lang, key) }

type consentView struct {
	Title       string
	Permissions []string
	Items       []consentItemView
	RequirePIN  bool
}

type consentItemView struct {
	Label, Value string
	Code         bool
}

func newConsentView(c *Consent, lang string) *consentView {
	v := &consentView{Title: c.Title.In(lang), RequirePIN: c.RequirePIN}
	for _, p := range c.Permissions {
		v.Permissions = append(v.Permissions, p.In(lang))
	}
	for _, it := range c.Items {
		v.Items = append(v.Items, consentItemView{Label: it.Label.In(lang), Value: it.Value, Code: it.Code})
	}
	return v
}

// render writes page name with status. formTarget, when set, is the
// redirect URI the page's form may end up at: Chromium applies the CSP
// form-action directive to the redirect that answers a form submission, so
// the client's origin must be allowed beside 'self'.
func (p *pages) render(c echo.Context, status int, name string, d *pageData, formTarget string) error {
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

// renderError writes the HTML error page (never a redirect): unknown
// client, bad redirect URI, unknown or answered request, internal error.
func (p *pages) renderError(c echo.Context, status int, lang, key string) error {
	return p.render(c, status, "error", &pageData{Lang: lang, TitleKey: "errorpage.title", Error: key}, "")
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

// pageStatus is the status of the login or consent page: 200, also when it
// is shown again with an error (browsers and scripted clients treat the
// page the same).
const pageStatus = http.StatusOK
