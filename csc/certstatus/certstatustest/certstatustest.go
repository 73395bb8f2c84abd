// Package certstatustest is a throwaway certification authority for tests
// of certificate status checking: it issues certificates that name its
// OCSP responder and CRL distribution point, and serves both from an
// httptest server, with revocations and outages the test controls. No
// network beyond the loopback interface is used.
package certstatustest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ocsp"
)

// CA is a test certification authority with a CRL and an OCSP responder.
// Its methods are safe for concurrent use.
type CA struct {
	Cert *x509.Certificate
	Key  crypto.Signer
	// URL is the base URL of its server: URL+"/crl" and URL+"/ocsp".
	URL string

	mu      sync.Mutex
	now     func() time.Time
	revoked map[string]int // serial (decimal) → RFC 5280 reason code
	serial  int64
	// next is how far after now the answers' nextUpdate lies.
	next time.Duration
	// down: the endpoint answers 503; badSig: the answer is signed by
	// another key under the CA's name.
	ocspDown, crlDown, badSig bool
	fetches                   map[string]int
	// responder, when set, signs the OCSP answers instead of the CA.
	responder *responder
}

type responder struct {
	cert *x509.Certificate
	key  crypto.Signer
}

// New starts a CA named cn whose server stops when the test ends. now is
// the clock of thisUpdate/nextUpdate (nil = time.Now).
func New(t testing.TB, cn string, now func() time.Time) *CA {
	t.Helper()
	if now == nil {
		now = time.Now
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn, Organization: []string{"Test CA"}},
		NotBefore: now().Add(-24 * time.Hour), NotAfter: now().Add(10 * 365 * 24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	ca := &CA{Cert: cert, Key: key, now: now, revoked: map[string]int{}, serial: 100,
		next: time.Hour, fetches: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(ca.serve))
	t.Cleanup(srv.Close)
	ca.URL = srv.URL
	return ca
}

// Leaf describes a certificate Issue makes.
type Leaf struct {
	Subject             pkix.Name
	NotBefore, NotAfter time.Time // zero: an hour ago, a day from now
	OCSP, CRL           bool      // name the CA's responder, its CRL
	// CRLURLs, when set, are the CRL distribution points instead.
	CRLURLs     []string
	KeyUsage    x509.KeyUsage
	ExtKeyUsage []x509.ExtKeyUsage
}

// Issue certifies pub.
func (ca *CA) Issue(t testing.TB, pub crypto.PublicKey, l Leaf) *x509.Certificate {
	t.Helper()
	ca.mu.Lock()
	ca.serial++
	serial := ca.serial
	now := ca.now()
	ca.mu.Unlock()
	if l.NotBefore.IsZero() {
		l.NotBefore = now.Add(-time.Hour)
	}
	if l.NotAfter.IsZero() {
		l.NotAfter = now.Add(24 * time.Hour)
	}
	if l.KeyUsage == 0 {
		l.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageContentCommitment
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: l.Subject,
		NotBefore: l.NotBefore, NotAfter: l.NotAfter, KeyUsage: l.KeyUsage, ExtKeyUsage: l.ExtKeyUsage,
	}
	if l.OCSP {
		tmpl.OCSPServer = []string{ca.URL + "/ocsp"}
	}
	if l.CRL {
		tmpl.CRLDistributionPoints = []string{ca.URL + "/crl"}
	}
	if l.CRLURLs != nil {
		tmpl.CRLDistributionPoints = l.CRLURLs
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, pub, ca.Key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return cert
}

// Revoke puts serial on the CRL and makes OCSP answer revoked, with the
// RFC 5280 reason code (ocsp.CertificateHold: suspended).
func (ca *CA) Revoke(serial *big.Int, reason int) {
	ca.mu.Lock()
	defer ca.mu.Unlock()
	ca.revoked[serial.String()] = reason
}

// Unrevoke takes serial off the CRL (a released hold).
func (ca *CA) Unrevoke(serial *big.Int) {
	ca.mu.Lock()
	defer ca.mu.Unlock()
	delete(ca.revoked, serial.String())
}

// SetDown makes the OCSP responder and/or the CRL answer 503.
func (ca *CA) SetDown(ocspDown, crlDown bool) {
	ca.mu.Lock()
	defer ca.mu.Unlock()
	ca.ocspDown, ca.crlDown = ocspDown, crlDown
}

// SetBadSignature makes every answer signed by a foreign key (the CA's
// name, another key).
func (ca *CA) SetBadSignature(bad bool) {
	ca.mu.Lock()
	defer ca.mu.Unlock()
	ca.badSig = bad
}

// SetResponder makes a delegated responder certificate, issued by the CA
// with id-kp-OCSPSigning when eku is true (without it otherwise), sign the
// OCSP answers.
func (ca *CA) SetResponder(t testing.TB, eku bool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	l := Leaf{Subject: pkix.Name{CommonName: "OCSP responder"}, KeyUsage: x509.KeyUsageDigitalSignature}
	if eku {
		l.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageOCSPSigning}
	}
	cert := ca.Issue(t, key.Public(), l)
	ca.mu.Lock()
	defer ca.mu.Unlock()
	ca.responder = &responder{cert: cert, key: key}
}

// SetNextUpdate sets how far after now nextUpdate lies (default an hour).
func (ca *CA) SetNextUpdate(d time.Duration) {
	ca.mu.Lock()
	defer ca.mu.Unlock()
	ca.next = d
}

// Fetches returns how often path ("/crl", "/ocsp") was requested.
func (ca *CA) Fetches(path string) int {
	ca.mu.Lock()
	defer ca.mu.Unlock()
	return ca.fetches[path]
}

func (ca *CA) signer() crypto.Signer {
	if !ca.badSig {
		return ca.Key
	}
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	return k
}

func (ca *CA) serve(w http.ResponseWriter, r *http.Request) {
	ca.mu.Lock()
	defer ca.mu.Unlock()
	ca.fetches[r.URL.Path]++
	now := ca.now()
	switch {
	case r.URL.Path == "/crl" && r.Method == http.MethodGet && !ca.crlDown:
		tmpl := &x509.RevocationList{Number: big.NewInt(now.Unix()), ThisUpdate: now.Add(-time.Minute), NextUpdate: now.Add(ca.next)}
		for s, reason := range ca.revoked {
			n, _ := new(big.Int).SetString(s, 10)
			tmpl.RevokedCertificateEntries = append(tmpl.RevokedCertificateEntries,
				x509.RevocationListEntry{SerialNumber: n, RevocationTime: now.Add(-time.Minute), ReasonCode: reason})
		}
		der, err := x509.CreateRevocationList(rand.Reader, tmpl, ca.Cert, ca.signer())
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/pkix-crl")
		w.Write(der)
	case r.URL.Path == "/ocsp" && r.Method == http.MethodPost && !ca.ocspDown:
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<16))
		req, err := ocsp.ParseRequest(body)
		if err != nil {
			w.Write(ocsp.MalformedRequestErrorResponse)
			return
		}
		tmpl := ocsp.Response{Status: ocsp.Good, SerialNumber: req.SerialNumber,
			ThisUpdate: now.Add(-time.Minute), NextUpdate: now.Add(ca.next)}
		if reason, ok := ca.revoked[req.SerialNumber.String()]; ok {
			tmpl.Status, tmpl.RevokedAt, tmpl.RevocationReason = ocsp.Revoked, now.Add(-time.Minute), reason
		}
		respCert, signer := ca.Cert, ca.signer()
		if ca.responder != nil {
			respCert, signer = ca.responder.cert, ca.responder.key
			tmpl.Certificate = respCert
		}
		der, err := ocsp.CreateResponse(ca.Cert, respCert, tmpl, signer)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/ocsp-response")
		w.Write(der)
	default:
		http.Error(w, "unavailable", http.StatusServiceUnavailable)
	}
}
