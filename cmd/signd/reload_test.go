package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ocsp"

	"github.com/signd/signd/admin"
	"github.com/signd/signd/cmd/signd/adminapi"
	"github.com/signd/signd/csc/certstatus/certstatustest"
	"github.com/signd/signd/store"
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

// TestReloadCertificateStatus: a reload that leaves csc.cert_status.*
// as it is (a certificate rotated, the log level) asks the CA's responder
// nothing; one that changes it applies it to the running checker and
// fetches every credential's OCSP answer again at once: a certificate
// the CA put on hold after the last fetch is seen at the reload, not an
// hour later (refresh: 1h at start), and the new refresh interval (1s) is
// the one that lifts the hold. Turning the check off is refused and
// changes nothing.
func TestReloadCertificateStatus(t *testing.T) {
	ca := certstatustest.New(t, "Status CA", nil)
	e := newEnv(t, "csc:\n  cert_status:\n    refresh: 1h\n    timeout: 2s\nlog:\n  level: info\n")
	e.must("a long password\n", "user", "add", "alice", "--password-file", "-")
	e.must("", "client", "add", "rp", "--redirect-uri", "https://rp.example/cb")
	cred, leaf := enrollWithCA(t, e, "alice", ca, true, false)
	bearer := e.mint(store.TokenAccess, "alice", "rp", "")
	hup := make(chan struct{})
	logs := &syncBuffer{}
	addr, _ := e.startDaemonWith(func(a *app) { a.hup = hup; a.stderr = logs })
	base := "http://" + addr + "/csc/v1/"
	waitFetches(ca, "/ocsp", 1) // the refresh at start
	waitStatus(t, base, bearer, cred, "enabled", "valid")

	// The refresh a changed setting asks for comes at once (below): none
	// within 2 s of the reload is none at all.
	fetched := ca.Fetches("/ocsp")
	e.setConfig("level: info", "level: debug")
	hup <- struct{}{}
	waitLog(t, logs, `"msg":"reloaded"`)
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if n := ca.Fetches("/ocsp"); n != fetched {
			t.Fatalf("a reload that left csc.cert_status as it was: %d OCSP requests, want none", n-fetched)
		}
	}

	ca.Revoke(leaf.SerialNumber, ocsp.CertificateHold)
	e.setConfig("refresh: 1h", "refresh: 1s")
	hup <- struct{}{}
	waitStatus(t, base, bearer, cred, "disabled", "suspended")
	ca.Unrevoke(leaf.SerialNumber)
	waitStatus(t, base, bearer, cred, "enabled", "valid")

	e.setConfig("refresh: 1s", "enabled: false\n    refresh: 1s")
	hup <- struct{}{}
	waitLog(t, logs, "reload: csc.cert_status.enabled needs a restart; nothing changed")
	n := ca.Fetches("/ocsp")
	waitFetches(ca, "/ocsp", 1)
	if ca.Fetches("/ocsp") == n {
		t.Fatal("the refused reload stopped the certificate-status checks")
	}
}

