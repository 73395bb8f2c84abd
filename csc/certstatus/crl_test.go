package certstatus_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"testing"
	"time"

	"golang.org/x/crypto/ocsp"

	"github.com/signd/signd/csc/certstatus"
	"github.com/signd/signd/csc/certstatus/certstatustest"
)

var (
	oidInvalidityDate = asn1.ObjectIdentifier{2, 5, 29, 24}
	oidCertIssuer     = asn1.ObjectIdentifier{2, 5, 29, 29}
	oidUnknown        = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 99999, 7, 1}
)

// TestCRLScope: a CRL counts for a certificate only when it is a
// complete CRL whose scope includes it (RFC 5280 §5.2.4, §5.2.5, §6.3.3)
// and has no critical extension, of its own or of an entry, that is not
// processed; otherwise the CRL is no answer and the status is not
// current (hard fail). The leaf is revoked in every row: a CRL that is
// taken says so.
func TestCRLScope(t *testing.T) {
	other := "http://crl.example/partition-2.crl"
	idp := func(p certstatustest.IDP) func(ca *certstatustest.CA) {
		return func(ca *certstatustest.CA) { ca.SetCRLExtensions(p.Extension()) }
	}
	tests := []struct {
		name  string
		setup func(ca *certstatustest.CA)
		taken bool
	}{
		{name: "no extension of its own", setup: func(*certstatustest.CA) {}, taken: true},
		{name: "IDP naming the certificate's distribution point", taken: true,
			setup: func(ca *certstatustest.CA) { idp(certstatustest.IDP{URIs: []string{ca.URL + "/crl"}})(ca) }},
		{name: "IDP naming another distribution point and the certificate's", taken: true,
			setup: func(ca *certstatustest.CA) { idp(certstatustest.IDP{URIs: []string{other, ca.URL + "/crl"}})(ca) }},
		{name: "IDP for end-entity certificates, no distribution point", taken: true,
			setup: idp(certstatustest.IDP{OnlyUser: true})},
		{name: "IDP naming another distribution point", setup: idp(certstatustest.IDP{URIs: []string{other}})},
		{name: "IDP naming the distribution point spelt otherwise",
			setup: func(ca *certstatustest.CA) { idp(certstatustest.IDP{URIs: []string{ca.URL + "/crl/"}})(ca) }},
		{name: "IDP not marked critical, another distribution point",
			setup: func(ca *certstatustest.CA) {
				ext := certstatustest.IDP{URIs: []string{other}}.Extension()
				ext.Critical = false
				ca.SetCRLExtensions(ext)
			}},
		{name: "IDP for CA certificates only", setup: idp(certstatustest.IDP{OnlyCA: true})},
		{name: "IDP for attribute certificates only", setup: idp(certstatustest.IDP{OnlyAttribute: true})},
		{name: "IDP with onlySomeReasons",
			setup: func(ca *certstatustest.CA) {
				idp(certstatustest.IDP{URIs: []string{ca.URL + "/crl"}, SomeReasons: asn1.BitString{Bytes: []byte{0x40}, BitLength: 2}})(ca)
			}},
		{name: "indirect CRL",
			setup: func(ca *certstatustest.CA) {
				idp(certstatustest.IDP{URIs: []string{ca.URL + "/crl"}, Indirect: true})(ca)
			}},
		{name: "IDP given twice",
			setup: func(ca *certstatustest.CA) {
				ext := certstatustest.IDP{URIs: []string{ca.URL + "/crl"}}.Extension()
				ca.SetCRLExtensions(ext, ext)
			}},
		{name: "malformed IDP",
			setup: func(ca *certstatustest.CA) {
				ca.SetCRLExtensions(pkix.Extension{Id: asn1.ObjectIdentifier{2, 5, 29, 28}, Critical: true, Value: []byte{0x30, 0x00}})
			}},
		{name: "delta CRL", setup: func(ca *certstatustest.CA) { ca.SetCRLExtensions(certstatustest.DeltaCRLIndicator(1)) }},
		{name: "unknown critical extension",
			setup: func(ca *certstatustest.CA) {
				ca.SetCRLExtensions(pkix.Extension{Id: oidUnknown, Critical: true, Value: []byte{0x05, 0x00}})
			}},
		{name: "unknown extension, not critical", taken: true,
			setup: func(ca *certstatustest.CA) {
				ca.SetCRLExtensions(pkix.Extension{Id: oidUnknown, Value: []byte{0x05, 0x00}})
			}},
		{name: "unknown critical entry extension",
			setup: func(ca *certstatustest.CA) {
				ca.SetCRLEntryExtensions(pkix.Extension{Id: oidUnknown, Critical: true, Value: []byte{0x05, 0x00}})
			}},
		{name: "certificateIssuer entry extension (indirect CRLs)",
			setup: func(ca *certstatustest.CA) {
				ca.SetCRLEntryExtensions(pkix.Extension{Id: oidCertIssuer, Critical: true, Value: []byte{0x30, 0x00}})
			}},
		{name: "invalidityDate entry extension", taken: true,
			setup: func(ca *certstatustest.CA) {
				der, _ := asn1.Marshal(time.Now().Add(-time.Hour).UTC())
				ca.SetCRLEntryExtensions(pkix.Extension{Id: oidInvalidityDate, Value: der})
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			leaf, chain := f.leaf(t, false, true)
			f.ca.Revoke(leaf.SerialNumber, ocsp.KeyCompromise)
			tt.setup(f.ca)
			f.refresh(chain)
			s, cur := f.checker.Status(chain)
			if tt.taken && (s != certstatus.Revoked || !cur) {
				t.Fatalf("Status = %s, current %v; want revoked, current (the CRL counts)", s, cur)
			}
			if !tt.taken && cur {
				t.Fatalf("Status = %s, current; want not current (the CRL does not count)", s)
			}
		})
	}
}

