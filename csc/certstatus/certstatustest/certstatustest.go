// Package certstatustest is a throwaway certification authority for tests
// of certificate status checking: it issues certificates that name its
// OCSP responder and CRL distribution point, and serves both from an
// httptest server, with revocations and outages the test controls. No
// network beyond the loopback interface is used. Create is the one step
// of it that tests making their own certificates (self-signed ones, of a
// given key) share.
package certstatustest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"
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
	// age is how far before now the answers' thisUpdate lies (negative:
	// in the future); next how far after now their nextUpdate lies, and
	// noNext leaves it out.
	age, next time.Duration
	noNext    bool
	// crlExts and entryExts are added to the CRL and to each of its
	// entries.
	crlExts, entryExts []pkix.Extension
	// crlNumber, when not 0, is the CRL's cRLNumber instead of its
	// thisUpdate in Unix seconds.
	crlNumber int64
	// down: the endpoint answers 503; badSig: the answer is signed by
	// another key under the CA's name.
	ocspDown, crlDown, badSig bool
	fetches                   map[string]int
	// responder, when set, signs the OCSP answers instead of the CA.
	responder *responder
	// certIDOf, when set, is the issuer the OCSP answers' CertID names
	// instead of the CA (the CA still signs them).
	certIDOf *x509.Certificate
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
	cert := Create(t, tmpl, tmpl, key.Public(), key)
	ca := &CA{Cert: cert, Key: key, now: now, revoked: map[string]int{}, serial: 100,
		age: time.Minute, next: time.Hour, fetches: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(ca.serve))
	t.Cleanup(srv.Close)
	ca.URL = srv.URL
	return ca
}

// Intermediate starts a CA named cn, with ca's clock, whose certificate
// ca issues: a CA certificate that names ca's CRL.
func (ca *CA) Intermediate(t testing.TB, cn string) *CA {
	t.Helper()
	sub := New(t, cn, ca.now)
	sub.Cert = ca.Issue(t, sub.Key.Public(), Leaf{Subject: sub.Cert.Subject, CRL: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign, CA: true})
	return sub
}

// CrossSign is a cross-certificate of ca that by issues: ca's subject
// and key, valid from notBefore to notAfter (zero: ca's validity), with
// the subject key identifier ski (nil: ca's). A certificate ca issues
// then verifies through ca's own certificate and through this one.
func (ca *CA) CrossSign(t testing.TB, by *CA, notBefore, notAfter time.Time, ski []byte) *x509.Certificate {
	t.Helper()
	if notBefore.IsZero() {
		notBefore, notAfter = ca.Cert.NotBefore, ca.Cert.NotAfter
	}
	if ski == nil {
		ski = ca.Cert.SubjectKeyId
	}
	by.mu.Lock()
	by.serial++
	serial := by.serial
	by.mu.Unlock()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: ca.Cert.Subject, SubjectKeyId: ski,
		NotBefore: notBefore, NotAfter: notAfter, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign}
	return Create(t, tmpl, by.Cert, ca.Key.Public(), by.Key)
}

// Leaf describes a certificate Issue makes.
type Leaf struct {
	Subject             pkix.Name
	NotBefore, NotAfter time.Time // zero: an hour ago, a day from now
	OCSP, CRL           bool      // name the CA's responder, its CRL
	// CRLURLs, when set, are the CRL distribution points instead;
	// OCSPURLs the OCSP responders.
	CRLURLs, OCSPURLs []string
	KeyUsage          x509.KeyUsage
	ExtKeyUsage       []x509.ExtKeyUsage
	// CA asserts cA in basicConstraints.
	CA bool
	// ExtraExtensions are added as they are (x509.Certificate's; one
	// replaces the extension Issue would make with its OID: a critical
	// extended key usage, say).
	ExtraExtensions []pkix.Extension
}

