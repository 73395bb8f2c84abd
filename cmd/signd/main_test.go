package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/signd/signd/internal/logtest"
	softhsmtest "github.com/signd/signd/softhsm-test"
	"github.com/signd/signd/store"
)

// token is the SoftHSM2 token every test of this package uses.
var token *softhsmtest.Token

func TestMain(m *testing.M) {
	// The test binary doubles as a helper process that other uids run
	// (adminsock_test.go); it must not touch the token then.
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(runChild(mode))
	}
	if os.Getenv(runMainEnv) == "1" { // a test runs this binary as signd (crash_test.go)
		main()
		os.Exit(0)
	}
	code := softhsmtest.Main(m, "signd-cmd-test", func(tok *softhsmtest.Token) (func(), error) {
		token = tok
		return nil, nil
	})
	removeChildBinary()
	stopEtcd()
	stopCluster()
	os.Exit(code)
}

// env is one signd installation in a temp dir: config, store, socket.
type env struct {
	t       *testing.T
	dir     string
	cfgPath string
	pinFile string
	// metricsAddr is where the last daemon's metrics listener listens
	// ("" when off).
	metricsAddr string
	store       string // store.path
}

func newEnv(t *testing.T, extra string) *env {
	t.Helper()
	// Unix socket paths are limited to 108 bytes: keep the dir short.
	dir, err := os.MkdirTemp("", "sd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	e := &env{t: t, dir: dir, cfgPath: filepath.Join(dir, "signd.yaml"), pinFile: filepath.Join(dir, "pin"), store: filepath.Join(dir, "signd.db")}
	if err := os.WriteFile(e.pinFile, []byte(token.PIN+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`server:
  listen: 127.0.0.1:0
  metrics_listen: 127.0.0.1:0
  base_url: http://127.0.0.1:8443
  admin_socket: %s/s.sock
store:
  path: %s/signd.db
  open_timeout: 1s
pkcs11:
  module: %s
  token_label: %s
  pin_file: %s
audit:
  checkpoint_dir: %s/checkpoints
oidc:
  pairwise_salt_file: %s/pairwise.salt
%s`, dir, dir, token.Module, token.Label, e.pinFile, dir, dir, extra)
	if err := os.WriteFile(e.cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return e
}

// setConfig replaces old by new in the config file (the old text must be
// there), for tests that change a key newEnv writes.
func (e *env) setConfig(old, new string) {
	e.t.Helper()
	data, err := os.ReadFile(e.cfgPath)
	if err != nil {
		e.t.Fatal(err)
	}
	if !bytes.Contains(data, []byte(old)) {
		e.t.Fatalf("config has no %q:\n%s", old, data)
	}
	if err := os.WriteFile(e.cfgPath, bytes.Replace(data, []byte(old), []byte(new), 1), 0o600); err != nil {
		e.t.Fatal(err)
	}
}

// appendConfig adds text at the end of the config file, for tests that
// add keys to the section newEnv (or checkpointEnv) writes last.
func (e *env) appendConfig(text string) {
	e.t.Helper()
	f, err := os.OpenFile(e.cfgPath, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	defer f.Close()
	if _, err := io.WriteString(f, text); err != nil {
		e.t.Fatal(err)
	}
}

// atBaseURL makes the daemon of e listen where server.base_url points, a
// free port of 127.0.0.1, and returns that address: a browser's Origin on
// a form is then base_url's, and the links the API answers lead to the
// daemon.
func atBaseURL(t *testing.T, e *env) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	e.setConfig("listen: 127.0.0.1:0", "listen: "+addr)
	e.setConfig("base_url: http://127.0.0.1:8443", "base_url: http://"+addr)
	return addr
}

// testArgon2 keeps password hashing cheap in tests.
var testArgon2 = store.Argon2Params{Time: 1, MemoryKiB: 64, Threads: 1, KeyLen: 32, SaltLen: 16}

// run executes one CLI command in-process and returns stdout and stderr.
func (e *env) run(stdin string, args ...string) (string, string, error) {
	var out, errb bytes.Buffer
	a := newApp(strings.NewReader(stdin), &out, &errb)
	a.argon2 = &testArgon2
	cmd := a.root()
	cmd.SetArgs(append([]string{"--config", e.cfgPath}, args...))
	err := cmd.ExecuteContext(context.Background())
	return out.String(), errb.String(), err
}

// must runs a command that must succeed and returns its stdout.
func (e *env) must(stdin string, args ...string) string {
	e.t.Helper()
	out, errOut, err := e.run(stdin, args...)
	if err != nil {
		e.t.Fatalf("signd %s: %v\nstderr: %s", strings.Join(args, " "), err, errOut)
	}
	return out
}

// daemon runs `signd serve` in-process until the test ends; it returns the
// HTTP address and the captured log.
func (e *env) daemon() (string, *syncBuffer) {
	e.t.Helper()
	logs := &syncBuffer{}
	addr, _ := e.startDaemonWith(func(a *app) { a.stderr = logs })
	return addr, logs
}

// testCA is a throwaway CA for certificate tests.
type testCA struct {
	key  *rsa.PrivateKey
	cert *x509.Certificate
}

func newTestCA(t *testing.T, cn string) *testCA {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{key: key, cert: cert}
}

// issue signs the CSR's key; it returns leaf PEM followed by the CA PEM.
func (ca *testCA) issue(t *testing.T, csrPEM string) string {
	t.Helper()
	return ca.certify(t, csrPEM) + ca.pem()
}

// parseCSR parses the first PEM block of out (a command's output) as a
// CSR.
func parseCSR(t *testing.T, out string) *x509.CertificateRequest {
	t.Helper()
	b, _ := pem.Decode([]byte(out))
	if b == nil {
		t.Fatalf("no PEM CSR in %q", out)
	}
	csr, err := x509.ParseCertificateRequest(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return csr
}

// certify checks the CSR's signature and certifies its key for digital
// signature and content commitment with the extensions exts; it returns
// the certificate PEM.
func (ca *testCA) certify(t *testing.T, csrPEM string, exts ...pkix.Extension) string {
	t.Helper()
	csr := parseCSR(t, csrPEM)
	if err := csr.CheckSignature(); err != nil {
		t.Fatalf("CSR signature: %v", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: csr.Subject,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(12 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageContentCommitment, ExtraExtensions: exts,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, csr.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

func (ca *testCA) pem() string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.cert.Raw}))
}

// syncBuffer is the shared goroutine-safe log sink.
type syncBuffer = logtest.Buffer
