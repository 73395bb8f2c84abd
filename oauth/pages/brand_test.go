package pages_test

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/oauth/pages"
)

// TestLang is the one language rule of every page: ui_locales, then lang,
// then the language switch's cookie, then Accept-Language, then Dutch.
func TestLang(t *testing.T) {
	p, err := pages.New(pages.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, uiLocales, lang, cookie, accept, want string
	}{
		{"nothing", "", "", "", "", "nl"},
		{"Accept-Language", "", "", "", "en-GB,en;q=0.9", "en"},
		{"Accept-Language unsupported", "", "", "", "de-DE,fr;q=0.5", "nl"},
		{"Accept-Language garbage", "", "", "", ";;;q=x", "nl"},
		{"cookie beats Accept-Language", "", "", "en", "nl-NL", "en"},
		{"cookie nl beats Accept-Language en", "", "", "nl", "en-US", "nl"},
		{"bad cookie ignored", "", "", "de", "en", "en"},
		{"cookie in another case ignored", "", "", "EN", "", "nl"},
		{"lang beats cookie", "", "nl", "en", "en", "nl"},
		{"ui_locales beats lang", "en", "nl", "nl", "nl", "en"},
		{"ui_locales beats cookie", "nl", "", "en", "en", "nl"},
		{"unsupported ui_locales falls through", "de fr", "", "en", "", "en"},
		{"ui_locales order", "de en-US nl", "", "", "", "en"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/oauth2/account", nil)
			if tt.cookie != "" {
				r.AddCookie(&http.Cookie{Name: pages.LangCookie, Value: tt.cookie})
			}
			if tt.accept != "" {
				r.Header.Set("Accept-Language", tt.accept)
			}
			if got := p.Lang(r, tt.uiLocales, tt.lang); got != tt.want {
				t.Errorf("Lang = %s, want %s", got, tt.want)
			}
			// RequestLang reads ui_locales and lang from the query.
			q := r.URL.Query()
			q.Set("ui_locales", tt.uiLocales)
			q.Set("lang", tt.lang)
			r.URL.RawQuery = q.Encode()
			if got := p.RequestLang(r); got != tt.want {
				t.Errorf("RequestLang = %s, want %s", got, tt.want)
			}
		})
	}
	if got := p.Lang(nil, "", ""); got != "nl" {
		t.Errorf("Lang(nil) = %s", got)
	}
}

// render renders page name with p and returns the response.
func render(t *testing.T, p *pages.Pages, name, lang string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	c := echo.New().NewContext(httptest.NewRequest(http.MethodGet, "/oauth2/authorize", nil), rec)
	d := &pages.Data{Lang: lang, Client: "Client <App>", Action: "login", Request: "r", CSRF: "c",
		Consent: &pages.ConsentView{Title: "T", Items: []pages.ConsentItem{{Label: "Document", Value: `<script>alert("x")</script>`}}}}
	if err := p.Render(c, http.StatusOK, name, d, ""); err != nil {
		t.Fatal(err)
	}
	return rec
}

var styleRE = regexp.MustCompile(`(?s)<style>(.*?)</style>`)

