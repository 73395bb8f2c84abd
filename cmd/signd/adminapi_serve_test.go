package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"log/slog"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/ocsp"

	"github.com/signd/signd/cmd/signd/adminapi"
	"github.com/signd/signd/cmd/signd/httpserver"
	"github.com/signd/signd/cmd/signd/reload"
	"github.com/signd/signd/config"
	"github.com/signd/signd/csc/certstatus/certstatustest"
	"github.com/signd/signd/store"
)

// crlTemplate describes a CRL apiReload's test writes.
type crlTemplate struct {
	number     int64
	thisUpdate time.Time
	nextUpdate time.Time
}

// TestAPIReloadCRL: a reload never weakens the provisioning API's
// revocation check: it refuses to remove the CRL, to change its issuer
// (another CA of an admin.api_client_ca bundle), to go back to an older
// CRL (a lower cRLNumber, an earlier thisUpdate) or to put an out-of-date
// one in force; the CRL in force stays. A newer CRL of the same CA goes,
// and so does adding a CRL where none was.
func TestAPIReloadCRL(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	ca, other := certstatustest.New(t, "admin API CA", nil), certstatustest.New(t, "second admin API CA", nil)
	cas := []*x509.Certificate{ca.Cert, other.Cert}
	dir := t.TempDir()
	certFile, keyFile, _ := selfSigned(t, dir)
	n := 0
	write := func(by *certstatustest.CA, c crlTemplate) string {
		t.Helper()
		tmpl := &x509.RevocationList{Number: big.NewInt(c.number), ThisUpdate: c.thisUpdate, NextUpdate: c.nextUpdate}
		der, err := x509.CreateRevocationList(rand.Reader, tmpl, by.Cert, by.Key)
		if err != nil {
			t.Fatal(err)
		}
		n++
		return writePEM(t, dir, "crl"+string(rune('a'+n)), &pem.Block{Type: "X509 CRL", Bytes: der})
	}
	current := crlTemplate{number: 10, thisUpdate: now.Add(-time.Hour), nextUpdate: now.Add(time.Hour)}
	caFile := writePEM(t, dir, "cas.pem", &pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw}, &pem.Block{Type: "CERTIFICATE", Bytes: other.Cert.Raw})
	cfgOf := func(crlFile string) *config.Config {
		cfg := &config.Config{}
		cfg.Admin.APICertFile, cfg.Admin.APIKeyFile, cfg.Admin.APIClientCRL = certFile, keyFile, crlFile
		cfg.Admin.APIClientCA = caFile
		return cfg
	}
	tests := []struct {
		name  string
		start string // the CRL at start; "" = none
		next  string // the CRL the reload reads; "" = none
		err   string // "" = put in force
	}{
		{"a newer CRL", write(ca, current), write(ca, crlTemplate{11, now, now.Add(time.Hour)}), ""},
		{"the same CRL again", write(ca, current), "", ""}, // next = start, below
		{"a CRL where none was", "", write(ca, current), ""},
		{"no CRL, none before", "", "", ""},
		{"removed", write(ca, current), "", "admin.api_client_crl: removing the CRL would turn the revocation check off; restart signd to run without one"},
		{"another CA's", write(ca, current), write(other, crlTemplate{11, now, now.Add(time.Hour)}),
			"admin.api_client_crl: the CRL is issued by CN=second admin API CA,O=Test CA (key "},
		{"a lower cRLNumber", write(ca, current), write(ca, crlTemplate{9, now, now.Add(time.Hour)}),
			"admin.api_client_crl: the CRL's cRLNumber 9 is lower than 10 of the CRL in force"},
		{"an earlier thisUpdate", write(ca, current), write(ca, crlTemplate{11, now.Add(-2 * time.Hour), now.Add(time.Hour)}),
			"admin.api_client_crl: the CRL's thisUpdate " + now.Add(-2*time.Hour).UTC().Format(time.RFC3339) + " is before"},
		{"out of date", write(ca, current), write(ca, crlTemplate{11, now.Add(-2 * time.Hour), now.Add(-time.Minute)}),
			"admin.api_client_crl: the CRL is out of date since " + now.Add(-time.Minute).UTC().Format(time.RFC3339)},
		{"out of date where none was", "", write(ca, crlTemplate{11, now.Add(-2 * time.Hour), now.Add(-time.Minute)}),
			"admin.api_client_crl: the CRL is out of date since "},
		{"the CA file changed", write(ca, current), "ca changed", "admin.api_client_ca: its CA certificates changed since start; a change of the client CAs needs a restart"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next := tt.next
			switch tt.name {
			case "the same CRL again":
				next = tt.start
			case "the CA file changed": // the other CA alone, the CRL as it was
				next = tt.start
				writePEM(t, dir, "cas.pem", &pem.Block{Type: "CERTIFICATE", Bytes: other.Cert.Raw})
				defer writePEM(t, dir, "cas.pem", &pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw}, &pem.Block{Type: "CERTIFICATE", Bytes: other.Cert.Raw})
			}
			gate := &adminapi.Gate{ClientCAs: cas}
			var cert atomic.Pointer[tls.Certificate]
			reload := apiReload(gate, cas, &cert, func() time.Time { return now })
			apply, _, err := reload(cfgOf(tt.start))
			if err != nil {
				t.Fatalf("at start: %v", err)
			}
			apply()
			apply, crl, err := reload(cfgOf(next))
			switch {
			case tt.err == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.err != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.err)):
				t.Fatalf("error %v, want %s...", err, tt.err)
			case err != nil:
				return // no apply: TestAPIReloadAllOrNothing shows nothing else puts it in force
			}
			apply()
			if got := gate.CRLInForce(); got != crl || (next == "") != (got == nil) {
				t.Errorf("in force %v, want the CRL of %q", got, filepath.Base(next))
			}
		})
	}
}

