package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/oauth"
)

func TestPanicBecomesBareJSON500(t *testing.T) {
	var logs bytes.Buffer
	s := &server{Logger: slog.New(slog.NewJSONHandler(&logs, nil)), BodyLimit: 1 << 20}
	e := s.echo()
	e.GET("/boom", func(echo.Context) error { panic("kaboom: internal detail") })
	e.GET("/fail", func(echo.Context) error { return os.ErrPermission })

	for _, path := range []string{"/boom", "/fail"} {
		t.Run(strings.TrimPrefix(path, "/"), func(t *testing.T) {
			rec := httptest.NewRecorder()
			e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
			if rec.Code != http.StatusInternalServerError {
				t.Fatalf("status %d", rec.Code)
			}
			var body map[string]string
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
				t.Fatalf("body %q: %v", rec.Body.String(), err)
			}
			if body["error"] != "server_error" || body["error_description"] != "internal error" || len(body) != 2 {
				t.Fatalf("body %v", body)
			}
			for _, leak := range []string{"kaboom", "goroutine", ".go:", "permission"} {
				if strings.Contains(rec.Body.String(), leak) {
					t.Errorf("response leaks %q: %s", leak, rec.Body.String())
				}
			}
		})
	}
	// The cause is in the log, for the operator.
	if !strings.Contains(logs.String(), "kaboom") {
		t.Errorf("panic not logged:\n%s", logs.String())
	}
}

// A panic in a protocol route is a bare 500 in the route's dialect.
func TestPanicInProtocolRoute(t *testing.T) {
	s := &server{Logger: slog.New(slog.DiscardHandler), BodyLimit: 1 << 20}
	e := s.echo()
	d := &oauth.Dialect{Name: "test", Format: oauth.FormatOAuth, Internal: "Internal error"}
	e.POST("/boom", func(echo.Context) error { panic("kaboom: internal detail") }, oauth.WithDialect(d))
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/boom", nil))
	if rec.Code != http.StatusInternalServerError || rec.Header().Get("Pragma") != "no-cache" ||
		rec.Body.String() != `{"error":"server_error","error_description":"Internal error"}` {
		t.Fatalf("%d %v %s", rec.Code, rec.Header(), rec.Body)
	}
}

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