// ClientCert issues a TLS client certificate (clientAuth, a new ECDSA
// P-256 key) for CN=cn,O=Example, valid from notBefore to notAfter (zero:
// Leaf's defaults); Leaf is set.
func (ca *CA) ClientCert(t testing.TB, cn string, notBefore, notAfter time.Time) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	cert := ca.Issue(t, key.Public(), Leaf{Subject: pkix.Name{CommonName: cn, Organization: []string{"Example"}},
		NotBefore: notBefore, NotAfter: notAfter, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	return tls.Certificate{Certificate: [][]byte{cert.Raw}, PrivateKey: key, Leaf: cert}
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
		IsCA: l.CA, BasicConstraintsValid: l.CA, ExtraExtensions: l.ExtraExtensions,
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
	if l.OCSPURLs != nil {
		tmpl.OCSPServer = l.OCSPURLs
	}
	return Create(t, tmpl, ca.Cert, pub, ca.Key)
}

// Create makes the certificate tmpl for pub, signed by key as parent
// (parent tmpl: self-signed), as x509.CreateCertificate does, and parses
// it; an error fails the test.
func Create(t testing.TB, tmpl, parent *x509.Certificate, pub crypto.PublicKey, key crypto.Signer) *x509.Certificate {
	t.Helper()
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
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

// SetCertIDOf makes the OCSP answers name other's certificate as the
// issuer in their CertID (its name and key hashes; the serial number
// asked about), still signed as before (nil: the CA's own, the default):
// a responder key shared by two CAs answering about the other's
// certificate of the same serial number.
func (ca *CA) SetCertIDOf(other *x509.Certificate) {
	ca.mu.Lock()
	defer ca.mu.Unlock()
	ca.certIDOf = other
}

// SetNextUpdate sets how far after now nextUpdate lies (default an hour).
func (ca *CA) SetNextUpdate(d time.Duration) {
	ca.mu.Lock()
	defer ca.mu.Unlock()
	ca.next = d
}

// SetThisUpdate sets how far before now the answers' thisUpdate lies
// (default a minute; negative: in the future).
func (ca *CA) SetThisUpdate(age time.Duration) {
	ca.mu.Lock()
	defer ca.mu.Unlock()
	ca.age = age
}

// OmitNextUpdate makes the OCSP responses carry no nextUpdate ("newer
// information is available all the time", RFC 6960 §4.2.2.1), and the
// CRL too (which RFC 5280 §5.1.2.5 forbids).
func (ca *CA) OmitNextUpdate(omit bool) {
	ca.mu.Lock()
	defer ca.mu.Unlock()
	ca.noNext = omit
}

// SetCRLNumber makes n the CRL's cRLNumber (0: its thisUpdate in Unix
// seconds, the default).
func (ca *CA) SetCRLNumber(n int64) {
	ca.mu.Lock()
	defer ca.mu.Unlock()
	ca.crlNumber = n
}

// SetCRLExtensions adds exts to the CRL (none: the CRL's own only).
func (ca *CA) SetCRLExtensions(exts ...pkix.Extension) {
	ca.mu.Lock()
	defer ca.mu.Unlock()
	ca.crlExts = exts
}

// SetCRLEntryExtensions adds exts to every entry of the CRL.
func (ca *CA) SetCRLEntryExtensions(exts ...pkix.Extension) {
	ca.mu.Lock()
	defer ca.mu.Unlock()
	ca.entryExts = exts
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
		tmpl := &x509.RevocationList{Number: big.NewInt(now.Add(-ca.age).Unix()), ThisUpdate: now.Add(-ca.age),
			NextUpdate: now.Add(ca.next), ExtraExtensions: ca.crlExts}
		if ca.crlNumber != 0 {
			tmpl.Number = big.NewInt(ca.crlNumber)
		}
		for s, reason := range ca.revoked {
			n, _ := new(big.Int).SetString(s, 10)
			tmpl.RevokedCertificateEntries = append(tmpl.RevokedCertificateEntries,
				x509.RevocationListEntry{SerialNumber: n, RevocationTime: now.Add(-time.Minute), ReasonCode: reason,
					ExtraExtensions: ca.entryExts})
		}
		signer := ca.signer()
		der, err := x509.CreateRevocationList(rand.Reader, tmpl, ca.Cert, signer)
		if err == nil && ca.noNext {
			der, err = withoutNextUpdate(der, signer)
		}
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
			ThisUpdate: now.Add(-ca.age), NextUpdate: now.Add(ca.next)}
		if ca.noNext {
			tmpl.NextUpdate = time.Time{}
		}
		if reason, ok := ca.revoked[req.SerialNumber.String()]; ok {
			tmpl.Status, tmpl.RevokedAt, tmpl.RevocationReason = ocsp.Revoked, now.Add(-time.Minute), reason
		}
		respCert, signer := ca.Cert, ca.signer()
		if ca.responder != nil {
			respCert, signer = ca.responder.cert, ca.responder.key
			tmpl.Certificate = respCert
		}
		issuer := ca.Cert
		if ca.certIDOf != nil {
			issuer = ca.certIDOf
		}
		der, err := ocsp.CreateResponse(issuer, respCert, tmpl, signer)
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

// Silent is a server on loopback that accepts TCP connections and never
// answers: an OCSP responder or CRL host that hangs until the client's
// time limit.
type Silent struct {
	// URL is its base URL (http://127.0.0.1:port).
	URL string

	mu       sync.Mutex
	conns    []net.Conn
	accepted int
}

// NewSilent starts a Silent server, which stops (closing every
// connection) when the test ends.
func NewSilent(t testing.TB) *Silent {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Silent{URL: "http://" + l.Addr().String()}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.accepted++
			s.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, c := range s.conns {
			c.Close()
		}
	})
	return s
}

// Accepted returns how many connections s accepted (each a request: none
// is ever answered, so none is reused).
func (s *Silent) Accepted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.accepted
}

// Redirect starts a server, stopped when the test ends, that answers
// every request with code (a 3xx) and Location to; it returns its URL.
func Redirect(t testing.TB, code int, to string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, to, code)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// IDP is an issuingDistributionPoint CRL extension (RFC 5280 §5.2.5).
type IDP struct {
	// URIs are the uniformResourceIdentifier names of its
	// distributionPoint's fullName (none: no distributionPoint).
	URIs []string
	// OnlyUser, OnlyCA, OnlyAttribute, Indirect: the BOOLEANs
	// onlyContainsUserCerts, onlyContainsCACerts,
	// onlyContainsAttributeCerts, indirectCRL.
	OnlyUser, OnlyCA, OnlyAttribute, Indirect bool
	// SomeReasons, when not empty, is onlySomeReasons.
	SomeReasons asn1.BitString
}

