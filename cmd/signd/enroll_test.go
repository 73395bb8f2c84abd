package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/pquerna/otp/totp"

	"github.com/signd/signd/admin"
	"github.com/signd/signd/csc/certstatus/certstatustest"
	"github.com/signd/signd/oauth/oauthtest/chromiumtest"
	"github.com/signd/signd/store/storetest"
)

// enrollee creates username through the provisioning API with an
// enrollment link and returns the link.
func (p *provisioning) enrollee(cert *apiCert, username string) string {
	p.t.Helper()
	var v admin.UserView
	p.must(cert, "POST", "/users", fmt.Sprintf(`{"username":%q,"enroll":true,"email":"%s@example.org"}`, username, username), &v)
	if v.Enrollment == nil || !strings.HasPrefix(v.Enrollment.Link, p.base+admin.EnrollPath+username+"~") || v.HasPIN {
		p.t.Fatalf("POST /users with enroll: %+v", v)
	}
	// Shown: that a link is open, until when; never the link.
	var shown admin.UserView
	p.must(cert, "GET", "/users/"+username, "", &shown)
	if shown.Enrollment != nil || shown.EnrollmentExpires == nil || !shown.EnrollmentExpires.Equal(v.Enrollment.ExpiresAt) {
		p.t.Fatalf("GET /users/%s: %+v", username, shown)
	}
	return v.Enrollment.Link
}

// TestEnrollmentJourneyChromium: the onboarding system creates alice with
// an enrollment link through the provisioning API (a client certificate);
// alice opens the link in headless Chromium and sets her password and
// signing PIN; the link is then used up (opening it again shows the
// neutral page); the onboarding system creates and certifies her key,
// alice signs through CSC and the signature verifies. The audit names the
// certificate for the creation and alice for the use; the access log
// never holds the link's secret.
func TestEnrollmentJourneyChromium(t *testing.T) {
	ca := certstatustest.New(t, "Onboarding CA", nil)
	onboarding, auditor := clientCertOf(t, ca, "onboarding"), clientCertOf(t, ca, "auditor")
	p := startProvisioningWith(t, auditor, ca, func(e *env) { atBaseURL(t, e) })
	link := p.enrollee(&onboarding, "alice")
	secret := link[strings.LastIndex(link, "~")+1:]

	bctx := chromiumtest.Start(t, 90*time.Second)
	console := chromiumtest.WatchConsole(t, bctx)
	do := chromiumtest.Steps(t, bctx)
	do("open the link", chromedp.Navigate(link), chromedp.WaitVisible(chromedp.ID("pin2")))
	// Chromium asks for English (Accept-Language); the HTTP tests see the
	// Dutch of a request without a preference.
	if l := evaluate[string](t, bctx, `document.documentElement.lang`); l != "en" {
		t.Errorf("the page is in %q, want en (Chromium's Accept-Language)", l)
	}
	if text := evaluate[string](t, bctx, `document.body.innerText`); !strings.Contains(text, "Set up your account") || !strings.Contains(text, "for the account alice") {
		t.Errorf("enrollment page: %s", text)
	}
	do("fill in password and PIN",
		chromedp.SendKeys(chromedp.ID("password"), journeyPassword), chromedp.SendKeys(chromedp.ID("password2"), journeyPassword),
		chromedp.SendKeys(chromedp.ID("pin"), journeyPIN), chromedp.SendKeys(chromedp.ID("pin2"), journeyPIN))
	if _, err := chromedp.RunResponse(bctx, chromedp.Click(chromedp.ID("enroll-submit"))); err != nil {
		t.Fatalf("submit: %v", err)
	}
	do("wait for the confirmation", chromedp.WaitVisible(chromedp.ID("enroll-done")))
	if text := evaluate[string](t, bctx, `document.body.innerText`); !strings.Contains(text, "Your password and PIN are set. You can now sign in as alice.") {
		t.Errorf("after the submit: %s", text)
	}
	// Replayed: the link is used up; the neutral page, 404.
	resp, err := chromedp.RunResponse(bctx, chromedp.Navigate(link))
	if err != nil {
		t.Fatal(err)
	}
	if text := evaluate[string](t, bctx, `document.body.innerText`); resp.Status != http.StatusNotFound || !strings.Contains(text, "This link is invalid, used or expired.") {
		t.Errorf("the link opened again: %d %s", resp.Status, text)
	}
	for _, m := range console.Messages() {
		if strings.HasSuffix(m.URL, "/favicon.ico") || m.Type == chromedp.ConsoleError && strings.Contains(m.Text, "404") {
			continue // Chromium asks every site for one; the replay is a 404
		}
		if m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleWarning || strings.Contains(m.Text, "Content Security Policy") {
			t.Errorf("console: %s (source %q, %s)", m, m.Source, m.URL)
		}
	}

	p.signsOnboarded(&onboarding, &auditor, "%PDF-1.7 the contract alice signs after her enrollment",
		"AddUser user_added user:alice ok", "ShowUser admin_read user:alice ok")
	// The use; opening the used link again (a GET) changes nothing and
	// is not audited (a refused post is: TestEnroll in package admin).
	if got := p.actsOf(&auditor, "user:alice"); len(got) != 1 || got[0] != " account_action user:alice ok" {
		t.Errorf("the acts of user:alice: %q (want the use)", got)
	}
	if logs := p.logs.String(); strings.Contains(logs, secret) || !strings.Contains(logs, admin.EnrollPath+"[REDACTED]") {
		t.Errorf("the daemon's log holds the link's secret, or no redacted path:\n%s", logs)
	}
}