// TestAPIReloadAllOrNothing: a SIGHUP reload puts the provisioning API's
// new certificate and CRL in force only when the whole reload goes: the
// API's part read well, then the server's TLS pair does not load, and
// the CRL and certificate in force stay those before it (reload.Reloader
// applies the API's part last). With the TLS pair fixed, the same reload
// puts the new CRL in force.
func TestAPIReloadAllOrNothing(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	ca := certstatustest.New(t, "admin API CA", nil)
	cas := []*x509.Certificate{ca.Cert}
	dir := t.TempDir()
	certFile, keyFile, _ := selfSigned(t, dir)
	caFile := writePEM(t, dir, "cas.pem", &pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw})
	crlFile := func(name string, number int64) string {
		tmpl := &x509.RevocationList{Number: big.NewInt(number), ThisUpdate: now.Add(-time.Minute * time.Duration(20-number)), NextUpdate: now.Add(time.Hour)}
		der, err := x509.CreateRevocationList(rand.Reader, tmpl, ca.Cert, ca.Key)
		if err != nil {
			t.Fatal(err)
		}
		return writePEM(t, dir, name, &pem.Block{Type: "X509 CRL", Bytes: der})
	}
	cfg := &config.Config{}
	cfg.Admin.APIListen, cfg.Admin.APICertFile, cfg.Admin.APIKeyFile = "127.0.0.1:0", certFile, keyFile
	cfg.Admin.APIClientCA, cfg.Admin.APIClientCRL = caFile, crlFile("crl-10.pem", 10)
	cfg.Server.TLS.CertFile, cfg.Server.TLS.KeyFile = certFile, keyFile

	gate := &adminapi.Gate{ClientCAs: cas}
	var cert atomic.Pointer[tls.Certificate]
	api := apiReload(gate, cas, &cert, func() time.Time { return now })
	apply, _, err := api(cfg)
	if err != nil {
		t.Fatalf("at start: %v", err)
	}
	apply()
	crlBefore, certBefore := gate.CRLInForce(), cert.Load()

	next := *cfg
	next.Admin.APIClientCRL = crlFile("crl-11.pem", 11)
	next.Server.TLS.KeyFile = filepath.Join(dir, "missing.key")
	r := &reload.Reloader{Load: func() (*config.Config, error) { c := next; return &c, nil },
		Level: new(slog.LevelVar), Certs: &httpserver.CertSource{}, API: api,
		Logger: slog.New(slog.DiscardHandler), Notify: func(string) {}, Now: func() time.Time { return now }}
	if err := r.Reload(); err == nil || !strings.Contains(err.Error(), "server.tls: ") {
		t.Fatalf("reload with the server's key missing: %v, want it refused (server.tls)", err)
	}
	if got := gate.CRLInForce(); got != crlBefore || got.Number.Int64() != 10 {
		t.Errorf("after the refused reload the CRL in force is number %v, want 10, the one before", got.Number)
	}
	if cert.Load() != certBefore {
		t.Error("after the refused reload the API's certificate changed")
	}

	next.Server.TLS.KeyFile = keyFile
	if err := r.Reload(); err != nil {
		t.Fatalf("reload with the server's key back: %v", err)
	}
	if got := gate.CRLInForce(); got == nil || got.Number.Int64() != 11 {
		t.Errorf("after the reload the CRL in force is %v, want number 11", got)
	}
}