// TestBranding renders a branded page: the product name in the title and
// the footer, the logo from signd itself, the colour in the one style
// block whose hash the CSP names; everything escaped.
func TestBranding(t *testing.T) {
	p, err := pages.New(pages.Options{ProductName: `Acme <Sign> & "Seal"`, LogoFile: "testdata/logo.png",
		PrimaryColor: "#C01060", BasePath: "/signd"})
	if err != nil {
		t.Fatal(err)
	}
	for _, lang := range []string{"nl", "en"} {
		rec := render(t, p, "consent", lang)
		body := rec.Body.String()
		name := "Acme &lt;Sign&gt; &amp; &#34;Seal&#34;"
		title := map[string]string{"nl": "Toestemming", "en": "Consent"}[lang]
		for _, want := range []string{
			"<title>" + title + " – " + name + "</title>",
			"<footer>" + name + " · ",
			`<img src="` + p.LogoURL() + `" alt="` + name + `" id="logo">`,
			":root{--primary:#c01060}",
			"&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;",
		} {
			if !strings.Contains(body, want) {
				t.Errorf("%s: page lacks %s:\n%s", lang, want, body)
			}
		}
		if !regexp.MustCompile(`^/signd/ui/logo-[0-9a-f]{16}\.png$`).MatchString(p.LogoURL()) {
			t.Errorf("logo URL %q", p.LogoURL())
		}
		csp := rec.Header().Get("Content-Security-Policy")
		m := styleRE.FindStringSubmatch(body)
		if m == nil {
			t.Fatal("no style block")
		}
		sum := sha256.Sum256([]byte(m[1]))
		if !strings.Contains(csp, "style-src 'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'") {
			t.Errorf("CSP %q does not allow the style block by its hash", csp)
		}
		if !strings.Contains(csp, "img-src 'self'") || !strings.Contains(csp, "default-src 'none'") ||
			strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "script-src") {
			t.Errorf("CSP %q", csp)
		}
		if strings.Contains(body, " style=") {
			t.Errorf("page has a style attribute, which the CSP refuses")
		}
	}
	// The built-in look: signd, no logo, no img-src.
	p, err = pages.New(pages.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rec := render(t, p, "login", "en")
	if body := rec.Body.String(); !strings.Contains(body, "<title>Sign in – signd</title>") || strings.Contains(body, "<img") {
		t.Errorf("built-in page:\n%s", body)
	}
	if csp := rec.Header().Get("Content-Security-Policy"); strings.Contains(csp, "img-src") {
		t.Errorf("CSP without a logo allows images: %q", csp)
	}
}

// TestServeLogo: the logo under its hashed name, cached for good; an SVG
// sandboxed with a CSP without script; any other name 404.
func TestServeLogo(t *testing.T) {
	for _, tt := range []struct{ file, contentType string }{
		{"testdata/logo.png", "image/png"},
		{"testdata/logo.svg", "image/svg+xml"},
	} {
		t.Run(filepath.Base(tt.file), func(t *testing.T) {
			p, err := pages.New(pages.Options{LogoFile: tt.file})
			if err != nil {
				t.Fatal(err)
			}
			want, _ := os.ReadFile(tt.file)
			e := echo.New()
			e.GET(pages.LogoRoute, p.ServeLogo)
			rec := httptest.NewRecorder()
			e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, p.LogoURL(), nil))
			h := rec.Header()
			if rec.Code != http.StatusOK || rec.Body.String() != string(want) || h.Get("Content-Type") != tt.contentType {
				t.Fatalf("GET %s: %d %q", p.LogoURL(), rec.Code, h.Get("Content-Type"))
			}
			csp := h.Get("Content-Security-Policy")
			if !strings.Contains(csp, "sandbox") || !strings.Contains(csp, "default-src 'none'") || strings.Contains(csp, "script") {
				t.Errorf("logo CSP %q: an SVG opened as a document could run its script", csp)
			}
			if h.Get("X-Content-Type-Options") != "nosniff" || !strings.Contains(h.Get("Cache-Control"), "immutable") {
				t.Errorf("logo headers %v", h)
			}
			for _, path := range []string{"/ui/logo-0000000000000000.png", "/ui/logo.png", "/ui/" + strings.Repeat("a", 300)} {
				rec := httptest.NewRecorder()
				e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
				if rec.Code != http.StatusNotFound {
					t.Errorf("GET %s: %d, want 404", path, rec.Code)
				}
			}
		})
	}
	// Without a logo the route answers nothing.
	p, _ := pages.New(pages.Options{})
	e := echo.New()
	e.GET(pages.LogoRoute, p.ServeLogo)
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/ui/logo-0000000000000000.png", nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("no logo: %d, want 404", rec.Code)
	}
}

