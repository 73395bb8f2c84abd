package adminapi

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"io"
	"math/big"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/admin"
	"github.com/signd/signd/csc/certstatus/certstatustest"
	"github.com/signd/signd/store"
	"github.com/signd/signd/store/memory"
	"github.com/signd/signd/store/storetest/backends"
)

// world is a provisioning API on a loopback port: a memory store, a
// software token, the gate of a test CA.
type world struct {
	t     *testing.T
	db    store.Store
	ca    *certstatustest.CA
	roots *x509.CertPool // trusts the API's server certificate
	addr  string
	gate  *Gate
	// refused has a value for each refusal the gate audited: the client
	// hears of a refused certificate before the server has written it.
	refused chan struct{}
}

// clientCert is a client certificate with its key.
type clientCert struct {
	cert *x509.Certificate
	tls  tls.Certificate
}

// issue makes a client certificate for CN=cn,O=Example from ca, valid from
// notBefore to notAfter (zero: Leaf's defaults).
func issue(t *testing.T, ca *certstatustest.CA, cn string, notBefore, notAfter time.Time) clientCert {
	t.Helper()
	c := ca.ClientCert(t, cn, notBefore, notAfter)
	return clientCert{c.Leaf, c}
}

// serverCert is a certificate for 127.0.0.1 from ca.
func serverCert(t *testing.T, ca *certstatustest.CA) *tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "signd"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// newWorld starts the API with the certificate entries of roles and the
// operations of dual under dual control; crl, when set, is the CA's.
func newWorld(t *testing.T, roles map[string][]string, dual []string, crl *x509.RevocationList) *world {
	t.Helper()
	db := backends.Memory(t, memory.Options{})
	h, err := store.NewHasher(store.Argon2Params{Time: 1, MemoryKiB: 64, Threads: 1, KeyLen: 32, SaltLen: 16})
	if err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, db: db, roots: x509.NewCertPool(), refused: make(chan struct{}, 16)}
	// A requester's roles at an approval: their certificate as the gate
	// admits it then (the daemon's rolesNow, for certificates).
	local := admin.New(admin.Config{Store: db, Hasher: h, DualControl: dual,
		RolesNow: func(_ context.Context, _ string, certs [][]byte) ([]admin.Role, error) { return w.gate.RolesOf(certs) }})
	ca := certstatustest.New(t, "admin API CA", nil)
	m, err := admin.CertRoleMap(roles)
	if err != nil {
		t.Fatal(err)
	}
	w.ca = ca
	w.roots.AddCert(ca.Cert)
	w.gate = &Gate{ClientCAs: []*x509.Certificate{ca.Cert}, CRL: crl, Roles: m,
		Refused: func(ctx context.Context, by admin.Principal, op, reason string, fields map[string]string) {
			local.Refused(ctx, by, op, reason, fields)
			w.refused <- struct{}{}
		}}
	e := echo.New()
	if err := (&Handler{Service: local, Gate: w.gate}).Mount(e.Group("")); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sc := serverCert(t, ca)
	srv := &http.Server{Handler: e, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(w.gate.Listen(ln, w.gate.TLSConfig(func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return sc, nil })))
	t.Cleanup(func() { srv.Close() })
	w.addr = ln.Addr().String()
	return w
}

// client is an HTTPS client presenting cert (nil: none).
func (w *world) client(cert *clientCert, maxVersion uint16) *http.Client {
	conf := &tls.Config{RootCAs: w.roots, MaxVersion: maxVersion}
	if maxVersion != 0 {
		conf.MinVersion = tls.VersionTLS10
	}
	if cert != nil {
		conf.Certificates = []tls.Certificate{cert.tls}
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: conf, DisableKeepAlives: true}, Timeout: 10 * time.Second}
}

// call sends method path with body (JSON when not nil) as cert and
// returns the status and the decoded answer.
func (w *world) call(cert *clientCert, method, path string, body []byte) (int, map[string]any) {
	w.t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, "https://"+w.addr+Prefix+path, rd)
	if err != nil {
		w.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := w.client(cert, 0).Do(req)
	if err != nil {
		w.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var out map[string]any
	if len(raw) > 0 && raw[0] == '{' && strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(raw, &out); err != nil {
			w.t.Fatalf("%s %s: answer %q: %v", method, path, raw, err)
		}
	}
	return res.StatusCode, out
}

// audit returns the audit log.
func (w *world) audit() []*store.AuditEntry {
	w.t.Helper()
	var out []*store.AuditEntry
	if err := w.db.View(context.Background(), func(tx store.Tx) error {
		return store.AuditEntries(tx, 1, func(a *store.AuditEntry) error { out = append(out, a); return nil })
	}); err != nil {
		w.t.Fatal(err)
	}
	return out
}

// awaitRefusal waits until the gate has audited a refusal.
func (w *world) awaitRefusal(t *testing.T) {
	t.Helper()
	select {
	case <-w.refused:
	case <-time.After(10 * time.Second):
		t.Fatal("no refusal audited within 10 s")
	}
}
