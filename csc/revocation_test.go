package csc_test

import (
	"context"
	"crypto/x509/pkix"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ocsp"

	"github.com/signd/signd/csc"
	"github.com/signd/signd/csc/certstatus"
	"github.com/signd/signd/csc/certstatus/certstatustest"
	"github.com/signd/signd/store"
)

// fakeRevocation answers Status from a settable value (the real checker,
// with OCSP and CRLs, is certstatus's and cmd/signd's subject).
type fakeRevocation struct {
	mu      sync.Mutex
	status  certstatus.Status
	current bool
}

func (f *fakeRevocation) set(s certstatus.Status, current bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.status, f.current = s, current
}

func (f *fakeRevocation) Status([][]byte) (certstatus.Status, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.status, f.current
}

func withRevocation(r csc.Revocation) envOption { return func(h *csc.Handler) { h.Revocation = r } }

// A revoked, suspended or unknown-status certificate disables the key:
// credentials/info says so, signHash refuses with the exact description
// and leaves the SAD alone, and once the status is valid again the same
// SAD signs.
func TestRevocationDisablesKey(t *testing.T) {
	const name = "CN=alice signer,O=Example Org,C=NL" // credentials/info's subjectDN
	tests := []struct {
		status             certstatus.Status
		current            bool
		wantCert, wantDesc string
	}{
		{certstatus.Revoked, true, "revoked", "Signing certificate '" + name + "' is revoked."},
		{certstatus.Suspended, true, "suspended", "Signing certificate '" + name + "' is suspended."},
		{certstatus.Revoked, false, "revoked", "Signing certificate '" + name + "' is revoked."},
		{certstatus.Valid, false, "valid", "The revocation status of signing certificate '" + name + "' could not be verified."},
	}
	for _, tt := range tests {
		t.Run(tt.wantCert+"/"+map[bool]string{true: "current", false: "stale"}[tt.current], func(t *testing.T) {
			rev := &fakeRevocation{}
			e := newEnv(t, withRevocation(rev))
			bearer, cred := e.alice()
			d := digest("revocation")
			sad := e.sad("alice", "rp1", cred, time.Minute, d)

			rev.set(tt.status, tt.current)
			info := e.call("credentials/info", bearer, `{"credentialID":"`+cred+`","certInfo":true}`)
			key, _ := info.body["key"].(map[string]any)
			cert, _ := info.body["cert"].(map[string]any)
			if info.status != http.StatusOK || key["status"] != "disabled" || cert["status"] != tt.wantCert {
				t.Fatalf("credentials/info: %d key %v cert %v; want disabled, %s", info.status, key["status"], cert["status"], tt.wantCert)
			}
			if cert["subjectDN"] != name {
				t.Errorf("credentials/info subjectDN %q, the refusal names %q", cert["subjectDN"], name)
			}
			r := e.call("signatures/signHash", bearer, signHashBody(cred, sad, d))
			wantError(t, r, http.StatusBadRequest, "invalid_request", tt.wantDesc)

			rev.set(certstatus.Valid, true)
			info = e.call("credentials/info", bearer, `{"credentialID":"`+cred+`"}`)
			key, _ = info.body["key"].(map[string]any)
			cert, _ = info.body["cert"].(map[string]any)
			if key["status"] != "enabled" || cert["status"] != "valid" {
				t.Fatalf("valid again: key %v cert %v", key["status"], cert["status"])
			}
			sigs := signatures(t, e.call("signatures/signHash", bearer, signHashBody(cred, sad, d)))
			e.verify(cred, d, sigs[0])
		})
	}
}

// TestAuthorizeRefusesRevokedCertificate: credentials/authorize issues no
// SAD, and evaluates no PIN, for a credential whose certificate is
// revoked, suspended or of unknown status; once it is valid again the
// same request succeeds.
func TestAuthorizeRefusesRevokedCertificate(t *testing.T) {
	e := newExplicitEnv(t)
	rev := &fakeRevocation{}
	e.h.Revocation = rev
	bearer := e.accessToken("alice", "rp1")
	cred := e.explicitCredential("alice", 2, store.AuthExplicit)
	ds := batch(2)
	for _, tt := range []struct {
		status  certstatus.Status
		current bool
		reason  string
	}{
		{certstatus.Revoked, true, "is revoked."},
		{certstatus.Suspended, true, "is suspended."},
		{certstatus.Valid, false, "could not be verified."},
	} {
		rev.set(tt.status, tt.current)
		before := e.checker.checks.Load()
		r := e.call("credentials/authorize", bearer, authorizeBody(cred, 2, testPIN, ds...))
		if r.status != http.StatusBadRequest || r.str("error") != "invalid_request" || !strings.HasSuffix(r.str("error_description"), tt.reason) {
			t.Fatalf("%s: %d %s, want 400 invalid_request ending %q", tt.reason, r.status, r.raw, tt.reason)
		}
		if r.str("SAD") != "" {
			t.Fatalf("%s: a SAD was issued", tt.reason)
		}
		if n := e.checker.checks.Load() - before; n != 0 {
			t.Fatalf("%s: %d PIN evaluations, want none", tt.reason, n)
		}
	}
	rev.set(certstatus.Valid, true)
	r := e.call("credentials/authorize", bearer, authorizeBody(cred, 2, testPIN, ds...))
	if r.status != http.StatusOK || r.str("SAD") == "" {
		t.Fatalf("valid again: %d %s", r.status, r.raw)
	}
}