// TestCRLScopeOfCA: a CRL for CA certificates only (an ARL) counts for an
// intermediate CA of the chain, and not for the leaf.
func TestCRLScopeOfCA(t *testing.T) {
	f := newFixture(t)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	inter := f.ca.Issue(t, key.Public(), certstatustest.Leaf{Subject: pkix.Name{CommonName: "Intermediate"}, CRL: true,
		KeyUsage: x509.KeyUsageCertSign, CA: true})
	f.ca.SetCRLExtensions(certstatustest.IDP{OnlyCA: true}.Extension())
	f.ca.Revoke(inter.SerialNumber, ocsp.CACompromise)
	_, short := f.leaf(t, false, true) // names the CRL too: not covered
	f.refresh(short)
	f.wantStatus(t, "leaf naming the CA CRL", short, certstatus.Valid, false)
	leaf, _ := f.leaf(t, false, false)
	full := [][]byte{leaf.Raw, inter.Raw, f.ca.Cert.Raw}
	f.refresh(full)
	f.wantStatus(t, "intermediate on the CA CRL", full, certstatus.Revoked, true)
}

// TestCRLAttacks: after a revocation, a CRL that is not a complete CRL
// for the certificate — signed by the same CA, current, and without the
// certificate — does not make it valid again: the revocation stands, and
// once its answer is past nextUpdate the status is not current.
func TestCRLAttacks(t *testing.T) {
	tests := []struct {
		name string
		ext  func(ca *certstatustest.CA) pkix.Extension
	}{
		{"partition CRL of another distribution point", func(*certstatustest.CA) pkix.Extension {
			return certstatustest.IDP{URIs: []string{"http://crl.example/partition-2.crl"}}.Extension()
		}},
		{"delta CRL", func(*certstatustest.CA) pkix.Extension { return certstatustest.DeltaCRLIndicator(1) }},
		{"unknown critical extension", func(*certstatustest.CA) pkix.Extension {
			return pkix.Extension{Id: oidUnknown, Critical: true, Value: []byte{0x05, 0x00}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			leaf, chain := f.leaf(t, false, true)
			f.ca.Revoke(leaf.SerialNumber, ocsp.KeyCompromise)
			f.refresh(chain)
			f.wantStatus(t, "revoked", chain, certstatus.Revoked, true)
			f.clk.Add(10 * time.Minute)
			f.ca.SetCRLExtensions(tt.ext(f.ca))
			f.ca.Unrevoke(leaf.SerialNumber)
			f.refresh(chain)
			f.wantStatus(t, "after the "+tt.name+" (the last answer)", chain, certstatus.Revoked, true)
			f.clk.Add(time.Hour) // past the revoked CRL's nextUpdate
			f.refresh(chain)
			f.wantStatus(t, "past nextUpdate", chain, certstatus.Revoked, false)
		})
	}
}

// TestCRLNeverReplacedByOlder: a CRL older than the last one taken (an
// earlier thisUpdate, or a lower cRLNumber) is no answer: a hold it does
// not list stands.
func TestCRLNeverReplacedByOlder(t *testing.T) {
	for _, tt := range []struct {
		name  string
		older func(ca *certstatustest.CA)
	}{
		{"earlier thisUpdate", func(ca *certstatustest.CA) { ca.SetThisUpdate(20 * time.Minute) }},
		{"lower cRLNumber", func(ca *certstatustest.CA) { ca.SetCRLNumber(1) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			leaf, chain := f.leaf(t, false, true)
			f.ca.SetCRLNumber(1000)
			f.ca.Revoke(leaf.SerialNumber, ocsp.CertificateHold)
			f.refresh(chain)
			f.clk.Add(10 * time.Minute)
			f.ca.SetCRLNumber(0)
			f.ca.Unrevoke(leaf.SerialNumber)
			tt.older(f.ca)
			f.refresh(chain)
			f.wantStatus(t, "older CRL", chain, certstatus.Suspended, true)
			// A newer CRL lifts the hold.
			f.ca.SetThisUpdate(time.Minute)
			f.ca.SetCRLNumber(2000)
			f.refresh(chain)
			f.wantStatus(t, "newer CRL", chain, certstatus.Valid, true)
		})
	}
}

// TestCRLWithoutNextUpdate: a CRL must say when it is superseded (RFC
// 5280 §5.1.2.5); one that does not could be served for ever after a
// revocation, and is no answer. A CRL that says so counts.
func TestCRLWithoutNextUpdate(t *testing.T) {
	f := newFixture(t)
	leaf, chain := f.leaf(t, false, true)
	f.ca.OmitNextUpdate(true)
	f.refresh(chain)
	if s, cur := f.checker.Status(chain); cur {
		t.Fatalf("Status = %s, current; want not current", s)
	}
	f.ca.OmitNextUpdate(false)
	f.ca.Revoke(leaf.SerialNumber, ocsp.KeyCompromise)
	f.refresh(chain)
	f.wantStatus(t, "with nextUpdate", chain, certstatus.Revoked, true)
}