// enrollForm is a browser session on one enrollment link: its cookie jar
// and the CSRF token of the form it was shown.
type enrollForm struct {
	t      *testing.T
	link   string
	origin string
	client *http.Client
	csrf   string
}

var csrfFieldRE = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)

// openEnrollForm GETs link and reads the form's CSRF token.
func openEnrollForm(t *testing.T, base, link string) *enrollForm {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	f := &enrollForm{t: t, link: link, origin: base, client: &http.Client{Jar: jar, Timeout: 30 * time.Second}}
	st, body := f.do(http.MethodGet, nil, nil)
	m := csrfFieldRE.FindStringSubmatch(body)
	if st != http.StatusOK || m == nil {
		t.Fatalf("GET the link: %d %s", st, body)
	}
	f.csrf = m[1]
	return f
}

// post sends the form with password and PIN (each twice) as a browser on
// the page's own origin does; set overrides fields, hdr headers.
func (f *enrollForm) post(password, pin string, set url.Values, hdr http.Header) (int, string) {
	f.t.Helper()
	form := url.Values{"csrf_token": {f.csrf}, "lang": {"en"}, "password": {password}, "password2": {password}, "pin": {pin}, "pin2": {pin}}
	for k, v := range set {
		form[k] = v
	}
	h := http.Header{"Content-Type": {"application/x-www-form-urlencoded"}, "Origin": {f.origin}, "Sec-Fetch-Site": {"same-origin"}}
	for k, v := range hdr {
		h[k] = v
	}
	return f.do(http.MethodPost, strings.NewReader(form.Encode()), h)
}

