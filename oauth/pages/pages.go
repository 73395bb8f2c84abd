package pages

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/text/language"
)

//go:embed templates/pages.html templates/account.html templates/enroll.html templates/style.css
var templateFS embed.FS

// templateFiles are the template files, by the name an override in
// Options.TemplatesDir has.
var templateFiles = []string{"pages.html", "account.html", "enroll.html"}

// pageNames are the templates the callers render; New renders each once
// with sample data, so an override that breaks one stops the start.
var pageNames = []string{"login", "consent", "error", "redirect", "account-login", "account", "enroll", "enroll-done"}

// DefaultProduct is the name the pages show when Options.ProductName is
// empty.
const DefaultProduct = "signd"

// Options brands the pages (the ui.* configuration keys). The zero value
// is the built-in look.
type Options struct {
	// TemplatesDir holds templates that replace the built-in ones by file
	// name (templateFiles); a file it lacks stays built-in.
	TemplatesDir string
	// ProductName is shown in the titles and the footer; "" = signd.
	ProductName string
	// LogoFile is a PNG, JPEG or SVG at most MaxLogoBytes long, shown on
	// every page and served by ServeLogo.
	LogoFile string
	// PrimaryColor is the buttons' colour, #rrggbb; "" = the built-in blue.
	PrimaryColor string
	// BasePath is the path of the issuer (server.base_url), "" or
	// "/prefix": the logo's and the language switch's URLs start with it.
	BasePath string
	// SecureCookies marks the language switch's cookie Secure (signd is
	// served over https).
	SecureCookies bool
}

// MaxLogoBytes bounds Options.LogoFile (config.MaxLogoBytes, which the
// configuration checks first).
const MaxLogoBytes = 256 << 10

// LogoRoute is the route ServeLogo answers: the logo's content hash and
// extension are its parameter, so a new logo is a new URL and the old one
// can be cached for ever.
const LogoRoute = "/ui/:logo"

// Pages renders the login, consent, account and error pages. Build it
// with New.
type Pages struct {
	tmpl    *template.Template
	style   template.CSS
	csp     string // the page CSP without form-action
	matcher language.Matcher
	product string
	logo    logo
	base    string // Options.BasePath without a trailing slash
	secure  bool   // Options.SecureCookies
}

// logo is the configured logo: its bytes, content type and file name
// (logo-<hash>.<ext>); name is "" without a logo.
type logo struct {
	name, url, contentType string
	data                   []byte
}

var colorRE = regexp.MustCompile(`^#[0-9a-fA-F]{6}$`)

// New parses the templates (the built-in ones and the overrides of
// opts.TemplatesDir), renders each page once to check it, and reads the
// logo. Errors name the file (and for a template the line).
func New(opts Options) (*Pages, error) {
	tmpl := template.New("pages")
	for _, name := range templateFiles {
		src, err := templateFS.ReadFile("templates/" + name)
		if err != nil {
			return nil, fmt.Errorf("oauth: templates: %w", err)
		}
		origin := name
		if opts.TemplatesDir != "" {
			p := filepath.Join(opts.TemplatesDir, name)
			override, err := os.ReadFile(p)
			switch {
			case err == nil:
				src, origin = override, p
			case !errors.Is(err, fs.ErrNotExist):
				return nil, fmt.Errorf("ui.templates_dir: %w", err)
			}
		}
		// The template's name is its file's path, so that a parse error
		// reads "template: /etc/signd/templates/pages.html:12: ...".
		if _, err := tmpl.New(origin).Parse(string(src)); err != nil {
			if origin != name {
				return nil, fmt.Errorf("ui.templates_dir: %w", err)
			}
			return nil, fmt.Errorf("oauth: templates: %w", err)
		}
	}
	css, err := templateFS.ReadFile("templates/style.css")
	if err != nil {
		return nil, fmt.Errorf("oauth: style: %w", err)
	}
	if opts.PrimaryColor != "" {
		if !colorRE.MatchString(opts.PrimaryColor) {
			return nil, fmt.Errorf("ui.primary_color: %q is not a colour #rrggbb", opts.PrimaryColor)
		}
		// Later in the one style block than style.css's :root, so it wins;
		// the block's hash in the CSP covers it.
		css = append(css, ":root{--primary:"+strings.ToLower(opts.PrimaryColor)+"}\n"...)
	}
	p := &Pages{
		tmpl:    tmpl,
		style:   template.CSS(css), // our own file and a checked colour
		matcher: newLangMatcher(),
		product: cmp.Or(opts.ProductName, DefaultProduct),
		base:    strings.TrimRight(opts.BasePath, "/"),
		secure:  opts.SecureCookies,
	}
	if opts.LogoFile != "" {
		if p.logo, err = readLogo(opts.LogoFile, opts.BasePath); err != nil {
			return nil, err
		}
	}
	sum := sha256.Sum256(css)
	// No script at all; the one inline style block by hash; images (the
	// logo) only from signd itself.
	p.csp = "default-src 'none'; style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
	if p.logo.name != "" {
		p.csp += "; img-src 'self'"
	}
	p.csp += "; frame-ancestors 'none'; base-uri 'none'"
	if err := p.check(); err != nil {
		return nil, err
	}
	return p, nil
}

