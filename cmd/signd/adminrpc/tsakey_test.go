package adminrpc

import (
	"bytes"
	"context"
	"crypto/elliptic"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/signd/signd/admin"
	"github.com/signd/signd/csc/certstatus/certstatustest"
	"github.com/signd/signd/store"
	"github.com/signd/signd/tsa"
)

// timeStamping is a critical extended key usage extension with
// id-kp-timeStamping only: what a TSA certificate carries (RFC 3161 §2.3).
func timeStamping(t *testing.T) []pkix.Extension {
	t.Helper()
	eku, err := asn1.Marshal([]asn1.ObjectIdentifier{{1, 3, 6, 1, 5, 5, 7, 3, 8}})
	if err != nil {
		t.Fatal(err)
	}
	return []pkix.Extension{{Id: asn1.ObjectIdentifier{2, 5, 29, 37}, Critical: true, Value: eku}}
}

// TestTSAKeyIsNoCredentialKey: a time-stamping certificate for a user's
// credential key is refused by signd tsa import-cert, and the credential's
// certificate object stays in the token; a certificate object written
// under the TSA label for that key by other means does not redirect the
// TSA either, which keeps signing with the key signd tsa enroll made. A
// key made by hand is refused too, and a credential cannot take the TSA
// label.
func TestTSAKeyIsNoCredentialKey(t *testing.T) {
	ctx := context.Background()
	w := newActsWorld(t)
	by := admin.Principal{}
	if _, err := w.remote.AddUser(ctx, by, admin.AddUserRequest{Username: "alice", Password: alicePassword, PIN: alicePIN}); err != nil {
		t.Fatal(err)
	}
	cred, err := w.remote.CreateCredential(ctx, by, admin.CreateCredentialRequest{User: "alice", Algo: "rsa-2048", Subject: "CN=Alice"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.remote.ImportCertificate(ctx, by, admin.ImportCertificateRequest{ID: cred.Credential.ID,
		ChainPEM: w.issue(t, cred.CSRPEM, nil) + pemOf(w.ca.Cert)}); err != nil {
		t.Fatal(err)
	}
	aliceKey := cred.Credential.KeyID
	aliceID, err := hex.DecodeString(aliceKey)
	if err != nil {
		t.Fatal(err)
	}
	aliceCert := func() *x509.Certificate {
		t.Helper()
		certs, err := w.tok.Certificates(ctx, cred.Credential.Label)
		if err != nil || len(certs) != 1 || !bytes.Equal(certs[0].ID, aliceID) {
			t.Fatalf("alice's certificate object under %q: %v, %v", cred.Credential.Label, certs, err)
		}
		return certs[0].Cert
	}
	before := aliceCert()

	// The TSA's own key and certificate: newer than those other tests of
	// the package left under the label on the shared token (an hour
	// old), older than the one for alice below.
	enrolled, err := w.remote.EnrollTSA(ctx, by, admin.EnrollTSARequest{Algo: "rsa-2048"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.remote.ImportTSACertificate(ctx, by, admin.ImportTSACertificateRequest{KeyID: enrolled.KeyID,
		CertPEM: w.issueAt(t, enrolled.CSRPEM, timeStamping(t), time.Now().Add(-30*time.Minute))}); err != nil {
		t.Fatal(err)
	}

	// A newer time-stamping certificate for alice's key, issued by the CA.
	forAlice := w.issueAt(t, cred.CSRPEM, timeStamping(t), time.Now().Add(-time.Minute))
	_, err = w.remote.ImportTSACertificate(ctx, by, admin.ImportTSACertificateRequest{KeyID: aliceKey, CertPEM: forAlice})
	var ae *admin.Error
	if !errors.As(err, &ae) || ae.Kind != admin.KindConflict ||
		ae.Message != "key "+aliceKey+" is the key of credential "+cred.Credential.ID+": a TSA certificate needs a key of its own (signd tsa enroll)" {
		t.Errorf("import-cert with alice's credential key: %v, want KindConflict naming her credential", err)
	}
	if got := aliceCert(); !got.Equal(before) {
		t.Errorf("alice's certificate object was replaced by %q", got.Subject)
	}

	// A key of the token that signd tsa enroll did not make.
	byHand, err := w.tok.GenerateEC(ctx, "made-by-hand", elliptic.P256())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.tok.DestroyKey(context.Background(), byHand.ID) })
	_, err = w.remote.ImportTSACertificate(ctx, by, admin.ImportTSACertificateRequest{KeyID: hex.EncodeToString(byHand.ID),
		CertPEM: pemOf(w.ca.Issue(t, byHand.Public, certstatustest.Leaf{Subject: pkix.Name{CommonName: "by hand"}}))})
	if !errors.As(err, &ae) || ae.Kind != admin.KindInvalid || !strings.Contains(ae.Message, `labelled "made-by-hand", is not a time-stamping key`) {
		t.Errorf("import-cert with a key made by hand: %v, want KindInvalid", err)
	}

	// The same certificate written under the TSA label by other means
	// (pkcs11-tool): the TSA still signs with its own key.
	b, _ := pem.Decode([]byte(forAlice))
	stray, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.tok.ImportCertificate(ctx, aliceID, "acts-tsa", stray); err != nil {
		t.Fatal(err)
	}
	src := &tsa.HSMSource{Token: w.tok, Label: "acts-tsa",
		Records: store.Scope(w.db, func(tx store.Tx) tsa.KeyRecords { return tx })}
	signer, cert, err := src.Current(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(signer.(interface{ ID() []byte }).ID()); got != enrolled.KeyID || cert.Equal(stray) {
		t.Errorf("the TSA signs with key %s (certificate %q), want its own %s", got, cert.Subject, enrolled.KeyID)
	}

	// The TSA label and the labels under it are not a credential's.
	for _, label := range []string{"acts-tsa", "acts-tsa-" + cred.Credential.ID} {
		_, err := w.remote.CreateCredential(ctx, by, admin.CreateCredentialRequest{User: "alice", Algo: "rsa-2048", Subject: "CN=Alice", Label: label})
		if !errors.As(err, &ae) || ae.Kind != admin.KindInvalid ||
			ae.Message != `label "`+label+`" is reserved for the time-stamping keys (csc.timestamp.label "acts-tsa")` {
			t.Errorf("credential create --label %s: %v, want KindInvalid", label, err)
		}
	}
}