// DistributionPointName is DistributionPointName (RFC 5280 §4.2.1.13),
// tagged [0] in an issuingDistributionPoint (which the CHOICE makes
// explicit, the same bytes as this SEQUENCE implicitly tagged).
type DistributionPointName struct {
	FullName     []asn1.RawValue `asn1:"optional,tag:0"`
	RelativeName asn1.RawValue   `asn1:"optional,tag:1"`
}

// IssuingDistributionPoint is the ASN.1 of an issuingDistributionPoint
// for encoding/asn1 (RFC 5280 §5.2.5, implicit tags). OnlySomeReasons is
// kept whole, so that an empty BIT STRING is told from none.
type IssuingDistributionPoint struct {
	DistributionPoint          DistributionPointName `asn1:"optional,tag:0"`
	OnlyContainsUserCerts      bool                  `asn1:"optional,tag:1"`
	OnlyContainsCACerts        bool                  `asn1:"optional,tag:2"`
	OnlySomeReasons            asn1.RawValue         `asn1:"optional,tag:3"`
	IndirectCRL                bool                  `asn1:"optional,tag:4"`
	OnlyContainsAttributeCerts bool                  `asn1:"optional,tag:5"`
}

// Extension encodes p as a critical extension, as RFC 5280 §5.2.5 has it.
func (p IDP) Extension() pkix.Extension {
	v := IssuingDistributionPoint{
		OnlyContainsUserCerts: p.OnlyUser, OnlyContainsCACerts: p.OnlyCA,
		IndirectCRL: p.Indirect, OnlyContainsAttributeCerts: p.OnlyAttribute,
	}
	if p.SomeReasons.BitLength > 0 {
		der, err := asn1.MarshalWithParams(p.SomeReasons, "tag:3")
		if err != nil {
			panic(err)
		}
		v.OnlySomeReasons = asn1.RawValue{FullBytes: der}
	}
	for _, u := range p.URIs {
		v.DistributionPoint.FullName = append(v.DistributionPoint.FullName,
			asn1.RawValue{Class: asn1.ClassContextSpecific, Tag: 6, Bytes: []byte(u)})
	}
	der, err := asn1.Marshal(v)
	if err != nil {
		panic(err) // only a programming error: the types above always encode
	}
	return pkix.Extension{Id: asn1.ObjectIdentifier{2, 5, 29, 28}, Critical: true, Value: der}
}

// DeltaCRLIndicator is the critical deltaCRLIndicator extension of a
// delta CRL whose base is the CRL numbered base (RFC 5280 §5.2.4).
func DeltaCRLIndicator(base int64) pkix.Extension {
	der, err := asn1.Marshal(big.NewInt(base))
	if err != nil {
		panic(err)
	}
	return pkix.Extension{Id: asn1.ObjectIdentifier{2, 5, 29, 27}, Critical: true, Value: der}
}

// withoutNextUpdate re-signs the CRL der without its nextUpdate, which
// x509.CreateRevocationList always writes (RFC 5280 §5.1: TBSCertList is
// version, signature, issuer, thisUpdate, nextUpdate OPTIONAL, then the
// entries and extensions).
func withoutNextUpdate(der []byte, key crypto.Signer) ([]byte, error) {
	in := cryptobyte.String(der)
	var list, tbs, sigAlg, version, alg, issuer, this, next cryptobyte.String
	if !in.ReadASN1(&list, cbasn1.SEQUENCE) || !list.ReadASN1(&tbs, cbasn1.SEQUENCE) ||
		!list.ReadASN1Element(&sigAlg, cbasn1.SEQUENCE) || !tbs.ReadASN1Element(&version, cbasn1.INTEGER) ||
		!tbs.ReadASN1Element(&alg, cbasn1.SEQUENCE) || !tbs.ReadASN1Element(&issuer, cbasn1.SEQUENCE) ||
		!tbs.ReadAnyASN1Element(&this, nil) || !tbs.ReadAnyASN1Element(&next, nil) {
		return nil, errors.New("certstatustest: cannot read the CRL it made")
	}
	b := cryptobyte.NewBuilder(nil)
	b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
		for _, part := range [][]byte{version, alg, issuer, this, tbs} {
			b.AddBytes(part)
		}
	})
	newTBS, err := b.Bytes()
	if err != nil {
		return nil, err
	}
	digest := sha256.Sum256(newTBS)
	sig, err := key.Sign(rand.Reader, digest[:], crypto.SHA256)
	if err != nil {
		return nil, err
	}
	b = cryptobyte.NewBuilder(nil)
	b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
		b.AddBytes(newTBS)
		b.AddBytes(sigAlg)
		b.AddASN1BitString(sig)
	})
	return b.Bytes()
}