// check renders every page in both languages with sample data: an
// override that names a field that does not exist, or lacks a page, fails
// here and not in front of a user.
func (p *Pages) check() error {
	for _, lang := range supportedLangs {
		for _, name := range pageNames {
			d := &Data{
				Lang: lang, TitleKey: name + ".title", Client: "client", Action: "action", Request: "r", CSRF: "c",
				Error: "error.pin", Consent: &ConsentView{Title: "t", Permissions: []string{"p"}, Items: []ConsentItem{{Label: "l", Value: "v"}}},
				Back: "https://client.example/cb",
				Account: sampleAccount{Username: "u", Credentials: []sampleCredential{{
					ID: "c", Description: "d", Subject: "s", Cert: "valid", Status: "enabled", CanDisable: true,
				}}},
			}
			if strings.HasPrefix(name, "account") {
				d.TitleKey = "account.title"
			}
			if strings.HasPrefix(name, "enroll") {
				d.TitleKey = "enroll.title"
				d.Account = sampleEnroll{TOTPSecret: "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP", TOTPURI: "otpauth://totp/signd:u?secret=JBSWY3DPEHPK3PXP"}
			}
			p.brand(d)
			if err := p.tmpl.ExecuteTemplate(io.Discard, name, d); err != nil {
				return fmt.Errorf("ui.templates_dir: page %s: %w", name, err)
			}
		}
	}
	return nil
}

// sampleAccount is the account view check renders the account page with:
// the fields the built-in template reads.
type sampleAccount struct {
	Username    string
	Credentials []sampleCredential
}

// sampleEnroll is the view check renders the enrollment page with (the
// fields of oauth/enroll's View).
type sampleEnroll struct{ TOTPSecret, TOTPURI string }

type sampleCredential struct {
	ID, Description, Subject, ValidFrom, ValidTo, Cert, Status string
	CanDisable, CanEnable                                      bool
}

