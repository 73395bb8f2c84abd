package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/signd/signd/oauth/oauthtest/chromiumtest"
)

// The branding of TestBrandedConsentChromium: colours no built-in page
// uses, so their pixels in the screenshot come from ui.primary_color and
// ui.logo_file only.
var (
	brandPrimary = color.RGBA{0xc0, 0x10, 0x60, 0xff}
	brandLogo    = color.RGBA{0x10, 0xa0, 0x50, 0xff}
)

// TestBrandedConsentChromium shows the signing consent page of the real
// daemon (`signd serve`: its router, a bbolt file, a SoftHSM2 key) branded
// with ui.product_name, ui.logo_file and ui.primary_color in headless
// Chromium, in Dutch (ui_locales) and in English (the language switch on
// the login page), and keeps a screenshot of each. What cannot pass by
// accident: the primary colour's and the logo's pixels are in the
// screenshot, the logo loaded (naturalWidth), the console reports no CSP
// violation, and the page says in its language what the user approves
// (the credential's description, the holder's CN and organisation, the
// document, the hash in groups of four), never the HSM label.
func TestBrandedConsentChromium(t *testing.T) {
	e := newEnv(t, "")
	logoFile := filepath.Join(e.dir, "logo.png")
	writePNG(t, logoFile, 160, 48, brandLogo)
	addr := atBaseURL(t, e) // Chromium's Origin on the form posts must be server.base_url's.
	data, err := os.ReadFile(e.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	data = append(data, fmt.Sprintf("ui:\n  product_name: Acme Trust Services\n  logo_file: %s\n  primary_color: \"#%02x%02x%02x\"\n",
		logoFile, brandPrimary.R, brandPrimary.G, brandPrimary.B)...)
	if err := os.WriteFile(e.cfgPath, data, 0o600); err != nil {
		t.Fatal(err)
	}
	pinFile := filepath.Join(e.dir, "pin.txt")
	os.WriteFile(pinFile, []byte(journeyPIN+"\n"), 0o600)
	e.must(journeyPassword+"\n", "user", "add", "alice", "--password-file", "-", "--pin-file", pinFile)
	e.must("", "client", "add", "rp", "--name", "Offerteportaal", "--redirect-uri", "https://rp.example/cb", "--scope", "credential")
	cred := enrollKey(t, e, "alice", "CN=Alice Jansen,O=Example BV,C=NL", "--description", "Bedrijfszegel 2027", "--label", "hsm-label-7f3a")
	if got, _ := e.startDaemon(); got != addr {
		t.Fatalf("daemon at %s, want %s", got, addr)
	}
	base := "http://" + addr
	digest := sha256.Sum256([]byte("Offerte 2027-114"))
	hexGroups := func(d []byte) string {
		h := fmt.Sprintf("%x", d)
		var g []string
		for i := 0; i < len(h); i += 4 {
			g = append(g, h[i:i+4])
		}
		return strings.Join(g, " ")
	}
	artifacts := chromiumtest.ArtifactsDir(t, filepath.Join("..", "..", "testdata-artifacts"), "branded-pages")

	words := map[string][]string{
		"nl": {"Ondertekenen met uw sleutel", "Sleutel", "Certificaathouder", "Toestaan", "Weigeren", "ondertekenen op afstand"},
		"en": {"Sign with your key", "Key", "Certificate holder", "Approve", "Deny", "remote signing"},
	}
	for _, lang := range []string{"nl", "en"} {
		t.Run(lang, func(t *testing.T) {
			bctx := chromiumtest.Start(t, 90*time.Second)
			console := chromiumtest.WatchConsole(t, bctx)
			do := chromiumtest.Steps(t, bctx)
			q := url.Values{"response_type": {"code"}, "client_id": {"rp"}, "redirect_uri": {"https://rp.example/cb"},
				"scope": {"credential"}, "state": {"brand-" + lang}, "credentialID": {cred}, "numSignatures": {"1"},
				"hash": {base64.RawURLEncoding.EncodeToString(digest[:])}, "description": {"Offerte 2027-114 & bijlage.pdf"},
				"ui_locales": {"nl"}}
			do("open the authorization request", chromedp.Navigate(base+"/oauth2/authorize?"+q.Encode()), chromedp.WaitVisible(chromedp.ID("username")))
			if lang == "en" {
				// ui_locales asked for Dutch; the switch's cookie makes the
				// next page English (the switch drops ui_locales).
				do("switch to English", chromedp.Click(chromedp.ID("lang-switch")), chromedp.WaitVisible(chromedp.ID("username")))
			}
			if l := evaluate[string](t, bctx, `document.documentElement.lang`); l != lang {
				t.Fatalf("login page in %q, want %s", l, lang)
			}
			do("log in", chromedp.SendKeys(chromedp.ID("username"), "alice"), chromedp.SendKeys(chromedp.ID("password"), journeyPassword))
			if _, err := chromedp.RunResponse(bctx, chromedp.Click(chromedp.CSS(`button[name=decision][value=approve]`))); err != nil {
				t.Fatalf("log in: %v", err)
			}
			do("wait for the consent page", chromedp.WaitVisible(chromedp.ID("pin")))
			// The logo has loaded (decoded, not blocked by the CSP).
			if _, err := chromedp.Run(bctx, chromedp.Poll[bool](`document.getElementById("logo").complete`)); err != nil {
				t.Fatalf("wait for the logo: %v", err)
			}

			shot, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(artifacts, lang+"-consent.png")
			if err := os.WriteFile(file, shot, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("screenshot: %s", file)

			text, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS("body")))
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range append(words[lang], "Acme Trust Services", "Offerteportaal", "Bedrijfszegel 2027", "Alice Jansen, Example BV",
				"Offerte 2027-114 & bijlage.pdf", hexGroups(digest[:])) {
				if !strings.Contains(text, want) {
					t.Errorf("consent page lacks %q: %s", want, text)
				}
			}
			other := map[string]string{"nl": "Sign with your key", "en": "Ondertekenen met uw sleutel"}[lang]
			for _, never := range []string{"hsm-label-7f3a", "CN=", "signd ·", other} {
				if strings.Contains(text, never) {
					t.Errorf("consent page shows %q: %s", never, text)
				}
			}
			if title := evaluate[string](t, bctx, `document.title`); !strings.HasSuffix(title, " – Acme Trust Services") {
				t.Errorf("title %q", title)
			}
			if w := evaluate[int](t, bctx, `document.getElementById("logo").naturalWidth`); w != 160 {
				t.Errorf("logo naturalWidth %d, want 160 (not loaded?)", w)
			}
			// The logo as the daemon serves it: from signd itself, cached
			// for good, script-free.
			src := evaluate[string](t, bctx, `document.getElementById("logo").src`)
			if !strings.HasPrefix(src, base+"/ui/logo-") || !strings.HasSuffix(src, ".png") {
				t.Errorf("logo src %q", src)
			}
			resp, err := http.Get(src)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if h := resp.Header; resp.StatusCode != http.StatusOK || h.Get("Content-Type") != "image/png" ||
				h.Get("Cache-Control") != "public, max-age=31536000, immutable" || !strings.HasSuffix(h.Get("Content-Security-Policy"), "; sandbox") ||
				h.Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("GET %s: %d %v", src, resp.StatusCode, h)
			}
			if bg := evaluate[string](t, bctx, `getComputedStyle(document.querySelector("button.primary")).backgroundColor`); bg != "rgb(192, 16, 96)" {
				t.Errorf("primary button background %s, want ui.primary_color", bg)
			}
			img, err := png.Decode(bytes.NewReader(shot))
			if err != nil {
				t.Fatal(err)
			}
			// The approve button (some 190×40) and the logo (160×48).
			if n := countPixels(img, brandPrimary); n < 3000 {
				t.Errorf("%d pixels of ui.primary_color in %s, want the approve button's", n, file)
			}
			if n := countPixels(img, brandLogo); n < 7000 {
				t.Errorf("%d pixels of the logo in %s, want 160×48", n, file)
			}
			for _, m := range console.Messages() {
				if strings.HasSuffix(m.URL, "/favicon.ico") {
					continue // Chromium asks every site for one; signd has none
				}
				if m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleWarning || strings.Contains(m.Text, "Content Security Policy") {
					t.Errorf("console: %s (source %q, %s)", m, m.Source, m.URL)
				}
			}
		})
	}
}

