package clientca_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/signd/signd/config/clientca"
	"github.com/signd/signd/csc/certstatus/certstatustest"
)

// writeCRL writes the CRL tmpl that ca signs (DER) and returns its path.
func writeCRL(t *testing.T, ca *certstatustest.CA, tmpl *x509.RevocationList) string {
	t.Helper()
	return writeCRLBy(t, ca.Cert, ca.Key, tmpl)
}

// writeCRLBy writes the CRL tmpl that key signs as cert (DER) and
// returns its path.
func writeCRLBy(t *testing.T, cert *x509.Certificate, key crypto.Signer, tmpl *x509.RevocationList) string {
	t.Helper()
	der, err := x509.CreateRevocationList(rand.Reader, tmpl, cert, key)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "crl.der")
	if err := os.WriteFile(path, der, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestReadCRLComplete: admin.api_client_crl must be the full CRL of the
// CA that issues the client certificates (RFC 5280 §5.2.4, §5.2.5,
// §6.3.3), as on the signing path: a delta CRL, a partition (CA or
// attribute certificates only, some reasons), an indirect CRL or one
// with an unknown critical extension would, in force, drop every
// revocation the full CRL lists. A CRL whose thisUpdate is in the
// future is refused too: every correct CRL would look older at reload.
func TestReadCRLComplete(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	ca := certstatustest.New(t, "admin API CA", func() time.Time { return now })
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	unknown := asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 99999, 7, 1}
	tests := []struct {
		name string
		exts []pkix.Extension
		this time.Time // zero: an hour ago
		err  string    // "" = read
	}{
		{name: "full CRL"},
		{name: "full CRL, scoped to its distribution point",
			exts: []pkix.Extension{certstatustest.IDP{URIs: []string{"http://ca.example/ca.crl"}}.Extension()}},
		{name: "end-entity certificates only", exts: []pkix.Extension{certstatustest.IDP{OnlyUser: true}.Extension()}},
		{name: "unknown extension, not critical", exts: []pkix.Extension{{Id: unknown, Value: []byte{0x05, 0x00}}}},
		{name: "thisUpdate within the skew", this: now.Add(4 * time.Minute)},
		{name: "delta CRL", exts: []pkix.Extension{certstatustest.DeltaCRLIndicator(1)},
			err: "a delta CRL (deltaCRLIndicator) cannot stand alone; give the full CRL"},
		{name: "CA certificates only", exts: []pkix.Extension{certstatustest.IDP{OnlyCA: true}.Extension()},
			err: "issuingDistributionPoint: the CRL covers only CA certificates (onlyContainsCACerts), not the client certificates; give the full CRL"},
		{name: "attribute certificates only", exts: []pkix.Extension{certstatustest.IDP{OnlyAttribute: true}.Extension()},
			err: "issuingDistributionPoint: the CRL covers only attribute certificates"},
		{name: "some reasons", exts: []pkix.Extension{certstatustest.IDP{SomeReasons: asn1.BitString{Bytes: []byte{0x40}, BitLength: 2}}.Extension()},
			err: "issuingDistributionPoint: the CRL covers only some reasons (onlySomeReasons)"},
		{name: "indirect", exts: []pkix.Extension{certstatustest.IDP{URIs: []string{"http://ca.example/ca.crl"}, Indirect: true}.Extension()},
			err: "issuingDistributionPoint: an indirect CRL (indirectCRL) is not used"},
		{name: "malformed issuingDistributionPoint", exts: []pkix.Extension{{Id: asn1.ObjectIdentifier{2, 5, 29, 28}, Critical: true, Value: []byte{0x30, 0x00}}},
			err: "issuingDistributionPoint: no field but defaults"},
		{name: "unknown critical extension", exts: []pkix.Extension{{Id: unknown, Critical: true, Value: []byte{0x05, 0x00}}},
			err: "unknown critical CRL extension 1.3.6.1.4.1.99999.7.1"},
		{name: "thisUpdate in the future", this: now.Add(10 * time.Minute),
			err: "its thisUpdate " + now.Add(10*time.Minute).UTC().Format(time.RFC3339) + " is in the future"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			this := tt.this
			if this.IsZero() {
				this = now.Add(-time.Hour)
			}
			path := writeCRL(t, ca, &x509.RevocationList{Number: big.NewInt(1), ThisUpdate: this, NextUpdate: now.Add(time.Hour), ExtraExtensions: tt.exts})
			crl, err := clientca.ReadCRL(path, []*x509.Certificate{ca.Cert}, now)
			switch {
			case tt.err == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.err == "" && crl == nil:
				t.Fatal("no CRL and no error")
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Fatalf("error %v, want …%s…", err, tt.err)
			}
			if msg := clientca.CRLFile(path, caFile); !strings.Contains(msg, tt.err) || (msg == "") != (tt.err == "") {
				t.Fatalf("CRLFile (the config check): %q, want …%s…", msg, tt.err)
			}
		})
	}
}