// TestRevokedCertificateStaysRevoked runs the real status checker against
// a test CA: after the CA revoked alice's certificate, an answer signed
// by the same CA that is not a complete, current answer for it — a CRL
// of another partition, a delta CRL, a CRL with an unknown critical
// extension, an old OCSP "good" without nextUpdate — does not make it
// valid again: credentials/info says revoked and signHash refuses.
func TestRevokedCertificateStaysRevoked(t *testing.T) {
	tests := []struct {
		name      string
		ocsp, crl bool
		attack    func(ca *certstatustest.CA)
	}{
		{name: "CRL of another distribution point", crl: true, attack: func(ca *certstatustest.CA) {
			ca.SetCRLExtensions(certstatustest.IDP{URIs: []string{"http://crl.example/partition-2.crl"}}.Extension())
		}},
		{name: "delta CRL", crl: true, attack: func(ca *certstatustest.CA) {
			ca.SetCRLExtensions(certstatustest.DeltaCRLIndicator(1))
		}},
		{name: "unknown critical CRL extension", crl: true, attack: func(ca *certstatustest.CA) {
			ca.SetCRLExtensions(pkix.Extension{Id: []int{1, 3, 6, 1, 4, 1, 99999, 7, 1}, Critical: true, Value: []byte{5, 0}})
		}},
		{name: "OCSP good from 48 hours ago without nextUpdate", ocsp: true, attack: func(ca *certstatustest.CA) {
			ca.SetThisUpdate(48 * time.Hour)
			ca.OmitNextUpdate(true)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			ca := certstatustest.New(t, "Status CA", e.clock.Now)
			checker := certstatus.New(certstatus.Config{Now: e.clock.Now, AllowLoopback: true, Refresh: 10 * time.Minute, Timeout: 2 * time.Second})
			e.h.Revocation = checker
			leaf := ca.Issue(t, keyA.Public, certstatustest.Leaf{
				Subject: pkix.Name{CommonName: "alice signer", Organization: []string{"Example Org"}}, OCSP: tt.ocsp, CRL: tt.crl})
			spec := valid("alice", keyA)
			spec.chain = [][]byte{leaf.Raw, ca.Cert.Raw}
			bearer, cred := e.accessToken("alice", "rp1"), e.credential(spec)
			refresh := func() { checker.Refresh(context.Background(), [][][]byte{spec.chain}) }
			status := func() (string, string) {
				t.Helper()
				r := e.call("credentials/info", bearer, `{"credentialID":"`+cred+`"}`)
				key, _ := r.body["key"].(map[string]any)
				cert, _ := r.body["cert"].(map[string]any)
				k, _ := key["status"].(string)
				c, _ := cert["status"].(string)
				return k, c
			}
			d1, d2 := digest("before"), digest("after")
			sad1, sad2 := e.sad("alice", "rp1", cred, time.Hour, d1), e.sad("alice", "rp1", cred, time.Hour, d2)

			refresh()
			sigs := signatures(t, e.call("signatures/signHash", bearer, signHashBody(cred, sad1, d1)))
			e.verify(cred, d1, sigs[0])
			ca.Revoke(leaf.SerialNumber, ocsp.KeyCompromise)
			refresh()
			if k, c := status(); k != "disabled" || c != "revoked" {
				t.Fatalf("revoked: key %s cert %s", k, c)
			}

			e.clock.Advance(10 * time.Minute)
			tt.attack(ca)
			ca.Unrevoke(leaf.SerialNumber)
			refresh()
			if k, c := status(); k != "disabled" || c != "revoked" {
				t.Fatalf("after the %s: key %s cert %s; want disabled, revoked", tt.name, k, c)
			}
			r := e.call("signatures/signHash", bearer, signHashBody(cred, sad2, d2))
			wantError(t, r, http.StatusBadRequest, "invalid_request", "Signing certificate 'CN=alice signer,O=Example Org' is revoked.")
		})
	}
}