// TestRestartRefusesOlderAPICRL: a restart does not go back to an older
// provisioning API CRL than the one the audit log last recorded in force
// (config_loaded's admin.api_client_crl.*), as a reload does not: CRL 1
// put back after CRL 2 revoked onboarding's certificate is refused, the
// daemon does not start and the refusal is audited. Removing the CRL is a
// restart's choice (recorded as none); CRL 1 after that is still refused.
// A newer CRL starts.
func TestRestartRefusesOlderAPICRL(t *testing.T) {
	ca := certstatustest.New(t, "admin API CA", nil)
	onboarding, auditor := clientCertOf(t, ca, "onboarding"), clientCertOf(t, ca, "auditor")
	var crlFile string
	var first []byte
	p := startProvisioningWith(t, auditor, ca, func(e *env) {
		crlFile = filepath.Join(e.dir, "api-clients.crl")
		first = writeCACRL(t, ca, crlFile, 1)
		t.Setenv("SIGND_ADMIN_API_CLIENT_CRL", crlFile)
	})
	if st, _ := p.call(&onboarding, "GET", "/users", ""); st != http.StatusOK {
		t.Fatalf("onboarding under CRL 1: %d", st)
	}
	p.stop()

	ca.Revoke(onboarding.cert.SerialNumber, ocsp.KeyCompromise)
	second := writeCACRL(t, ca, crlFile, 2)
	if started, err := serveOnce(t, p.e); !started || err != nil {
		t.Fatalf("a restart with a newer CRL: started %v, %v", started, err)
	}
	rollback := func(step string) {
		t.Helper()
		if err := os.WriteFile(crlFile, first, 0o600); err != nil {
			t.Fatal(err)
		}
		started, err := serveOnce(t, p.e)
		want := fmt.Sprintf("admin.api_client_crl %s: the CRL's cRLNumber 1 is lower than 2 of the CRL last in force", crlFile)
		if started || err == nil || !strings.HasPrefix(err.Error(), want) ||
			!strings.Contains(err.Error(), fmt.Sprintf("cRLNumber 2, thisUpdate %s, SHA-256 %x; this CRL: cRLNumber 1,", crlOf(t, second).ThisUpdate.UTC().Format(time.RFC3339), sha256.Sum256(second))) ||
			!strings.Contains(err.Error(), "have the CA issue a new one (a higher cRLNumber") {
			t.Fatalf("%s: a restart with CRL 1 after CRL 2: started %v, %v; want %s…", step, started, err, want)
		}
	}
	rollback("after CRL 2")
	// Without a CRL: allowed, recorded as none; CRL 1 is still older
	// than the last one in force.
	t.Setenv("SIGND_ADMIN_API_CLIENT_CRL", "")
	if started, err := serveOnce(t, p.e); !started || err != nil {
		t.Fatalf("a restart without a CRL: started %v, %v", started, err)
	}
	t.Setenv("SIGND_ADMIN_API_CLIENT_CRL", crlFile)
	rollback("after none")

	db := p.e.openStore()
	var got []string
	err := db.View(context.Background(), func(tx store.Tx) error {
		return store.AuditEntries(tx, 1, func(a *store.AuditEntry) error {
			if a.Kind == store.AuditConfigLoaded {
				got = append(got, fmt.Sprintf("%s %s %s", a.Fields["event"], a.Outcome, cmp.Or(a.Fields["admin.api_client_crl.number"], a.Fields["admin.api_client_crl"])))
				if a.Outcome == store.AuditRefused && !strings.HasPrefix(a.Reason, "the CRL's cRLNumber 1 is lower than 2 of the CRL last in force") {
					t.Errorf("the refused start's reason: %q", a.Reason)
				}
			}
			return nil
		})
	})
	db.Close()
	if want := "start ok 1,start ok 2,start refused 1,start ok none,start refused 1"; err != nil || strings.Join(got, ",") != want {
		t.Errorf("config_loaded entries: %q, %v; want %s", got, err, want)
	}

	writeCACRL(t, ca, crlFile, 3)
	logs := &syncBuffer{}
	apiAddr := make(chan string, 1)
	p.e.startDaemonWith(func(a *app) { a.apiReady = func(addr string) { apiAddr <- addr }; a.stderr = logs })
	p.api = "https://" + <-apiAddr
	if st, err := p.client(&onboarding).Get(p.api + adminapi.Prefix + "/users"); err == nil {
		st.Body.Close()
		t.Fatalf("the revoked certificate under CRL 3: %d, want the handshake refused", st.StatusCode)
	}
	if st, _ := p.call(&auditor, "GET", "/users", ""); st != http.StatusOK {
		t.Fatalf("auditor under CRL 3: %d", st)
	}
}

// crlOf parses a CRL's DER.
func crlOf(t *testing.T, der []byte) *x509.RevocationList {
	t.Helper()
	crl, err := x509.ParseRevocationList(der)
	if err != nil {
		t.Fatal(err)
	}
	return crl
}
