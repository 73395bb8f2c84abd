package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/signd/signd/store/storetest"
)

// servedCert returns the DER of the certificate a fresh TLS handshake with
// addr presents.
func servedCert(t *testing.T, addr string, roots *x509.CertPool) []byte {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: roots})
	if err != nil {
		t.Fatalf("handshake: %v", err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].Raw
}

func certDER(t *testing.T, certFile string) []byte {
	t.Helper()
	b, err := os.ReadFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(b)
	if block == nil {
		t.Fatalf("%s: no PEM", certFile)
	}
	return block.Bytes
}

// replaceFile puts src's contents at dst by rename, as a certificate
// rotation tool does.
func replaceFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	tmp := dst + ".new"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		t.Fatal(err)
	}
}

// TestReloadRotatesCertificateUnderLoad: requests run on kept-alive and on
// new connections while the certificate files are replaced and the daemon
// is told to reload (SIGHUP's channel): not one fails, new handshakes get
// the new certificate, and log.level changes with it. A reload with a
// broken certificate or a bad configuration changes nothing.
func TestReloadRotatesCertificateUnderLoad(t *testing.T) {
	e := newEnv(t, "log:\n  level: error\n")
	certFile, keyFile, roots := selfSigned(t, e.dir)
	nextCert, nextKey, _ := selfSigned(t, t.TempDir())
	roots.AppendCertsFromPEM(mustRead(t, nextCert)) // a client trusts both
	e.setConfig("server:\n", "server:\n  tls:\n    cert_file: "+certFile+"\n    key_file: "+keyFile+"\n")
	hup := make(chan struct{})
	logs := &syncBuffer{}
	addr, _ := e.startDaemonWith(func(a *app) { a.hup = hup; a.stderr = logs })
	oldDER, newDER := certDER(t, certFile), certDER(t, nextCert)
	if !bytes.Equal(servedCert(t, addr, roots), oldDER) {
		t.Fatal("the daemon does not serve the configured certificate")
	}

	var ok, failed atomic.Int64
	var firstErr atomic.Value
	clients := make([]*http.Client, 8)
	for i := range clients {
		clients[i] = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: roots}, DisableKeepAlives: i%2 == 0}}
	}
	stop := storetest.Meanwhile(len(clients), func(i int) bool {
		res, err := clients[i].Get("https://" + addr + "/healthz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				err = &statusError{res.StatusCode}
			}
		}
		if err != nil {
			failed.Add(1)
			firstErr.CompareAndSwap(nil, err)
		} else {
			ok.Add(1)
		}
		return true
	})
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				stop()
				t.Fatalf("%s: not within 10 s", what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitFor("load", func() bool { return ok.Load() > 50 })
	if strings.Contains(logs.String(), "/healthz") {
		t.Fatalf("request logged at log.level error:\n%s", logs.String())
	}

	replaceFile(t, nextCert, certFile)
	replaceFile(t, nextKey, keyFile)
	// debug: health probes whose status does not change log at DEBUG.
	e.setConfig("level: error", "level: debug")
	hup <- struct{}{}
	waitFor("the new certificate", func() bool { return bytes.Equal(servedCert(t, addr, roots), newDER) })
	before := ok.Load()
	waitFor("load after the reload", func() bool { return ok.Load() > before+50 })
	waitFor("log.level debug", func() bool { return strings.Contains(logs.String(), "/healthz") })

	// A broken pair, then a bad configuration: each refused, nothing changes.
	if err := os.WriteFile(keyFile, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	hup <- struct{}{}
	waitFor("the refusal of a broken key", func() bool { return strings.Contains(logs.String(), "the previous certificate stays") })
	replaceFile(t, nextKey, keyFile)
	e.setConfig("level: debug", "level: loud")
	hup <- struct{}{}
	waitFor("the refusal of a bad configuration", func() bool {
		return strings.Contains(logs.String(), "reload: configuration refused, nothing changed")
	})
	if !bytes.Equal(servedCert(t, addr, roots), newDER) {
		t.Error("a refused reload changed the certificate")
	}
	stop()
	if failed.Load() != 0 {
		t.Fatalf("%d of %d requests failed during the reloads; first: %v", failed.Load(), failed.Load()+ok.Load(), firstErr.Load())
	}
}

type statusError struct{ code int }

func (e *statusError) Error() string { return http.StatusText(e.code) }

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestReloadOnSIGHUP: the daemon as a process reloads on SIGHUP instead of
// ending, and keeps serving.
func TestReloadOnSIGHUP(t *testing.T) {
	e := newEnv(t, "")
	c, _ := e.startChild()
	defer c.stop(t)
	if err := c.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(c.logs.String(), `"msg":"reloaded"`) {
		select {
		case err := <-c.done:
			t.Fatalf("signd ended on SIGHUP: %v\n%s", err, c.logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no reload within 10 s:\n%s", c.logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	res, err := http.Get("http://" + c.addr + "/healthz")
	if err != nil {
		t.Fatalf("after SIGHUP: %v", err)
	}
	res.Body.Close()
}