// evaluate runs a JavaScript expression in the page through DevTools (the
// page itself runs no script: its CSP allows none).
func evaluate[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// writePNG writes a w×h PNG of one colour.
func writePNG(t *testing.T, path string, w, h int, c color.RGBA) {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.SetRGBA(x, y, c)
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// countPixels counts the pixels of img within 2 of c in every channel.
func countPixels(img image.Image, c color.RGBA) int {
	near := func(a uint32, b uint8) bool {
		d := int(a>>8) - int(b)
		return d >= -2 && d <= 2
	}
	n := 0
	r := img.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			pr, pg, pb, _ := img.At(x, y).RGBA()
			if near(pr, c.R) && near(pg, c.G) && near(pb, c.B) {
				n++
			}
		}
	}
	return n
}

// TestBrokenTemplateStopsStart: a template override with a syntax error
// is a problem of `signd config check` and stops `signd serve` before it
// listens, both naming the file and the line; the built-in one is never
// used in its place.
func TestBrokenTemplateStopsStart(t *testing.T) {
	e := newEnv(t, "")
	dir := filepath.Join(e.dir, "templates")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pages.html"), []byte("{{define \"login\"}}\n<h1>{{.Product}</h1>\n{{end}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(e.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.cfgPath, append(data, "ui:\n  templates_dir: "+dir+"\n"...), 0o600); err != nil {
		t.Fatal(err)
	}
	want := "ui.templates_dir: template: " + filepath.Join(dir, "pages.html") + ":2: bad character U+007D '}'"
	if _, errOut, err := e.run("", "config", "check"); err == nil || !strings.Contains(err.Error()+errOut, want) {
		t.Errorf("config check: %v %s, want %s", err, errOut, want)
	}
	a := newApp(strings.NewReader(""), &bytes.Buffer{}, &syncBuffer{})
	a.argon2 = &testArgon2
	a.ready = func(addr, _ string) { t.Errorf("serve listens at %s with a broken template", addr) }
	cmd := a.root()
	cmd.SetArgs([]string{"--config", e.cfgPath, "serve"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cmd.ExecuteContext(ctx); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("serve: %v, want %s", err, want)
	}
}

// TestUnreadableBrandingAsDaemonUser: a templates directory or a logo the
// daemon's user cannot read is a problem of its key in `signd config
// check`, run as that user (nobody here: root reads everything). It needs
// root to start the helper process as nobody.
func TestUnreadableBrandingAsDaemonUser(t *testing.T) {
	needRoot(t)
	dir, err := os.MkdirTemp("", "sd-ui-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	chmod(t, dir, 0o755)
	tmplDir := filepath.Join(dir, "templates")
	logo := filepath.Join(dir, "logo.png")
	cfgPath, pinFile := filepath.Join(dir, "signd.yaml"), filepath.Join(dir, "pin")
	if err := os.Mkdir(tmplDir, 0o700); err != nil {
		t.Fatal(err)
	}
	writePNG(t, logo, 4, 4, brandLogo)
	cfg := fmt.Sprintf("server:\n  base_url: http://127.0.0.1:8443\npkcs11:\n  pin_file: %s\nui:\n  templates_dir: %s\n  logo_file: %s\n", pinFile, tmplDir, logo)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pinFile, []byte("1234\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{cfgPath, pinFile, tmplDir, logo} {
		if err := os.Chown(p, nobody, nobody); err != nil {
			t.Fatal(err)
		}
	}
	// nobody owns them, but cannot read the directory or the logo.
	chmod(t, tmplDir, 0o300)
	chmod(t, logo, 0o200)
	cmd := exec.Command(childBinary(t), "--config", cfgPath, "config", "check")
	cmd.Env = append(os.Environ(), runMainEnv+"=1")
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("config check as nobody passed: %s", out)
	}
	for _, want := range []string{
		"ui.templates_dir: " + tmplDir + ": permission denied",
		"ui.logo_file: " + logo + ": permission denied",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("config check lacks %q:\n%s", want, out)
		}
	}
}