// TestTemplatesDir: a template in ui.templates_dir replaces the built-in
// one of its name, the others stay built-in; an override that does not
// parse or render stops New, naming the file and line.
func TestTemplatesDir(t *testing.T) {
	builtin, err := os.ReadFile("templates/pages.html")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	custom := strings.Replace(string(builtin), `<h1>{{.T "login.heading"}}</h1>`, `<h1 class="custom">Welkom bij {{.Product}} &amp; co</h1>`, 1)
	if err := os.WriteFile(filepath.Join(dir, "pages.html"), []byte(custom), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := pages.New(pages.Options{TemplatesDir: dir, ProductName: "<Acme>"})
	if err != nil {
		t.Fatal(err)
	}
	if body := render(t, p, "login", "nl").Body.String(); !strings.Contains(body, `<h1 class="custom">Welkom bij &lt;Acme&gt; &amp; co</h1>`) {
		t.Errorf("the override is not used, or does not escape:\n%s", body)
	}
	// account.html is not in dir: the built-in one renders.
	rec := httptest.NewRecorder()
	c := echo.New().NewContext(httptest.NewRequest(http.MethodGet, "/oauth2/account", nil), rec)
	if err := p.Render(c, http.StatusOK, "account-login", &pages.Data{Lang: "en", TitleKey: "account.title"}, ""); err != nil || !strings.Contains(rec.Body.String(), "Sign in to see your signing keys") {
		t.Errorf("built-in account page: %v\n%s", err, rec.Body.String())
	}

	for _, tt := range []struct {
		name, file, content, want string
	}{
		{"syntax error", "pages.html", "{{define \"login\"}}\n<p>\n{{if .Error}}\n{{end}}", "/pages.html:4: unexpected EOF"},
		{"unclosed action", "pages.html", strings.Replace(string(builtin), `{{.T "login.heading"}}`, `{{.T "login.heading"`, 1), `/pages.html:27: unexpected "<" in operand`},
		{"unknown field", "pages.html", strings.Replace(string(builtin), `{{.T "login.heading"}}`, `{{.Password}}`, 1), "/pages.html:27:6: executing \"login\" at <.Password>: can't evaluate field Password"},
		{"page missing", "account.html", `{{define "account-login"}}x{{end}}`, `page account: html/template: "account" is undefined`},
		{"unknown function", "account.html", `{{define "account"}}{{exec "ls"}}{{end}}`, `account.html:1: function "exec" not defined`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, tt.file), []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := pages.New(pages.Options{TemplatesDir: dir})
			if err == nil || !strings.HasPrefix(err.Error(), "ui.templates_dir: ") || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New: %v, want ui.templates_dir: ...%s", err, tt.want)
			}
		})
	}
	t.Run("template is a directory", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.Mkdir(filepath.Join(dir, "pages.html"), 0o755); err != nil {
			t.Fatal(err)
		}
		if _, err := pages.New(pages.Options{TemplatesDir: dir}); err == nil || !strings.Contains(err.Error(), "pages.html: is a directory") {
			t.Errorf("New: %v", err)
		}
	})
	t.Run("dir missing", func(t *testing.T) {
		if _, err := pages.New(pages.Options{TemplatesDir: filepath.Join(dir, "nope")}); err != nil {
			t.Errorf("New with a missing dir (config check refuses it first): %v", err)
		}
	})
}

// TestLogoRefused: a logo whose content is not what its name says, or
// too large, or a colour that is not #rrggbb, stops New.
func TestLogoRefused(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	png, _ := os.ReadFile("testdata/logo.png")
	for _, tt := range []struct {
		name string
		opts pages.Options
		want string
	}{
		{"html as png", pages.Options{LogoFile: write("a.png", []byte("<html><script>alert(1)</script></html>"))}, "a.png is not a png image (its content looks like text/html"},
		{"png as svg", pages.Options{LogoFile: write("b.svg", png)}, "b.svg is not a svg image (its content looks like image/png)"},
		{"html as svg", pages.Options{LogoFile: write("c.svg", []byte("<html><body>x</body></html>"))}, "c.svg is not a svg image"},
		{"png as jpeg", pages.Options{LogoFile: write("d.jpg", png)}, "d.jpg is not a jpg image"},
		{"gif", pages.Options{LogoFile: write("e.gif", []byte("GIF89a"))}, "e.gif is not a gif image"},
		{"oversized", pages.Options{LogoFile: write("f.png", append(png, make([]byte, pages.MaxLogoBytes)...))}, "f.png is larger than 262144 bytes"},
		{"missing", pages.Options{LogoFile: filepath.Join(dir, "nope.png")}, "nope.png: no such file or directory"},
		{"directory", pages.Options{LogoFile: dir}, "is a directory"},
		{"colour", pages.Options{PrimaryColor: "#000;}body{x:y"}, `ui.primary_color: "#000;}body{x:y" is not a colour #rrggbb`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := pages.New(tt.opts); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New: %v, want ...%s", err, tt.want)
			}
		})
	}
}

