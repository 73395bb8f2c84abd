package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/signd/signd/oauth/oauthtest"
)

// selfSigned writes a certificate and key for 127.0.0.1 into dir.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:   time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalPKCS8PrivateKey(key)
	certFile, keyFile = filepath.Join(dir, "tls.pem"), filepath.Join(dir, "tls.key")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600)
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

func TestServeTLS(t *testing.T) {
	e := newEnv(t, "")
	certFile, keyFile, pool := selfSigned(t, e.dir)
	cfg, _ := os.ReadFile(e.cfgPath)
	cfg = bytes.Replace(cfg, []byte("server:\n"), []byte("server:\n  tls:\n    cert_file: "+certFile+"\n    key_file: "+keyFile+"\n"), 1)
	os.WriteFile(e.cfgPath, cfg, 0o600)
	addr, _ := e.daemon()

	client := func(maxVersion uint16) *http.Client {
		return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MaxVersion: maxVersion}}}
	}
	res, err := client(tls.VersionTLS12).Get("https://" + addr + "/healthz")
	if err != nil {
		t.Fatalf("TLS 1.2: %v", err)
	}
	res.Body.Close()
	if res.StatusCode != 200 || res.Header.Get("Strict-Transport-Security") == "" {
		t.Fatalf("TLS 1.2: status %d, HSTS %q", res.StatusCode, res.Header.Get("Strict-Transport-Security"))
	}
	if _, err := client(tls.VersionTLS11).Get("https://" + addr + "/healthz"); err == nil {
		t.Fatal("TLS 1.1 handshake accepted")
	}
	// Plain HTTP on the TLS port is not served (net/http answers 400).
	if res, err := http.Get("http://" + addr + "/healthz"); err == nil {
		res.Body.Close()
		if res.StatusCode == http.StatusOK {
			t.Fatal("plain HTTP served on the TLS listener")
		}
	}
}

// TestHSTSAndCookiesBehindProxy: what browsers are told depends on how
// they reach signd (server.base_url), not on whether signd itself
// terminates TLS. Behind a reverse proxy that terminates TLS (base_url
// https, signd speaking plain http to the proxy) every answer carries
// Strict-Transport-Security and the pages' cookies carry the __Host-
// prefix (Secure, Path=/); with a plain-http loopback base_url
// (development) neither.
func TestHSTSAndCookiesBehindProxy(t *testing.T) {
	for _, tt := range []struct {
		name, baseURL, hsts string
		prefix, path        string // the session cookie's
		secure              bool
	}{
		{"http_development", "http://127.0.0.1:8443", "", "", "/oauth2/", false},
		{"https_behind_a_proxy", "https://signd.example", "max-age=31536000", "__Host-", "/", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, "")
			e.setConfig("base_url: http://127.0.0.1:8443", "base_url: "+tt.baseURL)
			pinFile := filepath.Join(e.dir, "pin.txt")
			os.WriteFile(pinFile, []byte(journeyPIN+"\n"), 0o600)
			e.must(journeyPassword+"\n", "user", "add", "alice", "--password-file", "-", "--pin-file", pinFile)
			addr, _ := e.startDaemon()
			base := "http://" + addr // the proxy's upstream: no TLS in signd

			res, err := http.Get(base + "/healthz")
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if got := res.Header.Get("Strict-Transport-Security"); got != tt.hsts {
				t.Errorf("/healthz: Strict-Transport-Security %q, want %q", got, tt.hsts)
			}
			cookie := func(s *oauthtest.Step, name string) *http.Cookie {
				t.Helper()
				for _, ck := range (&http.Response{Header: s.Header}).Cookies() {
					if ck.Name == name {
						return ck
					}
				}
				t.Fatalf("no %s cookie: %q", name, s.Header.Values("Set-Cookie"))
				return nil
			}
			b := oauthtest.NewBrowser(nil)
			s, err := b.Get(base + "/oauth2/account?lang=en")
			if err != nil || s.Form == nil {
				t.Fatalf("account login page: %v %+v", err, s)
			}
			if got := s.Header.Get("Strict-Transport-Security"); got != tt.hsts {
				t.Errorf("account page: Strict-Transport-Security %q, want %q", got, tt.hsts)
			}
			csrf := cookie(s, tt.prefix+"signd_account_csrf")
			csrfPath := "/oauth2/account"
			if tt.secure {
				csrfPath = "/"
			}
			if csrf.Path != csrfPath || csrf.Secure != tt.secure || csrf.Domain != "" {
				t.Errorf("account CSRF cookie %q", csrf.Raw)
			}
			// The login, posted from base_url's origin (as the proxy
			// passes it on): the session cookie.
			h := browserHeaders()
			h.Set("Origin", tt.baseURL)
			h.Set("Cookie", csrf.Name+"="+csrf.Value) // the jar sends no Secure cookie over http
			s = postPage(t, oauthtest.NewBrowser(nil), base+"/oauth2/account/login",
				s.Form.Values(map[string]string{"username": "alice", "password": journeyPassword}), h)
			if s.Status != http.StatusSeeOther {
				t.Fatalf("login: %d %s", s.Status, oauthtest.Text(s.Body))
			}
			session := cookie(s, tt.prefix+"signd_session")
			if session.Path != tt.path || session.Secure != tt.secure || session.Domain != "" || !session.HttpOnly || session.SameSite != http.SameSiteLaxMode {
				t.Errorf("session cookie %q", session.Raw)
			}
			// Under https the session value under the unprefixed name (what
			// a sibling subdomain can plant) opens nothing, and does not
			// displace the browser's own __Host- cookie.
			if tt.secure {
				for _, tc := range []struct{ cookie, want string }{
					{"signd_session=" + session.Value, "Sign in to see your signing keys"},
					{"signd_session=" + strings.Repeat("A", 43) + "; " + session.Name + "=" + session.Value, "You are signed in as"},
				} {
					req, _ := http.NewRequest(http.MethodGet, base+"/oauth2/account?lang=en", nil)
					req.Header.Set("Cookie", tc.cookie)
					s, err := oauthtest.NewBrowser(nil).Do(req)
					if err != nil || !strings.Contains(oauthtest.Text(s.Body), tc.want) {
						t.Errorf("account page with Cookie %q: %v, want %q", strings.Replace(tc.cookie, session.Value, "…", 1), err, tc.want)
					}
				}
			}
		})
	}
}