// readLogo reads and checks the logo: at most MaxLogoBytes, and its
// content what its extension says (a PNG, a JPEG, or an SVG document).
func readLogo(path, basePath string) (logo, error) {
	f, err := os.Open(path)
	if err != nil {
		return logo{}, fmt.Errorf("ui.logo_file: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxLogoBytes+1))
	if err != nil {
		return logo{}, fmt.Errorf("ui.logo_file: %s: %w", path, err)
	}
	if len(data) > MaxLogoBytes {
		return logo{}, fmt.Errorf("ui.logo_file: %s is larger than %d bytes", path, MaxLogoBytes)
	}
	ext := strings.ToLower(filepath.Ext(path))
	var ct string
	switch sniffed := http.DetectContentType(data); {
	case ext == ".png" && sniffed == "image/png":
		ct = "image/png"
	case (ext == ".jpg" || ext == ".jpeg") && sniffed == "image/jpeg":
		ct, ext = "image/jpeg", ".jpg"
	case ext == ".svg" && isSVG(data):
		ct = "image/svg+xml"
	default:
		return logo{}, fmt.Errorf("ui.logo_file: %s is not a %s image (its content looks like %s)", path, strings.TrimPrefix(ext, "."), sniffed)
	}
	sum := sha256.Sum256(data)
	name := "logo-" + hex.EncodeToString(sum[:8]) + ext
	return logo{name: name, url: strings.TrimRight(basePath, "/") + "/ui/" + name, contentType: ct, data: data}, nil
}

// isSVG reports whether data is an XML document whose root is svg.
func isSVG(data []byte) bool {
	dec := xml.NewDecoder(bytes.NewReader(data))
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		if se, ok := tok.(xml.StartElement); ok {
			return se.Name.Local == "svg"
		}
	}
}

// LogoURL is the path of the logo ("" without one).
func (p *Pages) LogoURL() string { return p.logo.url }

// ServeLogo answers LogoRoute: the logo under its current name, cached for
// a year (the name changes with the content); any other name is 404. An
// SVG gets a CSP that forbids everything and sandboxes it, so a script in
// it never runs, even when the logo is opened as a document rather than
// through the pages' img element (which never runs script).
func (p *Pages) ServeLogo(c echo.Context) error {
	if p.logo.name == "" || c.Param("logo") != p.logo.name {
		return echo.ErrNotFound
	}
	h := c.Response().Header()
	h.Set("Cache-Control", "public, max-age=31536000, immutable")
	h.Del("Pragma")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; sandbox")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	return c.Blob(http.StatusOK, p.logo.contentType, p.logo.data)
}

// brand fills in what every page shows: the style, product name and logo.
func (p *Pages) brand(d *Data) {
	d.Style, d.Product, d.Logo = p.style, p.product, p.logo.url
}

// Data is what the templates see.
type Data struct {
	Lang     string
	TitleKey string
	Style    template.CSS
	Product  string // ui.product_name
	Logo     string // the logo's URL, "" = none
	// Switch is the language switch's link to the page in the other
	// language ("" = none: a page answering a form post cannot be shown
	// again by a link).
	Switch   string
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
	// signed in), which the account templates read; on the enrollment
	// page, oauth/enroll's View (the TOTP secret offered).
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
	p.brand(d)
	if d.Switch == "" {
		d.Switch = p.switchURL(c.Request(), d.Lang)
	}
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

// LangRoute is the language switch (SwitchLang): /ui/lang/nl or
// /ui/lang/en, with the page to go back to in back.
const LangRoute = "/ui/lang/:lang"

// langCookieAge is how long the browser keeps the language chosen.
const langCookieAge = 365 * 24 * time.Hour

// otherLang is the language the switch offers on a page in lang.
func otherLang(lang string) string {
	if lang == EN {
		return NL
	}
	return EN
}

// switchURL is the language switch's link on a page that r answers in
// lang: back to the same page without ui_locales and lang, which would
// otherwise win over the cookie. A page that answers a form post has
// none.
func (p *Pages) switchURL(r *http.Request, lang string) string {
	if r == nil || r.Method != http.MethodGet {
		return ""
	}
	q := r.URL.Query()
	q.Del("ui_locales")
	q.Del("lang")
	back := p.base + r.URL.EscapedPath()
	if len(q) > 0 {
		back += "?" + q.Encode()
	}
	return p.base + "/ui/lang/" + otherLang(lang) + "?" + url.Values{"back": {back}}.Encode()
}

// SwitchLang answers LangRoute: it sets LangCookie to the language asked
// for (nl or en) and sends the browser back to the page it came from
// (back), which then follows the cookie (Lang). back must be a path of
// signd's own pages; anything else (another site, a scheme-relative
// //host, a backslash) goes to the account page instead, so the switch is
// no open redirect.
func (p *Pages) SwitchLang(c echo.Context) error {
	lang := c.Param("lang")
	if lang != NL && lang != EN {
		return p.RenderError(c, http.StatusNotFound, p.RequestLang(c.Request()), "errorpage.request")
	}
	c.SetCookie(&http.Cookie{
		Name: LangCookie, Value: lang, Path: p.base + "/", MaxAge: int(langCookieAge / time.Second),
		HttpOnly: true, Secure: p.secure, SameSite: http.SameSiteLaxMode,
	})
	back := c.QueryParam("back")
	if !p.ownPage(back) {
		back = p.base + "/oauth2/account"
	}
	return c.Redirect(http.StatusSeeOther, back)
}

// ownPage reports whether back is the path (and query) of one of signd's
// pages: under BasePath/oauth2/, no scheme or host, nothing a browser
// would read as another host.
func (p *Pages) ownPage(back string) bool {
	if !strings.HasPrefix(back, p.base+"/oauth2/") || strings.HasPrefix(back, "//") ||
		strings.ContainsAny(back, "\\\x00\r\n\t") || len(back) > 4096 {
		return false
	}
	u, err := url.Parse(back)
	return err == nil && u.Scheme == "" && u.Host == "" && u.Opaque == "" && !strings.Contains(u.Path, "..")
}
