package hsm

import (
	"bytes"
	"context"
	"crypto/elliptic"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/miekg/pkcs11"

	"github.com/signd/signd/csc/certstatus/certstatustest"
)

// TestCertificatesByLabel: Certificates finds the certificates stored under
// a label with the CKA_ID of their key pair, and nothing for another label.
func TestCertificatesByLabel(t *testing.T) {
	ctx := context.Background()
	info, err := shared.GenerateRSA(ctx, "by-label-key", 2048)
	if err != nil {
		t.Fatal(err)
	}
	leaf := certstatustest.New(t, "signd test CA", nil).Issue(t, info.Public, certstatustest.Leaf{Subject: pkix.Name{CommonName: "TSA"}})
	if got, err := shared.Certificates(ctx, "by-label-cert"); err != nil || len(got) != 0 {
		t.Fatalf("before the import: %v, %v", got, err)
	}
	if err := shared.ImportCertificate(ctx, info.ID, "by-label-cert", leaf); err != nil {
		t.Fatal(err)
	}
	got, err := shared.Certificates(ctx, "by-label-cert")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !bytes.Equal(got[0].ID, info.ID) || !got[0].Cert.Equal(leaf) {
		t.Fatalf("Certificates = %+v", got)
	}
	if got, err := shared.Certificates(ctx, "by-label-key"); err != nil || len(got) != 0 {
		t.Errorf("the key's own label: %v, %v", got, err)
	}
}

// TestCertificatesAllAndUnparsable: Certificates returns every certificate
// under a label, more than one page of the token's finds, and skips a
// stored value that does not parse, logging it once.
func TestCertificatesAllAndUnparsable(t *testing.T) {
	ctx := context.Background()
	// A TPM's token keeps few objects: eighteen more keys leave swtpm
	// refusing the key generations of the tests after this one. Reading
	// the certificates in pages is the module's FindObjects, the same on
	// every token.
	if c := shared.Capabilities(); strings.Contains(c.Model, "TPM") {
		t.Skipf("eighteen keys on %s %s would exhaust it for the tests after", c.Manufacturer, c.Model)
	}
	cfg, logs := loggedConfig(mainTok)
	tok := openTest(t, cfg, options{})
	const label, n = "many-certs", 18
	ca := certstatustest.New(t, "signd test CA", nil)
	want := map[string]bool{}
	for i := range n {
		info, err := certKey(ctx, tok, fmt.Sprintf("many-certs-key-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tok.DestroyKey(context.Background(), info.ID) })
		if err := tok.ImportCertificate(ctx, info.ID, label, ca.Issue(t, info.Public, certstatustest.Leaf{Subject: pkix.Name{CommonName: "TSA"}})); err != nil {
			t.Fatal(err)
		}
		want[string(info.ID)] = true
	}
	// A certificate object whose value is not DER, as a faulty tool
	// leaves one.
	var garbage pkcs11.ObjectHandle
	if err := tok.run(ctx, "test", func(s pkcs11.SessionHandle) (err error) {
		garbage, err = tok.lib.CreateObject(s, []*pkcs11.Attribute{
			pkcs11.NewAttribute(pkcs11.CKA_CLASS, pkcs11.CKO_CERTIFICATE),
			pkcs11.NewAttribute(pkcs11.CKA_CERTIFICATE_TYPE, pkcs11.CKC_X_509),
			pkcs11.NewAttribute(pkcs11.CKA_TOKEN, true),
			pkcs11.NewAttribute(pkcs11.CKA_PRIVATE, false),
			pkcs11.NewAttribute(pkcs11.CKA_SUBJECT, []byte{0x30, 0}),
			pkcs11.NewAttribute(pkcs11.CKA_VALUE, []byte("not a certificate")),
			pkcs11.NewAttribute(pkcs11.CKA_ID, []byte("garbage")),
			pkcs11.NewAttribute(pkcs11.CKA_LABEL, label),
		})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		tok.run(context.Background(), "test", func(s pkcs11.SessionHandle) error { return tok.lib.DestroyObject(s, garbage) })
	})
	for range 2 {
		got, err := tok.Certificates(ctx, label)
		if err != nil {
			t.Fatalf("Certificates: %v", err)
		}
		if len(got) != n {
			t.Fatalf("Certificates = %d certificates, want %d", len(got), n)
		}
		for _, c := range got {
			if !want[string(c.ID)] {
				t.Errorf("Certificates returned id %x", c.ID)
			}
		}
	}
	if c := logs.count("certificate object does not parse"); c != 1 {
		t.Errorf("the unparsable certificate was logged %d times, want once:\n%s", c, logs.String())
	}
}

// TestStoreCertificates: the issuers of a key's certificate are kept under
// a label of their own with the key's CKA_ID, replaced as a set, and go
// with a new import of the key's certificate.
func TestStoreCertificates(t *testing.T) {
	ctx := context.Background()
	info, err := certKey(ctx, shared, "issuers-key")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { shared.DestroyKey(context.Background(), info.ID) })
	root := certstatustest.New(t, "Root CA", nil)
	sub := root.Intermediate(t, "Sub CA")
	leaf := sub.Issue(t, info.Public, certstatustest.Leaf{Subject: pkix.Name{CommonName: "TSA"}})
	if err := shared.ImportCertificate(ctx, info.ID, "issuers-tsa", leaf); err != nil {
		t.Fatal(err)
	}
	subjects := func() []string {
		t.Helper()
		got, err := shared.Certificates(ctx, "issuers-tsa/issuer")
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, c := range got {
			if !bytes.Equal(c.ID, info.ID) {
				t.Errorf("issuer %q stored with id %x", c.Cert.Subject, c.ID)
			}
			out = append(out, c.Cert.Subject.CommonName)
		}
		slices.Sort(out)
		return out
	}
	for _, set := range [][]*x509.Certificate{{sub.Cert, root.Cert}, {sub.Cert}} {
		if err := shared.StoreCertificates(ctx, info.ID, "issuers-tsa/issuer", set); err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, c := range set {
			want = append(want, c.Subject.CommonName)
		}
		slices.Sort(want)
		if got := subjects(); !slices.Equal(got, want) {
			t.Errorf("issuers %q, want %q", got, want)
		}
	}
	if err := shared.ImportCertificate(ctx, info.ID, "issuers-tsa", leaf); err != nil {
		t.Fatal(err)
	}
	if got := subjects(); len(got) != 0 {
		t.Errorf("issuers %q after a new import", got)
	}
	if err := shared.StoreCertificates(ctx, nil, "issuers-tsa/issuer", []*x509.Certificate{root.Cert}); err == nil {
		t.Error("StoreCertificates without an ID")
	}
}

// certKey generates a key for certificates to be imported for: EC P-256
// where the token makes EC keys (fast, on a TPM too), else RSA-2048
// (opencryptoki's soft token has no CKM_EC_KEY_PAIR_GEN).
func certKey(ctx context.Context, tok *Token, label string) (*KeyInfo, error) {
	info, err := tok.GenerateEC(ctx, label, elliptic.P256())
	if errors.Is(err, ErrUnsupportedAlgorithm) {
		return tok.GenerateRSA(ctx, label, 2048)
	}
	return info, err
}
