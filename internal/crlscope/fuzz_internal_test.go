package crlscope

import (
	"crypto/x509"
	"encoding/asn1"
	"reflect"
	"slices"
	"testing"

	"github.com/signd/signd/csc/certstatus/certstatustest"
)

// FuzzParseIDP parses the value of a CRL's issuingDistributionPoint
// extension (RFC 5280 §5.2.5), which a CA's CRL carries signed but which
// the checker reads before trusting anything in it. An accepted value is
// one DER SEQUENCE that encoding/asn1 reads the same (names, URIs, flags,
// onlySomeReasons a valid BIT STRING); written back by encoding/asn1 it
// parses to the same; and covers accepts a certificate exactly when no
// flag narrows the CRL away from it and the distribution point, if
// named, is one of the certificate's.
func FuzzParseIDP(f *testing.F) {
	dp := "http://ca.example/ca.crl"
	for _, p := range []certstatustest.IDP{
		{URIs: []string{dp}}, {URIs: []string{"http://crl.example/2.crl", dp}}, {OnlyUser: true}, {OnlyCA: true},
		{OnlyAttribute: true}, {URIs: []string{dp}, Indirect: true},
		{URIs: []string{dp}, SomeReasons: asn1.BitString{Bytes: []byte{0x60}, BitLength: 3}},
		{OnlyUser: true, OnlyCA: true},
	} {
		f.Add(p.Extension().Value, dp, false)
	}
	for _, der := range [][]byte{
		{0x30, 0x00},                                                         // empty: forbidden
		{0x30, 0x03, 0x81, 0x01, 0x00},                                       // explicit DEFAULT FALSE
		{0x30, 0x03, 0x81, 0x01, 0x01},                                       // BER TRUE
		{0x30, 0x03, 0x82, 0x01, 0xff},                                       // onlyContainsCACerts
		{0x30, 0x06, 0x81, 0x01, 0xff, 0x82, 0x01, 0xff},                     // two onlyContains
		{0x30, 0x03, 0x84, 0x01, 0xff, 0x00},                                 // trailing byte
		{0x30, 0x06, 0x84, 0x01, 0xff, 0x81, 0x01, 0xff},                     // out of order
		{0x30, 0x02, 0x83, 0x00},                                             // empty BIT STRING content
		{0x30, 0x04, 0x83, 0x02, 0x07, 0x80},                                 // padding bits set
		{0x30, 0x04, 0xa0, 0x02, 0xa0, 0x00},                                 // fullName without names
		{0x30, 0x06, 0xa0, 0x04, 0xa1, 0x02, 0x31, 0x00},                     // nameRelativeToCRLIssuer
		{0x30, 0x08, 0xa0, 0x06, 0xa0, 0x02, 0x86, 0x00, 0xa1, 0x00},         // both alternatives
		{0x30, 0x07, 0xa0, 0x05, 0xa0, 0x03, 0x86, 0x01, 0xe9},               // a URI that is not ASCII
		{0x30, 0x0a, 0xa0, 0x08, 0xa0, 0x06, 0x82, 0x04, 'c', 'a', '.', 'x'}, // a dNSName only
		{0x30, 0x80, 0x81, 0x01, 0xff, 0x00, 0x00},                           // indefinite length
	} {
		f.Add(der, dp, false)
		f.Add(der, dp, true)
	}
	f.Fuzz(func(t *testing.T, der []byte, certDP string, isCA bool) {
		p, err := parseIDP(der)
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("%x: empty error", der)
			}
			return
		}
		var ref certstatustest.IssuingDistributionPoint
		rest, err := asn1.Unmarshal(der, &ref)
		if err != nil || len(rest) != 0 {
			t.Fatalf("%x accepted; encoding/asn1: %v, %d bytes left", der, err, len(rest))
		}
		want := fromReference(t, ref)
		if !reflect.DeepEqual(p, want) {
			t.Fatalf("%x: parsed %+v, encoding/asn1 reads %+v", der, p, want)
		}
		again, err := asn1.Marshal(ref)
		if err != nil {
			t.Fatalf("%x: encoding/asn1 cannot write back what it read: %v", der, err)
		}
		if p2, err := parseIDP(again); err != nil || !reflect.DeepEqual(p2, p) {
			t.Fatalf("%x written back as %x: %+v, %v; want %+v", der, again, p2, err, p)
		}
		if p.onlyUser && p.onlyCA || p.onlyUser && p.onlyAttr || p.onlyCA && p.onlyAttr {
			t.Fatalf("%x: more than one onlyContains* accepted", der)
		}
		cert := &x509.Certificate{CRLDistributionPoints: []string{certDP}, IsCA: isCA, BasicConstraintsValid: isCA}
		wantCovers := !p.indirect && !p.reasons && !p.onlyAttr && !(p.onlyUser && isCA) && !(p.onlyCA && !isCA) &&
			!p.relative && (!p.hasName || slices.Contains(p.uris, certDP))
		if err := p.covers(cert); (err == nil) != wantCovers {
			t.Fatalf("%x (%+v) for %q, CA %v: covers %v, want %v", der, p, certDP, isCA, err, wantCovers)
		}
	})
}

// fromReference is what parseIDP should read, from encoding/asn1's
// reading of the same bytes.
func fromReference(t *testing.T, ref certstatustest.IssuingDistributionPoint) idp {
	t.Helper()
	dp := ref.DistributionPoint
	p := idp{
		relative: len(dp.RelativeName.FullBytes) > 0, reasons: len(ref.OnlySomeReasons.FullBytes) > 0,
		onlyUser: ref.OnlyContainsUserCerts, onlyCA: ref.OnlyContainsCACerts,
		indirect: ref.IndirectCRL, onlyAttr: ref.OnlyContainsAttributeCerts,
	}
	p.hasName = p.relative || dp.FullName != nil
	for _, n := range dp.FullName {
		if n.Class == asn1.ClassContextSpecific && n.Tag == 6 && !n.IsCompound {
			p.uris = append(p.uris, string(n.Bytes))
		}
	}
	if p.reasons {
		var bits asn1.BitString
		if _, err := asn1.UnmarshalWithParams(ref.OnlySomeReasons.FullBytes, &bits, "tag:3"); err != nil {
			t.Fatalf("onlySomeReasons accepted, encoding/asn1: %v", err)
		}
	}
	return p
}