// TestReplacesNumberAndSigner: a reload's CRL must come after the CRL in
// force: an equal cRLNumber with another content is refused (RFC 5280
// §5.2.3: a CA numbers each CRL anew), and so is a CRL the CA re-keyed
// under the same name signed, even when its authority key identifier is
// the old one's: the issuer compared is the certificate of
// admin.api_client_ca that verified the CRL.
func TestReplacesNumberAndSigner(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	ca := certstatustest.New(t, "admin API CA", func() time.Time { return now })
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: ca.Cert.Subject, SubjectKeyId: ca.Cert.SubjectKeyId,
		NotBefore: ca.Cert.NotBefore, NotAfter: ca.Cert.NotAfter,
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign}
	rekeyed := certstatustest.Create(t, tmpl, tmpl, key.Public(), key)
	cas := []*x509.Certificate{ca.Cert, rekeyed}
	crl := func(number int64, this time.Time) *x509.RevocationList {
		t.Helper()
		return &x509.RevocationList{Number: big.NewInt(number), ThisUpdate: this, NextUpdate: now.Add(time.Hour)}
	}
	inForce := writeCRL(t, ca, crl(5, now.Add(-time.Hour)))
	tests := []struct {
		name string
		next string
		err  string // "" = may replace
	}{
		{"the same CRL again", inForce, ""},
		{"a newer CRL", writeCRL(t, ca, crl(6, now)), ""},
		{"the same cRLNumber, another content", writeCRL(t, ca, crl(5, now)),
			"the CRL's cRLNumber 5 is that of the CRL in force, with another content"},
		{"the CA re-keyed under the same name and key identifier", writeCRLBy(t, rekeyed, key, crl(6, now)),
			"a change of issuer needs a restart"},
	}
	old, err := clientca.ReadCRL(inForce, cas, now)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next, err := clientca.ReadCRL(tt.next, cas, now)
			if err != nil {
				t.Fatalf("ReadCRL: %v", err)
			}
			err = clientca.Replaces(old, next, cas, now)
			switch {
			case tt.err == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Fatalf("error %v, want …%s…", err, tt.err)
			}
		})
	}
}

// TestRollback: a start refuses a CRL that goes back from the CRL last
// in force as the audit log records it (Record: number, digest,
// thisUpdate, issuer name), by Replaces' rules; with no record, with the
// CRL removed or under another issuer name, it is not compared.
func TestRollback(t *testing.T) {
	now := time.Date(2030, 5, 1, 12, 0, 0, 0, time.UTC)
	issuer := pkix.Name{CommonName: "admin API CA", Organization: []string{"Example"}}
	crl := func(number int64, this time.Time, raw string) *x509.RevocationList {
		c := &x509.RevocationList{Issuer: issuer, ThisUpdate: this, Raw: []byte(raw)}
		if number > 0 {
			c.Number = big.NewInt(number)
		}
		return c
	}
	inForce := clientca.RecordOf(crl(7, now, "crl 7"))
	unnumbered := clientca.RecordOf(crl(0, now, "crl of now"))
	unnamed := inForce
	unnamed.Issuer = ""
	other := crl(3, now.Add(-time.Hour), "crl 3 of another CA")
	other.Issuer = pkix.Name{CommonName: "new admin API CA"}
	tests := []struct {
		name string
		last *clientca.Record
		crl  *x509.RevocationList
		err  string // "" = accepted
	}{
		{"no earlier entry (first start)", nil, crl(1, now, "crl 1"), ""},
		{"the CRL removed", &inForce, nil, ""},
		{"the same CRL", &inForce, crl(7, now, "crl 7"), ""},
		{"a newer CRL", &inForce, crl(8, now.Add(time.Hour), "crl 8"), ""},
		{"a lower cRLNumber", &inForce, crl(6, now.Add(time.Hour), "crl 6"),
			"the CRL's cRLNumber 6 is lower than 7 of the CRL last in force"},
		{"the same cRLNumber, other bytes", &inForce, crl(7, now, "crl 7, another"),
			"the CRL's cRLNumber 7 is that of the CRL last in force, with another content"},
		{"a higher cRLNumber, an earlier thisUpdate", &inForce, crl(8, now.Add(-time.Second), "crl 8"),
			"the CRL's thisUpdate 2030-05-01T11:59:59Z is before 2030-05-01T12:00:00Z of the CRL last in force"},
		{"no cRLNumber, an earlier thisUpdate", &unnumbered, crl(0, now.Add(-time.Hour), "older"),
			"the CRL's thisUpdate 2030-05-01T11:00:00Z is before 2030-05-01T12:00:00Z"},
		{"no cRLNumber, a later thisUpdate", &unnumbered, crl(0, now.Add(time.Hour), "newer"), ""},
		{"a number now, none recorded, an earlier thisUpdate", &unnumbered, crl(9, now.Add(-time.Hour), "crl 9"),
			"is before 2030-05-01T12:00:00Z of the CRL last in force"},
		{"no number now, one recorded, the same thisUpdate", &inForce, crl(0, now, "unnumbered"), ""},
		{"thisUpdate within the recorded second", &inForce, crl(8, now.Add(500*time.Millisecond), "crl 8"), ""},
		{"another issuer name (a new CA)", &inForce, other, ""},
		{"a record without the issuer name is compared", &unnamed, crl(6, now.Add(time.Hour), "crl 6"),
			"the CRL's cRLNumber 6 is lower than 7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := clientca.Rollback(tt.last, tt.crl)
			switch {
			case tt.err == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Fatalf("error %v, want …%s…", err, tt.err)
			}
		})
	}
}
