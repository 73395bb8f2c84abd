package hsm

import (
	"bytes"
	"context"
	"crypto/x509/pkix"
	"testing"

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
