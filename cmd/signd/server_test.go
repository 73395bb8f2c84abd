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
	"testing"
	"time"
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
