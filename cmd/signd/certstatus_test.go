package main

import (
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ocsp"

	"github.com/signd/signd/csc/certstatus/certstatustest"
	"github.com/signd/signd/store"
)

// certStatusConfig refreshes certificate status every second in these
// tests, so that a revocation is seen within a second or two.
const certStatusConfig = "csc:\n  cert_status:\n    refresh: 1s\n    timeout: 2s\n"

// enrollWithCA creates a credential for user through the CLI and imports a
// chain from ca whose leaf names ca's OCSP responder and/or CRL.
func enrollWithCA(t *testing.T, e *env, user string, ca *certstatustest.CA, ocspOn, crlOn bool) (string, *x509.Certificate) {
	t.Helper()
	out := e.must("", "credential", "create", "--user", user, "--subject", "CN=Alice Jansen,O=Example BV,C=NL", "--csr-out", "-")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	cred := lines[len(lines)-1]
	csr := parseCSR(t, out)
	leaf := ca.Issue(t, csr.PublicKey, certstatustest.Leaf{Subject: csr.Subject, OCSP: ocspOn, CRL: crlOn})
	chain := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leaf.Raw})
	chain = append(chain, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw})...)
	file := filepath.Join(e.dir, cred+"-chain.pem")
	if err := os.WriteFile(file, chain, 0o600); err != nil {
		t.Fatal(err)
	}
	e.must("", "credential", "import-cert", cred, "--chain", file)
	return cred, leaf
}

