package enroll

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"math/big"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// dnNames maps the attribute types ParseDN accepts back to one of their
// names, for the round trip.
var dnNames = func() map[string]string {
	out := map[string]string{}
	for name, oid := range dnAttrs {
		if cur, ok := out[oid.String()]; !ok || name < cur {
			out[oid.String()] = name
		}
	}
	return out
}()

// FuzzParseDN parses CSR subjects as `signd credential create --subject`
// and the admin API take them (RFC 4514 strings). An accepted name keeps
// every attribute given, in order, with its unescaped value; it is DER
// encodable as a certificate subject and decodes back to the same
// attributes; and written back with escapeDNValue it parses to the same
// name (round trip).
func FuzzParseDN(f *testing.F) {
	for _, s := range []string{
		"CN=Alice Jansen,O=Example B.V.,C=NL", " CN = Alice , O = Ex ", "cn=Alice,o=Ex", `CN=Jansen\, Alice,O=Ex`,
		"GIVENNAME=Alice,SURNAME=Jansen,CN=Alice Jansen,SERIALNUMBER=PNONL-123456789,TITLE=Dr",
		"CN=alice,OU=Signing,OU=Legal,L=Utrecht,ST=Utrecht,STREET=Domplein 1,POSTALCODE=3512 JE,SN=J",
		"CN=" + escapeDNValue(`a+b="c"\d<e>;f`), "CN=A+O=B", `CN=A\`, "CN=", "CN=A,C=nl", "XX=1", "CN=A\x00B",
		"CN=a,CN=b", "CN=\\ lead", "CN=#hash", "CN=Ali\xffce",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		name, err := ParseDN(s)
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("%q: empty error", s)
			}
			return
		}
		if len(s) > maxDNLen || strings.TrimSpace(s) == "" {
			t.Fatalf("%q accepted", s)
		}
		// Every attribute given is kept, in order.
		rdns, _ := splitUnescaped(s, ',')
		if len(name.Names) != len(rdns) {
			t.Fatalf("%q: %d attributes given, %d kept: %v", s, len(rdns), len(name.Names), name.Names)
		}
		seq := name.ToRDNSequence()
		if n := len(seq2names(seq)); n != len(rdns) {
			t.Fatalf("%q: %d attributes given, the subject encodes %d: %v", s, len(rdns), n, seq)
		}
		// DER round trip, as x509.CreateCertificateRequest encodes it.
		der, err := asn1.Marshal(seq)
		if err != nil {
			t.Fatalf("%q accepted, but the subject does not encode: %v", s, err)
		}
		var back pkix.RDNSequence
		if rest, err := asn1.Unmarshal(der, &back); err != nil || len(rest) != 0 {
			t.Fatalf("%q: subject DER does not decode: %v", s, err)
		}
		var again pkix.Name
		again.FillFromRDNSequence(&back)
		if !reflect.DeepEqual(attrs(again.Names), attrs(seq2names(seq))) {
			t.Fatalf("%q: DER round trip %v, want %v", s, again.Names, seq)
		}
		// String round trip through escapeDNValue.
		parts := make([]string, len(name.Names))
		for i, atv := range name.Names {
			v, _ := atv.Value.(string)
			if v == "" || strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
				t.Fatalf("%q: value %q", s, v)
			}
			if atv.Type.Equal(dnAttrs["C"]) && (len(v) != 2 || v[0] < 'A' || v[0] > 'Z' || v[1] < 'A' || v[1] > 'Z') {
				t.Fatalf("%q: country %q is not two upper-case letters (ISO 3166-1 alpha-2)", s, v)
			}
			parts[i] = dnNames[atv.Type.String()] + "=" + escapeDNValue(v)
		}
		written := strings.Join(parts, ",")
		reparsed, err := ParseDN(written)
		if err != nil {
			t.Fatalf("%q written back as %q: %v", s, written, err)
		}
		if !reflect.DeepEqual(attrs(reparsed.Names), attrs(name.Names)) {
			t.Fatalf("%q written back as %q parses to %v, want %v", s, written, reparsed.Names, name.Names)
		}
	})
}

func seq2names(seq pkix.RDNSequence) []pkix.AttributeTypeAndValue {
	var out []pkix.AttributeTypeAndValue
	for _, rdn := range seq {
		out = append(out, rdn...)
	}
	return out
}

// attrs is a name's attributes as "oid=value", sorted (the encoding puts
// the standard attributes in a fixed order).
func attrs(names []pkix.AttributeTypeAndValue) []string {
	out := make([]string, len(names))
	for i, atv := range names {
		out[i] = atv.Type.String() + "=" + atv.Value.(string)
	}
	slices.Sort(out)
	return out
}

// fuzzNow is the time chains are verified at; the seed chains are valid
// from 2020 to 2120.
var fuzzNow = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// seedChains issues real chains as a CA would for a credential: an RSA
// leaf under an intermediate under a root, an ECDSA pair, and a lone
// self-signed certificate. Leaf first, root last.
func seedChains(f *testing.F) [][]*x509.Certificate {
	f.Helper()
	nb, na := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2120, 1, 1, 0, 0, 0, 0, time.UTC)
	issue := func(subject string, pub crypto.PublicKey, parent *x509.Certificate, parentKey crypto.Signer, ca bool) *x509.Certificate {
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(int64(len(subject))), Subject: pkix.Name{CommonName: subject, Organization: []string{"Example B.V."}, Country: []string{"NL"}},
			NotBefore: nb, NotAfter: na, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageContentCommitment,
		}
		if ca {
			tmpl.IsCA, tmpl.BasicConstraintsValid, tmpl.KeyUsage = true, true, x509.KeyUsageCertSign
		}
		if parent == nil {
			parent = tmpl
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, parentKey)
		if err != nil {
			f.Fatal(err)
		}
		c, _ := x509.ParseCertificate(der)
		return c
	}
	rootKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	interKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leafKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		f.Fatal(err)
	}
	root := issue("Example Root CA", rootKey.Public(), nil, rootKey, true)
	inter := issue("Example Signing CA", interKey.Public(), root, rootKey, true)
	leaf := issue("Alice Jansen", leafKey.Public(), inter, interKey, false)
	ecLeaf := issue("Bob", interKey.Public(), root, rootKey, false)
	return [][]*x509.Certificate{{leaf, inter, root}, {ecLeaf, root}, {root}, {leaf, root}, {inter, leaf, root}}
}

func chainPEM(chain []*x509.Certificate) []byte {
	var b bytes.Buffer
	for _, c := range chain {
		_ = pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
	}
	return b.Bytes()
}

// checkVerified asserts what VerifyChain's acceptance means, independently
// of how it decides: each certificate is issued by the next (issuer name
// and signature), the last is a self-signed root, and all are valid now.
func checkVerified(t *testing.T, chain []*x509.Certificate, now time.Time) {
	t.Helper()
	for i, c := range chain {
		if now.Before(c.NotBefore) || now.After(c.NotAfter) {
			t.Fatalf("certificate %d accepted outside its validity %s–%s", i+1, c.NotBefore, c.NotAfter)
		}
		issuer := c
		if i+1 < len(chain) {
			issuer = chain[i+1]
		}
		if !bytes.Equal(c.RawIssuer, issuer.RawSubject) {
			t.Fatalf("certificate %d is not issued by the next one's subject", i+1)
		}
		if err := issuer.CheckSignature(c.SignatureAlgorithm, c.RawTBSCertificate, c.Signature); err != nil {
			t.Fatalf("certificate %d accepted with a bad signature: %v", i+1, err)
		}
	}
}

// FuzzParseChainPEM parses certificate chains as `signd credential import`
// reads them. An accepted chain has 1 to 10 certificates, each exactly a
// PEM block's bytes, and written back as PEM it parses to the same
// certificates; verifying it never panics, and a chain that verifies is
// ordered, signed and valid (checkVerified).
func FuzzParseChainPEM(f *testing.F) {
	for _, chain := range seedChains(f) {
		f.Add(chainPEM(chain))
	}
	f.Add([]byte("-----BEGIN CERTIFICATE-----\nMAA=\n-----END CERTIFICATE-----\n"))
	f.Add([]byte("-----BEGIN PRIVATE KEY-----\nMAA=\n-----END PRIVATE KEY-----\n"))
	f.Add([]byte("junk"))
	f.Fuzz(func(t *testing.T, data []byte) {
		chain, err := ParseChainPEM(data)
		if err != nil {
			if chain != nil || err.Error() == "" {
				t.Fatalf("refusal %v with %d certificates", err, len(chain))
			}
			return
		}
		if len(chain) == 0 || len(chain) > MaxChainCerts || len(data) > MaxChainPEM {
			t.Fatalf("%d certificates from %d bytes accepted", len(chain), len(data))
		}
		again, err := ParseChainPEM(chainPEM(chain))
		if err != nil || len(again) != len(chain) {
			t.Fatalf("written back: %d certificates, %v", len(again), err)
		}
		for i := range chain {
			if !bytes.Equal(again[i].Raw, chain[i].Raw) {
				t.Fatalf("certificate %d differs after the round trip", i+1)
			}
		}
		if VerifyChain(chain, fuzzNow) == nil {
			checkVerified(t, chain, fuzzNow)
		}
	})
}

// FuzzVerifyChain mutates the DER of up to three certificates (leaf,
// intermediate, root) and verifies what parses: never a panic, and a
// chain that verifies is ordered, signed and valid (checkVerified).
func FuzzVerifyChain(f *testing.F) {
	for _, chain := range seedChains(f) {
		ders := [3][]byte{}
		for i, c := range chain[:min(3, len(chain))] {
			ders[i] = c.Raw
		}
		f.Add(ders[0], ders[1], ders[2], int64(0))
		f.Add(ders[0], ders[1], ders[2], int64(100*365*24*3600))
	}
	f.Fuzz(func(t *testing.T, a, b, c []byte, offset int64) {
		var chain []*x509.Certificate
		for _, der := range [][]byte{a, b, c} {
			if len(der) == 0 {
				break
			}
			cert, err := x509.ParseCertificate(der)
			if err != nil {
				return
			}
			chain = append(chain, cert)
		}
		if len(chain) == 0 {
			return
		}
		now := fuzzNow.Add(time.Duration(offset%(200*365*24*3600)) * time.Second)
		if err := VerifyChain(chain, now); err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		checkVerified(t, chain, now)
	})
}