// TestReloadProvisioningAPI: a reload reads the provisioning API's
// certificate and key and its CRL (admin.api_client_crl) again: a client
// certificate the CA revoked since is refused at its next request on a
// kept-alive connection and at the next handshake, new handshakes get the
// rotated server certificate, and config_loaded records the CRL in force
// (at start too).
// A reload that would weaken the check (an older CRL, none) changes
// nothing, nor does one that changes who may administer (admin.api_roles),
// a CRL that does not load, a key that is not the certificate's (the CRL
// read with it stays out of force), or turning the API off.
// writeCACRL writes ca's CRL, numbered number, to file (replacing it
// whole) and returns its DER.
func writeCACRL(t *testing.T, ca *certstatustest.CA, file string, number int64) []byte {
	t.Helper()
	ca.SetCRLNumber(number)
	res, err := http.Get(ca.URL + "/crl")
	if err != nil {
		t.Fatal(err)
	}
	der, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if err := os.WriteFile(file+".new", der, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(file+".new", file); err != nil {
		t.Fatal(err)
	}
	return der
}

func TestReloadProvisioningAPI(t *testing.T) {
	ca := certstatustest.New(t, "admin API CA", nil)
	onboarding, auditor := clientCertOf(t, ca, "onboarding"), clientCertOf(t, ca, "auditor")
	spare := clientCertOf(t, ca, "onboarding")
	writeCRL := func(file string, number int64) []byte { return writeCACRL(t, ca, file, number) }
	var crlFile string
	var first []byte
	p := startProvisioningWith(t, auditor, ca, func(e *env) {
		crlFile = filepath.Join(e.dir, "api-clients.crl")
		first = writeCRL(crlFile, 1)
		// The environment: startProvisioningWith writes the admin section.
		t.Setenv("SIGND_ADMIN_API_CLIENT_CRL", crlFile)
	})
	// GET /users as cert; the server certificate of the handshake is put
	// in served.
	var served []byte
	get := func(cert *apiCert) (int, error) {
		conf := &tls.Config{RootCAs: p.roots, Certificates: []tls.Certificate{cert.tls},
			VerifyConnection: func(cs tls.ConnectionState) error { served = cs.PeerCertificates[0].Raw; return nil }}
		c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: conf, DisableKeepAlives: true}}
		res, err := c.Get(p.api + adminapi.Prefix + "/users")
		if err != nil {
			return 0, err
		}
		res.Body.Close()
		return res.StatusCode, nil
	}
	reload := func(want string) {
		t.Helper()
		p.hup <- struct{}{}
		deadline := time.Now().Add(10 * time.Second)
		for strings.Count(p.logs.String(), want) == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("no %q within 10 s:\n%s", want, p.logs.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	// lastConfigLoaded is the newest config_loaded entry.
	lastConfigLoaded := func() (e struct {
		Outcome, Reason string
		Fields          map[string]string
	}) {
		t.Helper()
		st, raw := p.call(&auditor, "GET", "/audit/export?kind=config_loaded", "")
		lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
		if st != http.StatusOK || json.Unmarshal([]byte(lines[len(lines)-1]), &e) != nil {
			t.Fatalf("export: %d %s", st, raw)
		}
		return e
	}
	// A kept-alive connection of onboarding's.
	var dials atomic.Int32
	keptAlive := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: p.roots, Certificates: []tls.Certificate{onboarding.tls}},
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dials.Add(1)
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		}}}
	keptGet := func() (int, []byte) {
		t.Helper()
		res, err := keptAlive.Get(p.api + adminapi.Prefix + "/users")
		if err != nil {
			t.Fatalf("on the kept-alive connection: %v", err)
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		return res.StatusCode, raw
	}
	if st, raw := keptGet(); st != http.StatusOK {
		t.Fatalf("before the revocation: %d %s", st, raw)
	}
	sum := sha256.Sum256(first)
	if e := lastConfigLoaded(); e.Fields["event"] != "start" || e.Fields["admin.api_client_crl.number"] != "1" ||
		e.Fields["admin.api_client_crl.sha256"] != hex.EncodeToString(sum[:]) {
		t.Errorf("config_loaded at start: %+v, want the CRL in force (number 1, sha256 %x)", e, sum)
	}

	ca.Revoke(onboarding.cert.SerialNumber, ocsp.KeyCompromise)
	second := writeCRL(crlFile, 2)
	nextCert, nextKey, _ := selfSigned(t, t.TempDir())
	p.roots.AppendCertsFromPEM(mustRead(t, nextCert))
	replaceFile(t, nextCert, p.serverCA)
	replaceFile(t, nextKey, filepath.Join(filepath.Dir(p.serverCA), "tls.key"))
	reload(`"msg":"reloaded"`)
	revoked := fmt.Sprintf("the client certificate (serial %s) is revoked (admin.api_client_crl", onboarding.cert.SerialNumber)
	if st, raw := keptGet(); st != http.StatusForbidden || !strings.Contains(string(raw), revoked) || dials.Load() != 1 {
		t.Fatalf("the kept-alive connection after the revocation (%d dials): %d %s", dials.Load(), st, raw)
	}
	if acts := p.actsOf(&auditor, admin.CertActor(onboarding.cert)); !slices.Contains(acts, "ListUsers admin_refused  refused") {
		t.Errorf("the refusal on the kept-alive connection not audited: %q", acts)
	}
	if st, err := get(&onboarding); err == nil {
		t.Fatalf("a certificate on the reloaded CRL: %d, want the handshake refused", st)
	}
	if !strings.Contains(p.logs.String(), "is revoked (admin.api_client_crl") {
		t.Errorf("no revocation refusal logged:\n%s", p.logs.String())
	}
	if st, err := get(&auditor); st != http.StatusOK {
		t.Fatalf("auditor after the reload: %d %v", st, err)
	}
	if !bytes.Equal(served, certDER(t, nextCert)) {
		t.Error("a new handshake does not get the rotated API certificate")
	}
	sum = sha256.Sum256(second)
	if e := lastConfigLoaded(); e.Outcome != store.AuditOK || e.Fields["admin.api_client_crl.number"] != "2" ||
		e.Fields["admin.api_client_crl.sha256"] != hex.EncodeToString(sum[:]) || e.Fields["admin.api_client_crl.this_update"] == "" {
		t.Errorf("config_loaded of the reload: %+v, want the CRL in force (number 2, sha256 %x)", e, sum)
	}

	// Who may administer is read at start: a reload that changes it is
	// refused, the role stays, and config_loaded says why.
	auditorEntry := fmt.Sprintf(`auditor: ["sha256:%s"]`, admin.SPKIFingerprint(auditor.cert))
	p.e.setConfig(auditorEntry, `auditor: ["CN=someone else,O=Example"]`)
	reload("reload: admin.api_roles.auditor needs a restart; nothing changed")
	if st, err := get(&auditor); st != http.StatusOK {
		t.Fatalf("auditor after a refused change of admin.api_roles: %d %v", st, err)
	}
	if e := lastConfigLoaded(); e.Outcome != store.AuditRefused || e.Reason != "admin.api_roles.auditor needs a restart" {
		t.Errorf("config_loaded of the refused reload: %+v", e)
	}
	p.e.setConfig(`auditor: ["CN=someone else,O=Example"]`, auditorEntry)

	// An older CRL (without onboarding's revocation), or none: refused.
	if err := os.WriteFile(crlFile, first, 0o600); err != nil {
		t.Fatal(err)
	}
	reload("reload: admin.api_client_crl: the CRL's cRLNumber 1 is lower than 2 of the CRL in force")
	t.Setenv("SIGND_ADMIN_API_CLIENT_CRL", "")
	reload("reload: admin.api_client_crl: removing the CRL would turn the revocation check off")
	t.Setenv("SIGND_ADMIN_API_CLIENT_CRL", crlFile)
	if st, err := get(&onboarding); err == nil {
		t.Fatalf("the revoked certificate after an older CRL and none were refused: %d", st)
	}

	if err := os.WriteFile(crlFile, []byte("not a CRL"), 0o600); err != nil {
		t.Fatal(err)
	}
	reload("reload: configuration refused, nothing changed: admin.api_client_crl: ")
	// A good CRL that revokes spare, and a key that is not the
	// certificate's: neither is put in force.
	ca.Revoke(spare.cert.SerialNumber, ocsp.KeyCompromise)
	writeCRL(crlFile, 3)
	_, otherKey, _ := selfSigned(t, t.TempDir())
	replaceFile(t, otherKey, filepath.Join(filepath.Dir(p.serverCA), "tls.key"))
	reload("reload: admin.api_cert_file, api_key_file: ")
	if st, err := get(&spare); st != http.StatusOK {
		t.Fatalf("a certificate the CRL of a refused reload revokes: %d %v, want 200", st, err)
	}
	p.e.setConfig("api_listen: 127.0.0.1:0", "api_listen: \"\"")
	reload("reload: admin.api_listen needs a restart; nothing changed")
	if st, err := get(&onboarding); err == nil {
		t.Fatalf("after refused reloads the revoked certificate: %d", st)
	}
	if st, err := get(&auditor); st != http.StatusOK {
		t.Fatalf("auditor after refused reloads: %d %v", st, err)
	}
	if !bytes.Equal(served, certDER(t, nextCert)) {
		t.Error("a refused reload changed the API certificate")
	}
}