func (f *enrollForm) do(method string, body io.Reader, h http.Header) (int, string) {
	f.t.Helper()
	req, err := http.NewRequest(method, f.link, body)
	if err != nil {
		f.t.Fatal(err)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	res, err := f.client.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(raw)
}

// TestEnrollmentRefusals: against the real daemon, every post the
// enrollment page must refuse is refused with its page, and the link
// stays open for the user (but after a use, a replay, and an unknown
// link, which get the one neutral page); two posts at once set the
// secrets once.
func TestEnrollmentRefusals(t *testing.T) {
	ca := certstatustest.New(t, "Onboarding CA", nil)
	onboarding, auditor := clientCertOf(t, ca, "onboarding"), clientCertOf(t, ca, "auditor")
	p := startProvisioningWith(t, auditor, ca, func(e *env) {
		atBaseURL(t, e)
		// Many posts from one address: the forms' rate limit (its own
		// tests) stays out of the way.
		e.setConfig("oidc:\n", "ratelimit:\n  forms:\n    rate: 0\noidc:\n")
	})
	const pw, pin = "a long enough password", "4321"
	neutral := "This link is invalid, used or expired."

	cases := []struct {
		name   string
		set    url.Values
		hdr    http.Header
		status int
		want   string
		open   bool // the link is still open after the post
	}{
		// Refused before the body is read: in the language of the request
		// (no Accept-Language: Dutch).
		{"cross-site", nil, http.Header{"Sec-Fetch-Site": {"cross-site"}, "Origin": {"https://evil.example"}}, http.StatusForbidden, "vanaf een andere website verstuurd", true},
		{"other origin, no fetch metadata", nil, http.Header{"Sec-Fetch-Site": nil, "Origin": {"https://evil.example"}}, http.StatusForbidden, "vanaf een andere website verstuurd", true},
		{"null origin", nil, http.Header{"Origin": {"null"}}, http.StatusForbidden, "vanaf een andere website verstuurd", true},
		{"missing CSRF", url.Values{"csrf_token": nil}, nil, http.StatusBadRequest, "The form has expired or is invalid.", true},
		{"wrong CSRF", url.Values{"csrf_token": {"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}}, nil, http.StatusBadRequest, "The form has expired or is invalid.", true},
		{"CSRF twice", url.Values{"csrf_token": {"a", "b"}}, nil, http.StatusBadRequest, "The request is invalid.", true},
		// A CSRF cookie planted for the enrollment path (a sibling
		// subdomain over http), sent before the form's own: the name twice
		// is refused, whichever value the field matches.
		{"CSRF cookie twice", url.Values{"csrf_token": {strings.Repeat("P", 43)}}, http.Header{"Cookie": {"signd_enroll_csrf=" + strings.Repeat("P", 43)}}, http.StatusBadRequest, "The form has expired or is invalid.", true},
		{"weak password", url.Values{"password": {"short"}, "password2": {"short"}}, nil, http.StatusOK, "The password must be 8 to 1024 characters long", true},
		{"oversized password", url.Values{"password": {strings.Repeat("p", 1025)}, "password2": {strings.Repeat("p", 1025)}}, nil, http.StatusOK, "The password must be 8 to 1024 characters long", true},
		{"short PIN", url.Values{"pin": {"12"}, "pin2": {"12"}}, nil, http.StatusOK, "The PIN must be 4 to 64 characters long", true},
		{"repetition differs", url.Values{"pin2": {"9999"}}, nil, http.StatusOK, "The repetition does not match.", true},
		{"oversized form", url.Values{"password": {strings.Repeat("p", 9000)}}, nil, http.StatusBadRequest, "Het verzoek is ongeldig.", true},
		{"password twice", url.Values{"password": {pw, pw}}, nil, http.StatusBadRequest, "The request is invalid.", true},
		{"ok", nil, nil, http.StatusOK, "Your password and PIN are set.", false},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			name := fmt.Sprintf("user%d", i)
			link := p.enrollee(&onboarding, name)
			f := openEnrollForm(t, p.base, link)
			st, body := f.post(pw, pin, tc.set, tc.hdr)
			if st != tc.status || !strings.Contains(body, tc.want) {
				t.Fatalf("post: %d, want %d %q:\n%s", st, tc.status, tc.want, body)
			}
			if !tc.open {
				// Replayed, with a fresh form: the neutral page.
				st, body = f.do(http.MethodGet, nil, nil)
				if st != http.StatusNotFound || !strings.Contains(body, "Deze link is ongeldig") {
					t.Errorf("the used link: %d %s", st, body)
				}
				return
			}
			// Still open: the user completes it.
			f2 := openEnrollForm(t, p.base, link)
			if st, body := f2.post(pw, pin, nil, nil); st != http.StatusOK || !strings.Contains(body, "Your password and PIN are set.") {
				t.Errorf("after the refusal the link does not work: %d %s", st, body)
			}
		})
	}

	t.Run("API", func(t *testing.T) {
		for _, tc := range []struct {
			cert   *apiCert
			body   string
			status int
			msg    string
		}{
			{&onboarding, `{"username":"api1","enroll":true,"password":"correct horse battery"}`, 400, "give neither"},
			{&onboarding, `{"username":"api1","enroll":true,"pin":"1234"}`, 400, "give neither"},
			{&onboarding, `{"username":"api1","enroll":"yes"}`, 400, "malformed admin request"},
			{&onboarding, `{"username":"api1","enroll":true,"enroll":false,"x":1}`, 400, `field \"enroll\" given twice`},
			{&onboarding, `{"username":"api1","enroll":true,"x":1}`, 400, `unknown field \"x\"`},
			{&onboarding, `{"username":"api1~x","enroll":true}`, 400, "username"},
			{&auditor, `{"username":"api1","enroll":true}`, 403, "AddUser requires the role administrator"},
		} {
			st, raw := p.call(tc.cert, "POST", "/users", tc.body)
			if st != tc.status || !strings.Contains(string(raw), tc.msg) {
				t.Errorf("POST /users %s: %d %s, want %d %q", tc.body, st, raw, tc.status, tc.msg)
			}
		}
		if st, raw := p.call(&onboarding, "GET", "/users/api1", ""); st != 404 {
			t.Errorf("api1 was created: %d %s", st, raw)
		}
		// A new link: answered once, replacing the open one.
		first := p.enrollee(&onboarding, "api2")
		var v admin.UserView
		p.must(&onboarding, "POST", "/users/api2/enrollment", "", &v)
		if v.Enrollment == nil || v.Enrollment.Link == first {
			t.Errorf("POST /users/api2/enrollment: %+v", v)
		}
		for _, tc := range []struct {
			cert   *apiCert
			path   string
			body   string
			status int
		}{
			{&onboarding, "/users/nobody/enrollment", "", 404},
			{&onboarding, "/users/api2/enrollment", `{"x":1}`, 400},
			{&auditor, "/users/api2/enrollment", "", 403},
		} {
			if st, raw := p.call(tc.cert, "POST", tc.path, tc.body); st != tc.status {
				t.Errorf("POST %s %s: %d %s, want %d", tc.path, tc.body, st, raw, tc.status)
			}
		}
		f := openEnrollForm(t, p.base, v.Enrollment.Link)
		if st, body := f.post(pw, pin, nil, nil); st != 200 || !strings.Contains(body, "Your password and PIN are set.") {
			t.Errorf("the new link: %d %s", st, body)
		}
		if st, raw := p.call(&onboarding, "POST", "/users/api2/enrollment", ""); st != 409 {
			t.Errorf("a link for an enrolled user: %d %s", st, raw)
		}
	})
	t.Run("TOTP", func(t *testing.T) {
		secretRE := regexp.MustCompile(`name="totp_secret" value="([A-Z2-7]{32})"`)
		for _, tc := range []struct {
			name   string
			code   func(secret string) string
			secret func(secret string) string
			want   string
			totp   bool
		}{
			{"confirmed", func(s string) string { c, _ := totp.GenerateCode(s, time.Now()); return c }, nil, "Your password and PIN are set.", true},
			{"skipped", func(string) string { return "" }, nil, "Your password and PIN are set.", false},
			{"wrong code", func(string) string { return "000000" }, nil, "The authenticator app&#39;s code is not right.", false},
			{"code of another secret", func(string) string {
				c, _ := totp.GenerateCode("JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP", time.Now())
				return c
			},
				nil, "The authenticator app&#39;s code is not right.", false},
			{"malformed secret", func(s string) string { c, _ := totp.GenerateCode("AAAA", time.Now()); return c },
				func(string) string { return "AAAA" }, "The authenticator app&#39;s code is not right.", false},
			{"oversized code", func(string) string { return strings.Repeat("1", 100) }, nil, "The authenticator app&#39;s code is not right.", false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				name := "totp-" + strings.ReplaceAll(tc.name, " ", "-")
				link := p.enrollee(&onboarding, name)
				f := openEnrollForm(t, p.base, link)
				st, page := f.do(http.MethodGet, nil, nil)
				m := secretRE.FindStringSubmatch(page)
				if st != 200 || m == nil || !strings.Contains(page, "otpauth://totp/") {
					t.Fatalf("the form offers no TOTP secret: %d %s", st, page)
				}
				f.csrf = csrfFieldRE.FindStringSubmatch(page)[1]
				secret := m[1]
				if tc.secret != nil {
					secret = tc.secret(secret)
				}
				st, body := f.post(pw, pin, url.Values{"totp_secret": {secret}, "totp_code": {tc.code(secret)}}, nil)
				if st != 200 || !strings.Contains(body, tc.want) {
					t.Fatalf("post: %d, want %q:\n%s", st, tc.want, body)
				}
				var v admin.UserView
				p.must(&onboarding, "GET", "/users/"+name, "", &v)
				if v.HasTOTP != tc.totp || (v.EnrollmentExpires == nil) != strings.Contains(tc.want, "are set") {
					t.Errorf("after the post: has_totp %v, enrollment open %v", v.HasTOTP, v.EnrollmentExpires != nil)
				}
				if strings.Contains(tc.want, "not right") && tc.secret == nil && !strings.Contains(body, `value="`+secret+`"`) {
					t.Error("the form shown again offers another secret than the one the app holds")
				}
			})
		}
	})
	t.Run("replayed post", func(t *testing.T) {
		f := openEnrollForm(t, p.base, p.enrollee(&onboarding, "replay"))
		if st, _ := f.post(pw, pin, nil, nil); st != http.StatusOK {
			t.Fatalf("first use: %d", st)
		}
		// The form's CSRF cookie ended with the use; a script replaying
		// the post brings a cookie and a field that match.
		u, _ := url.Parse(f.link)
		f.client.Jar.SetCookies(u, []*http.Cookie{{Name: "signd_enroll_csrf", Value: "replayed-csrf", Path: "/oauth2/enroll/"}})
		st, body := f.post("another password!", "5555", url.Values{"csrf_token": {"replayed-csrf"}}, nil)
		if st != http.StatusNotFound || !strings.Contains(body, neutral) {
			t.Errorf("replay: %d %s", st, body)
		}
	})
	t.Run("headers", func(t *testing.T) {
		link := p.enrollee(&onboarding, "headers")
		res, err := http.Get(link)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		h := res.Header
		if csp := h.Get("Content-Security-Policy"); !strings.HasPrefix(csp, "default-src 'none'; style-src 'sha256-") ||
			!strings.Contains(csp, "frame-ancestors 'none'") || !strings.HasSuffix(csp, "form-action 'self'") {
			t.Errorf("CSP %q", csp)
		}
		if h.Get("Cache-Control") != "no-store" || h.Get("Referrer-Policy") != "same-origin" {
			t.Errorf("headers %v", h)
		}
		var csrf *http.Cookie
		for _, c := range res.Cookies() {
			if c.Name == "signd_enroll_csrf" {
				csrf = c
			}
		}
		if csrf == nil || !csrf.HttpOnly || csrf.SameSite != http.SameSiteStrictMode || csrf.Path != "/oauth2/enroll/" || len(csrf.Value) < 40 {
			t.Errorf("CSRF cookie %+v", csrf)
		}
	})
	t.Run("unknown link", func(t *testing.T) {
		for _, token := range []string{"nobody~" + strings.Repeat("A", 43), "replay~" + strings.Repeat("A", 43), "x", strings.Repeat("a", 300)} {
			jar, _ := cookiejar.New(nil)
			f := &enrollForm{t: t, link: p.base + admin.EnrollPath + token, origin: p.base, client: &http.Client{Jar: jar}}
			if st, body := f.do(http.MethodGet, nil, nil); st != http.StatusNotFound || !strings.Contains(body, "Deze link is ongeldig") {
				t.Errorf("GET %s: %d %s", token, st, body)
			}
		}
	})
	t.Run("concurrent posts", func(t *testing.T) {
		link := p.enrollee(&onboarding, "race")
		const n = 6
		forms := make([]*enrollForm, n)
		for i := range forms {
			forms[i] = openEnrollForm(t, p.base, link)
		}
		statuses := make([]int, n)
		storetest.AtOnce(len(forms), func(i int) {
			statuses[i], _ = forms[i].post(fmt.Sprintf("password of form %d", i), "1234", nil, nil)
		})
		ok := 0
		for _, st := range statuses {
			switch st {
			case http.StatusOK:
				ok++
			case http.StatusNotFound:
			default:
				t.Errorf("status %d", st)
			}
		}
		if ok != 1 {
			t.Errorf("%d of %d posts at once succeeded (%v), want exactly 1", ok, n, statuses)
		}
	})
}

// TestUserAddEnrollCLI: `signd user add --enroll` prints the link once
// and `user show` its expiry, never the link again; --enroll with a
// password or PIN file is refused before anything is stored.
func TestUserAddEnrollCLI(t *testing.T) {
	e := newEnv(t, "")
	out := e.must("", "user", "add", "bob", "--enroll")
	m := regexp.MustCompile(`enrollment link: (http://127\.0\.0\.1:8443/oauth2/enroll/bob~[A-Za-z0-9_-]{43})\n`).FindStringSubmatch(out)
	if m == nil || !strings.Contains(out, "signing PIN:     no") || !strings.Contains(out, "enrollment open: until ") {
		t.Fatalf("user add --enroll:\n%s", out)
	}
	if show := e.must("", "user", "show", "bob"); strings.Contains(show, "enrollment link") || !strings.Contains(show, "enrollment open: until ") {
		t.Errorf("user show:\n%s", show)
	}
	for _, args := range [][]string{
		{"user", "add", "carl", "--enroll", "--password-file", "-"},
		{"user", "add", "carl", "--enroll", "--pin-file", e.pinFile},
		{"user", "add", "carl"},
	} {
		if _, _, err := e.run("a password!\n", args...); err == nil || !strings.Contains(err.Error(), "enroll") {
			t.Errorf("%v: %v", args, err)
		}
	}
	if _, _, err := e.run("", "user", "show", "carl"); err == nil {
		t.Error("carl was created")
	}
	// A new link replaces the first one; a user with a password gets none.
	again := e.must("", "user", "enroll-link", "bob")
	m2 := regexp.MustCompile(`enrollment link: (http://127\.0\.0\.1:8443/oauth2/enroll/bob~[A-Za-z0-9_-]{43})\n`).FindStringSubmatch(again)
	if m2 == nil || m2[1] == m[1] {
		t.Errorf("user enroll-link:\n%s", again)
	}
	e.must("a password!\n", "user", "add", "dora", "--password-file", "-")
	if _, _, err := e.run("", "user", "enroll-link", "dora"); err == nil || !strings.Contains(err.Error(), "has a password or a signing PIN already") {
		t.Errorf("enroll-link for a user with a password: %v", err)
	}
}
