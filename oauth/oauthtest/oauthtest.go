package oauthtest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/net/html"

	"github.com/signd/signd/oauth"
	"github.com/signd/signd/oauth/browser"
	"github.com/signd/signd/oauth/passwords"
	"github.com/signd/signd/store"
)

// Store is s as the authorization server sees it, for oauth.Config.Store.
func Store(s store.Store) *store.Scoped[oauth.Tx] {
	return store.Scope(s, func(tx store.Tx) oauth.Tx { return tx })
}

// PasswordStore returns s, the authorization server's view of a store, as
// the password checker sees it (passwords.Config.Store): a test that wraps
// the server's store to inject faults wraps the checker's writes too, as
// the daemon's one store does.
func PasswordStore(s oauth.Store) passwords.Store { return passwordStore{s} }

type passwordStore struct{ s oauth.Store }

func (p passwordStore) Update(ctx context.Context, fn func(passwords.Tx) error) error {
	return p.s.Update(ctx, func(tx oauth.Tx) error { return fn(tx) })
}

// MountFlow mounts on g the browser flow of srv (/oauth2/authorize, the
// login and consent pages) over st, with the password checker pw and the
// daemon's defaults otherwise, for the tests that drive the pages through
// the server's router; srv itself serves the token endpoint.
func MountFlow(g *echo.Group, srv *oauth.Server, st oauth.Store, pw browser.Passwords, now func() time.Time) error {
	h, err := browser.New(browser.Config{Core: srv, Store: st, Passwords: pw, Now: now})
	if err != nil {
		return err
	}
	return h.Mount(g)
}

// Browser is a cookie-keeping HTTP client that never follows redirects.
type Browser struct {
	HTTP *http.Client
}