// TestSwitchLang: the switch sets the cookie the rule reads and goes back
// to the page, only ever to one of signd's own pages.
func TestSwitchLang(t *testing.T) {
	p, err := pages.New(pages.Options{BasePath: "/signd/", SecureCookies: true})
	if err != nil {
		t.Fatal(err)
	}
	e := echo.New()
	e.GET(pages.LangRoute, p.SwitchLang)
	for _, tt := range []struct{ back, want string }{
		{"/signd/oauth2/authorize?client_id=rp&state=x", "/signd/oauth2/authorize?client_id=rp&state=x"},
		{"/signd/oauth2/account", "/signd/oauth2/account"},
		{"", "/signd/oauth2/account"},
		{"https://evil.example/signd/oauth2/", "/signd/oauth2/account"},
		{"//evil.example/signd/oauth2/", "/signd/oauth2/account"},
		{"/signd/oauth2/\\evil.example", "/signd/oauth2/account"},
		{"/\\evil.example/signd/oauth2/", "/signd/oauth2/account"},
		{"/signd/oauth2/../../evil", "/signd/oauth2/account"},
		{"/signd/oauth2/x\r\nSet-Cookie: a=b", "/signd/oauth2/account"},
		{"javascript:alert(1)//signd/oauth2/", "/signd/oauth2/account"},
		{"/other/path", "/signd/oauth2/account"},
		{"/signd/oauth2/" + strings.Repeat("a", 5000), "/signd/oauth2/account"},
	} {
		t.Run(tt.back, func(t *testing.T) {
			rec := httptest.NewRecorder()
			e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/ui/lang/en?back="+url.QueryEscape(tt.back), nil))
			if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != tt.want {
				t.Errorf("%d Location %q, want 303 %q", rec.Code, rec.Header().Get("Location"), tt.want)
			}
			ck := rec.Header().Get("Set-Cookie")
			for _, want := range []string{pages.LangCookie + "=en", "Path=/signd/", "Max-Age=31536000", "HttpOnly", "Secure", "SameSite=Lax"} {
				if !strings.Contains(ck, want) {
					t.Errorf("Set-Cookie %q lacks %s", ck, want)
				}
			}
		})
	}
	for _, path := range []string{"/ui/lang/de", "/ui/lang/EN", "/ui/lang/en-GB"} {
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path+"?back=/signd/oauth2/account", nil))
		if rec.Code != http.StatusNotFound || rec.Header().Get("Set-Cookie") != "" {
			t.Errorf("GET %s: %d %q, want 404 without a cookie", path, rec.Code, rec.Header().Get("Set-Cookie"))
		}
	}

	// A page shown by GET links to the switch, back to itself without
	// ui_locales and lang; a page answering a post has no link.
	rec := httptest.NewRecorder()
	c := e.NewContext(httptest.NewRequest(http.MethodGet, "/oauth2/authorize?client_id=rp&ui_locales=nl&lang=nl&state=s", nil), rec)
	if err := p.Render(c, http.StatusOK, "login", &pages.Data{Lang: "nl"}, ""); err != nil {
		t.Fatal(err)
	}
	link := `<a href="/signd/ui/lang/en?back=%2Fsignd%2Foauth2%2Fauthorize%3Fclient_id%3Drp%26state%3Ds" id="lang-switch" hreflang="en" lang="en">English</a>`
	if !strings.Contains(rec.Body.String(), link) {
		t.Errorf("page lacks %s:\n%s", link, rec.Body.String())
	}
	rec = httptest.NewRecorder()
	c = e.NewContext(httptest.NewRequest(http.MethodPost, "/oauth2/login", nil), rec)
	if err := p.Render(c, http.StatusOK, "login", &pages.Data{Lang: "en"}, ""); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(rec.Body.String(), "lang-switch") {
		t.Errorf("a page answering a post links to the switch")
	}
}