// postpone moves the expiry of the minted tokens by d (for a daemon whose
// clock runs ahead).
func (e *env) postpone(d time.Duration, values ...string) {
	e.t.Helper()
	db := e.openStore()
	defer db.Close()
	err := db.Update(context.Background(), func(tx store.Tx) error {
		for _, v := range values {
			tok, err := tx.Token(store.Fingerprint(v))
			if err != nil {
				return err
			}
			if err := tx.DeleteToken(tok.Hash); err != nil {
				return err
			}
			tok.ExpiresAt = tok.ExpiresAt.Add(d)
			if err := tx.CreateToken(tok); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

// waitFetches waits (at most 10 s) until path of ca has been requested n
// more times: the daemon, which refreshes every second, has then taken
// what ca served before the call.
func waitFetches(ca *certstatustest.CA, path string, n int) {
	want := ca.Fetches(path) + n
	for deadline := time.Now().Add(10 * time.Second); ca.Fetches(path) < want && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
}

// keyAndCert returns credentials/info's key.status and cert.status.
func keyAndCert(t *testing.T, base, bearer, cred string) (string, string) {
	t.Helper()
	status, info := postJSON(t, base+"credentials/info", bearer, `{"credentialID":"`+cred+`"}`)
	if status != 200 {
		t.Fatalf("credentials/info: %d %v", status, info)
	}
	key, _ := info["key"].(map[string]any)
	cert, _ := info["cert"].(map[string]any)
	k, _ := key["status"].(string)
	c, _ := cert["status"].(string)
	return k, c
}

// waitStatus polls credentials/info until key.status and cert.status are
// as wanted (the background job refreshes every second).
func waitStatus(t *testing.T, base, bearer, cred, wantKey, wantCert string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		k, c := keyAndCert(t, base, bearer, cred)
		if k == wantKey && c == wantCert {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("credentials/info: key.status %q cert.status %q, want %q %q", k, c, wantKey, wantCert)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestCertificateStatus runs the daemon with a real SoftHSM2 key whose
// certificate a test CA (served on loopback inside the test) revokes,
// suspends, or cannot vouch for; credentials/info reports it and
// signHash refuses with the exact description, through the real router.
func TestCertificateStatus(t *testing.T) {
	const name = "CN=Alice Jansen,O=Example BV,C=NL" // credentials/info's subjectDN
	unverified := "The revocation status of signing certificate '" + name + "' could not be verified."
	tests := []struct {
		name      string
		ocsp, crl bool
		clock     time.Duration // the daemon's clock runs this far ahead
		before    func(ca *certstatustest.CA, leaf *x509.Certificate)
		signFirst bool // SAD 1 signs before after runs
		after     func(ca *certstatustest.CA, leaf *x509.Certificate)
		wantKey   string
		wantCert  string
		wantDesc  string // "" = SAD 2 signs
		// wantUnfit is the status the credential is counted under in
		// signd_certstatus_disabled_credentials ("" = none); wantChecks
		// are signd_certstatus_checks_total series that must be there.
		wantUnfit  string
		wantChecks []string
	}{
		{name: "revoked via CRL", crl: true, signFirst: true,
			after:   func(ca *certstatustest.CA, l *x509.Certificate) { ca.Revoke(l.SerialNumber, ocsp.KeyCompromise) },
			wantKey: "disabled", wantCert: "revoked", wantDesc: "Signing certificate '" + name + "' is revoked.",
			wantUnfit: "revoked", wantChecks: []string{`{result="ok",source="crl"} `}},
		{name: "revoked via OCSP", ocsp: true, signFirst: true,
			after:   func(ca *certstatustest.CA, l *x509.Certificate) { ca.Revoke(l.SerialNumber, ocsp.Superseded) },
			wantKey: "disabled", wantCert: "revoked", wantDesc: "Signing certificate '" + name + "' is revoked.",
			wantUnfit: "revoked", wantChecks: []string{`{result="ok",source="ocsp"} `}},
		{name: "suspended via OCSP", ocsp: true, signFirst: true,
			after:   func(ca *certstatustest.CA, l *x509.Certificate) { ca.Revoke(l.SerialNumber, ocsp.CertificateHold) },
			wantKey: "disabled", wantCert: "suspended", wantDesc: "Signing certificate '" + name + "' is suspended.",
			wantUnfit: "suspended"},
		{name: "OCSP responder down, CRL revokes", ocsp: true, crl: true, signFirst: true,
			after: func(ca *certstatustest.CA, l *x509.Certificate) {
				ca.SetDown(true, false)
				ca.Revoke(l.SerialNumber, ocsp.KeyCompromise)
			},
			wantKey: "disabled", wantCert: "revoked", wantDesc: "Signing certificate '" + name + "' is revoked.",
			wantUnfit: "revoked", wantChecks: []string{`{result="failed",source="ocsp"} `, `{result="ok",source="crl"} `}},
		{name: "responders down after a good answer: last good kept until nextUpdate", ocsp: true, crl: true, signFirst: true,
			after: func(ca *certstatustest.CA, _ *x509.Certificate) {
				ca.SetDown(true, true)
				waitFetches(ca, "/ocsp", 2)
			},
			wantKey: "enabled", wantCert: "valid", wantChecks: []string{`{result="failed",source="crl"} `}},
		{name: "revoked, then a CRL of another distribution point", crl: true, signFirst: true,
			after: func(ca *certstatustest.CA, l *x509.Certificate) {
				ca.Revoke(l.SerialNumber, ocsp.KeyCompromise)
				waitFetches(ca, "/crl", 2) // the daemon has taken the revocation
				ca.SetCRLExtensions(certstatustest.IDP{URIs: []string{"http://crl.example/partition-2.crl"}}.Extension())
				ca.Unrevoke(l.SerialNumber)
				waitFetches(ca, "/crl", 2) // and the partition CRL, twice
			},
			wantKey: "disabled", wantCert: "revoked", wantDesc: "Signing certificate '" + name + "' is revoked.",
			wantUnfit: "revoked", wantChecks: []string{`{result="failed",source="crl"} `}},
		{name: "OCSP responder down from the start", ocsp: true,
			before:  func(ca *certstatustest.CA, _ *x509.Certificate) { ca.SetDown(true, true) },
			wantKey: "disabled", wantCert: "valid", wantDesc: unverified, wantUnfit: "unknown"},
		{name: "bad signature on the CRL", crl: true,
			before:  func(ca *certstatustest.CA, _ *x509.Certificate) { ca.SetBadSignature(true) },
			wantKey: "disabled", wantCert: "valid", wantDesc: unverified, wantUnfit: "unknown",
			wantChecks: []string{`{result="failed",source="crl"} `}},
		{name: "expired by the clock", clock: 48 * time.Hour,
			wantKey: "disabled", wantCert: "expired", wantDesc: "Signing certificate '" + name + "' is expired.", wantUnfit: "expired"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ca := certstatustest.New(t, "Status CA", nil)
			e := newEnv(t, certStatusConfig)
			e.must("a long password\n", "user", "add", "alice", "--password-file", "-")
			e.must("", "client", "add", "rp", "--redirect-uri", "https://rp.example/cb")
			cred, leaf := enrollWithCA(t, e, "alice", ca, tt.ocsp, tt.crl)
			d1, d2 := sha256.Sum256([]byte("one")), sha256.Sum256([]byte("two"))
			bearer := e.mint(store.TokenAccess, "alice", "rp", "")
			sad1 := e.mint(store.TokenSAD, "alice", "rp", cred, d1[:])
			sad2 := e.mint(store.TokenSAD, "alice", "rp", cred, d2[:])
			if tt.clock != 0 {
				e.postpone(tt.clock, bearer, sad1, sad2)
			}
			if tt.before != nil {
				tt.before(ca, leaf)
			}
			addr, _ := e.startDaemonWith(func(a *app) {
				if tt.clock != 0 {
					a.now = func() time.Time { return time.Now().Add(tt.clock) }
				}
			})
			base := "http://" + addr + "/csc/v1/"
			sign := func(sad string, d [32]byte) (int, map[string]any) {
				return postJSON(t, base+"signatures/signHash", bearer, `{"credentialID":"`+cred+`","SAD":"`+sad+
					`","hash":["`+base64.StdEncoding.EncodeToString(d[:])+`"],"signAlgo":"1.2.840.113549.1.1.11"}`)
			}
			verify := func(d [32]byte, res map[string]any) {
				t.Helper()
				list, _ := res["signatures"].([]any)
				if len(list) != 1 {
					t.Fatalf("signHash: %v", res)
				}
				s, _ := list[0].(string)
				sig, _ := base64.StdEncoding.DecodeString(s)
				if err := rsa.VerifyPKCS1v15(leaf.PublicKey.(*rsa.PublicKey), crypto.SHA256, d[:], sig); err != nil {
					t.Fatalf("signature: %v", err)
				}
			}
			if tt.signFirst {
				waitStatus(t, base, bearer, cred, "enabled", "valid")
				status, res := sign(sad1, d1)
				if status != 200 {
					t.Fatalf("signHash before: %d %v", status, res)
				}
				verify(d1, res)
			}
			if tt.after != nil {
				tt.after(ca, leaf)
			}
			waitStatus(t, base, bearer, cred, tt.wantKey, tt.wantCert)
			var gauge []string
			for _, s := range []string{"expired", "revoked", "suspended", "unknown"} {
				n := 0
				if s == tt.wantUnfit {
					n = 1
				}
				gauge = append(gauge, fmt.Sprintf(`signd_certstatus_disabled_credentials{status="%s"} %d`, s, n))
			}
			waitMetrics(t, e, gauge...)
			checks := metricLines(t, e, "signd_certstatus_checks_total")
			for _, w := range tt.wantChecks {
				if !strings.Contains(checks, w) {
					t.Errorf("checks lack %q:\n%s", w, checks)
				}
			}
			status, res := sign(sad2, d2)
			if tt.wantDesc == "" {
				if status != 200 {
					t.Fatalf("signHash: %d %v", status, res)
				}
				verify(d2, res)
				return
			}
			if status != 400 || res["error"] != "invalid_request" || res["error_description"] != tt.wantDesc {
				t.Fatalf("signHash: %d %v, want 400 invalid_request %q", status, res, tt.wantDesc)
			}
			// The refusal names the certificate as credentials/info does.
			status, info := postJSON(t, base+"credentials/info", bearer, `{"credentialID":"`+cred+`","certInfo":true}`)
			if dn, _ := info["cert"].(map[string]any)["subjectDN"].(string); status != 200 || !strings.Contains(tt.wantDesc, "'"+dn+"'") {
				t.Errorf("credentials/info subjectDN %q (%d) is not the name in %q", dn, status, tt.wantDesc)
			}
		})
	}
}