// NewBrowser returns a Browser over transport (nil = http.DefaultTransport),
// for instance httptest.Server.Client().Transport.
func NewBrowser(transport http.RoundTripper) *Browser {
	jar, _ := cookiejar.New(nil) // never fails without options
	return &Browser{HTTP: &http.Client{
		Transport:     transport,
		Jar:           jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// Step is one response: a page (Form set when it has a form) or a
// redirect (Location set).
type Step struct {
	Status   int
	Header   http.Header
	Body     string
	Location *url.URL // the redirect target, resolved; nil if not a redirect
	Form     *Form    // the page's first form; nil if none
	URL      *url.URL // the request URL
}

// Redirected reports whether the step is a redirect.
func (s *Step) Redirected() bool { return s.Location != nil }

// Query returns the redirect's query parameters (nil for a page).
func (s *Step) Query() url.Values {
	if s.Location == nil {
		return nil
	}
	return s.Location.Query()
}

// Code returns the code of a successful authorization response (RFC 6749
// §4.1.2): a redirect to redirectURI with a code, no error, the request's
// state and the issuer iss (RFC 9207).
func (s *Step) Code(redirectURI, state, iss string) (string, error) {
	if !s.Redirected() {
		return "", fmt.Errorf("want a redirect with a code, got status %d: %.500s", s.Status, Text(s.Body))
	}
	q := s.Query()
	base := *s.Location
	base.RawQuery = ""
	if base.String() != redirectURI {
		return "", fmt.Errorf("redirected to %s, want %s", base.String(), redirectURI)
	}
	if q.Get("error") != "" || q.Get("code") == "" {
		return "", fmt.Errorf("redirect without code: %v", q)
	}
	if q.Get("state") != state || q.Get("iss") != iss {
		return "", fmt.Errorf("redirect state %q iss %q", q.Get("state"), q.Get("iss"))
	}
	return q.Get("code"), nil
}

// Form is an HTML form: its resolved action, its inputs with their
// values (hidden inputs included) and its submit buttons.
type Form struct {
	Action  *url.URL
	Method  string
	Fields  url.Values        // name → value of every named input
	Types   map[string]string // name → input type
	Buttons []Button
}

// Button is a submit button.
type Button struct {
	Name, Value string
}

// Values returns a copy of the form's inputs with set over them.
func (f *Form) Values(set map[string]string) url.Values {
	v := url.Values{}
	for k, vs := range f.Fields {
		v[k] = append([]string(nil), vs...)
	}
	for k, val := range set {
		v.Set(k, val)
	}
	return v
}

// Has reports whether the form has an input named name.
func (f *Form) Has(name string) bool {
	_, ok := f.Types[name]
	return ok
}

// Get sends a GET to u.
func (b *Browser) Get(u string) (*Step, error) {
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	return b.Do(req)
}

// PostForm posts values to u.
func (b *Browser) PostForm(u string, values url.Values) (*Step, error) {
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(values.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return b.Do(req)
}

// Submit fills the form with set (over its current values) and presses the
// button named "decision" with value decision ("approve" or "deny"; "" =
// no button value).
func (b *Browser) Submit(f *Form, set map[string]string, decision string) (*Step, error) {
	if f == nil {
		return nil, fmt.Errorf("oauthtest: no form to submit")
	}
	v := f.Values(set)
	if decision != "" {
		found := false
		for _, bt := range f.Buttons {
			if bt.Name == "decision" && bt.Value == decision {
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("oauthtest: the form has no button decision=%s", decision)
		}
		v.Set("decision", decision)
	}
	if strings.EqualFold(f.Method, http.MethodGet) {
		u := *f.Action
		u.RawQuery = v.Encode()
		return b.Get(u.String())
	}
	return b.PostForm(f.Action.String(), v)
}

// Do sends req and reads the response into a Step.
func (b *Browser) Do(req *http.Request) (*Step, error) {
	resp, err := b.HTTP.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	s := &Step{Status: resp.StatusCode, Header: resp.Header, Body: string(body), URL: req.URL}
	if loc := resp.Header.Get("Location"); loc != "" && resp.StatusCode >= 300 && resp.StatusCode < 400 {
		if s.Location, err = req.URL.Parse(loc); err != nil {
			return nil, fmt.Errorf("oauthtest: bad Location %q: %w", loc, err)
		}
		return s, nil
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		if s.Form, err = ParseForm(req.URL, body); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// ParseForm returns the first form of an HTML page, with its action
// resolved against base, or nil when the page has none.
func ParseForm(base *url.URL, page []byte) (*Form, error) {
	doc, err := html.Parse(bytes.NewReader(page))
	if err != nil {
		return nil, fmt.Errorf("oauthtest: parse HTML: %w", err)
	}
	var form *Form
	var walk func(n *html.Node, in bool)
	walk = func(n *html.Node, in bool) {
		if n.Type == html.ElementNode {
			switch n.Data {
			case "form":
				if form != nil {
					return // only the first form
				}
				action, err := base.Parse(attr(n, "action"))
				if err != nil {
					action = base
				}
				method := attr(n, "method")
				if method == "" {
					method = http.MethodGet
				}
				form = &Form{Action: action, Method: strings.ToUpper(method), Fields: url.Values{}, Types: map[string]string{}}
				in = true
			case "input":
				if in && attr(n, "name") != "" {
					typ := strings.ToLower(attr(n, "type"))
					if typ == "" {
						typ = "text"
					}
					name := attr(n, "name")
					form.Types[name] = typ
					if typ != "submit" {
						form.Fields.Set(name, attr(n, "value"))
					}
				}
			case "button":
				if in && attr(n, "type") != "button" && attr(n, "name") != "" {
					form.Buttons = append(form.Buttons, Button{Name: attr(n, "name"), Value: attr(n, "value")})
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c, in)
		}
	}
	walk(doc, false)
	return form, nil
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

// Text returns the visible text of an HTML page, whitespace collapsed, for
// assertions on messages.
func Text(page string) string {
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		return ""
	}
	var b strings.Builder
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && (n.Data == "style" || n.Data == "script" || n.Data == "head") {
			return
		}
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
			b.WriteByte(' ')
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return strings.Join(strings.Fields(b.String()), " ")
}

// With returns a copy of p with the name/value pairs kv set; an empty
// value deletes the name.
func With(p url.Values, kv ...string) url.Values {
	q := url.Values{}
	for k, v := range p {
		q[k] = append([]string(nil), v...)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			q.Del(kv[i])
		} else {
			q.Set(kv[i], kv[i+1])
		}
	}
	return q
}

// PostClientForm posts form to u with c as a client does at the token or
// revocation endpoint: form-urlencoded, and authenticated with HTTP Basic
// (client ID and secret form-urlencoded, RFC 6749 §2.3.1) when basicID is
// not empty. The caller closes the response body.
func PostClientForm(c *http.Client, u string, form url.Values, basicID, basicSecret string) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if basicID != "" {
		req.SetBasicAuth(url.QueryEscape(basicID), url.QueryEscape(basicSecret))
	}
	return c.Do(req)
}
