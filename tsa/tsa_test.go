package tsa_test

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"io"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/digitorus/timestamp"

	"github.com/signd/signd/csc/certstatus/certstatustest"
	"github.com/signd/signd/tsa"
)

var (
	oidEKU          = asn1.ObjectIdentifier{2, 5, 29, 37}
	oidTimeStamping = asn1.ObjectIdentifier{1, 3, 6, 1, 5, 5, 7, 3, 8}
	oidServerAuth   = asn1.ObjectIdentifier{1, 3, 6, 1, 5, 5, 7, 3, 1}
)

func eku(t *testing.T, critical bool, usages ...asn1.ObjectIdentifier) []pkix.Extension {
	t.Helper()
	v, err := asn1.Marshal(usages)
	if err != nil {
		t.Fatal(err)
	}
	return []pkix.Extension{{Id: oidEKU, Critical: critical, Value: v}}
}

var testKey = func() *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return k
}()

// selfSigned makes a TSA certificate for testKey with exts, valid from nb
// to na.
func selfSigned(t *testing.T, exts []pkix.Extension, nb, na time.Time) *x509.Certificate {
	t.Helper()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "test TSA"},
		NotBefore: nb, NotAfter: na, KeyUsage: x509.KeyUsageDigitalSignature, ExtraExtensions: exts,
	}
	return certstatustest.Create(t, tmpl, tmpl, &testKey.PublicKey, testKey)
}

func TestCheckCertificate(t *testing.T) {
	now := time.Now()
	valid := func(exts []pkix.Extension) *x509.Certificate {
		return selfSigned(t, exts, now.Add(-time.Hour), now.Add(time.Hour))
	}
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	for _, tc := range []struct {
		name string
		cert *x509.Certificate
		pub  crypto.PublicKey
		want string
	}{
		{"fit", valid(eku(t, true, oidTimeStamping)), &testKey.PublicKey, ""},
		{"no EKU", valid(nil), &testKey.PublicKey, "has no extended key usage"},
		{"EKU not critical", valid(eku(t, false, oidTimeStamping)), &testKey.PublicKey, "must be critical"},
		{"server auth", valid(eku(t, true, oidServerAuth)), &testKey.PublicKey, "id-kp-timeStamping only"},
		{"time stamping and more", valid(eku(t, true, oidTimeStamping, oidServerAuth)), &testKey.PublicKey, "id-kp-timeStamping only"},
		{"unknown usage", valid(eku(t, true, asn1.ObjectIdentifier{1, 2, 3})), &testKey.PublicKey, "id-kp-timeStamping only"},
		{"expired", selfSigned(t, eku(t, true, oidTimeStamping), now.Add(-2*time.Hour), now.Add(-time.Hour)), &testKey.PublicKey, "not valid now"},
		{"not yet valid", selfSigned(t, eku(t, true, oidTimeStamping), now.Add(time.Hour), now.Add(2*time.Hour)), &testKey.PublicKey, "not valid now"},
		{"another key", valid(eku(t, true, oidTimeStamping)), &other.PublicKey, "not the time-stamping key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tsa.CheckCertificate(tc.cert, tc.pub, now)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("CheckCertificate: %v, want %q", err, tc.want)
			}
		})
	}
}

func TestParsePolicy(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want asn1.ObjectIdentifier
	}{
		{"1.3.6.1.4.1.99999.1", asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 99999, 1}},
		{"2.999.1", asn1.ObjectIdentifier{2, 999, 1}},
		{"0.4.0.2023.1.1", asn1.ObjectIdentifier{0, 4, 0, 2023, 1, 1}},
		{"", nil}, {"1", nil}, {"1.", nil}, {".1", nil}, {"3.1", nil}, {"1.40", nil}, {"1.-2", nil},
		{"1.02", nil}, {"1.2.x", nil}, {"1.2.99999999999999999999", nil}, {"1" + strings.Repeat(".1", 150), nil},
	} {
		got, err := tsa.ParsePolicy(tc.in)
		if tc.want == nil && err == nil || tc.want != nil && (err != nil || !got.Equal(tc.want)) {
			t.Errorf("ParsePolicy(%q) = %v, %v", tc.in, got, err)
		}
	}
}

// staticSource is a Source with a fixed key and certificate.
type staticSource struct {
	signer crypto.Signer
	cert   *x509.Certificate
}

func (s staticSource) Current(context.Context) (crypto.Signer, *x509.Certificate, error) {
	return s.signer, s.cert, nil
}

// badSigner signs with another key: what a faulty token would return.
type badSigner struct{ crypto.Signer }

var otherKey, _ = rsa.GenerateKey(rand.Reader, 2048)

func (b badSigner) Sign(r io.Reader, d []byte, o crypto.SignerOpts) ([]byte, error) {
	return otherKey.Sign(r, d, o)
}

func TestStamp(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second) // pkcs7 checks its own signing time against the certificate
	cert := selfSigned(t, eku(t, true, oidTimeStamping), now.Add(-time.Hour), now.Add(time.Hour))
	a := &tsa.Authority{
		Source: staticSource{testKey, cert}, Policy: asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 99999, 1},
		Accuracy: time.Second, Now: func() time.Time { return now },
	}
	d := sha256.Sum256([]byte("signature value"))
	nonce := new(big.Int).SetBytes([]byte("a nonce of the client"))
	got, err := a.Stamp(context.Background(), tsa.Request{Hash: crypto.SHA256, Digest: d[:], Nonce: nonce})
	if err != nil {
		t.Fatal(err)
	}
	ts, err := timestamp.Parse(got.DER)
	if err != nil {
		t.Fatal(err)
	}
	if !ts.Time.Equal(now) || !got.Time.Equal(now) || ts.Accuracy != time.Second || !ts.Policy.Equal(a.Policy) ||
		ts.Nonce.Cmp(nonce) != 0 || !slices.Equal(ts.HashedMessage, d[:]) || ts.SerialNumber.Cmp(got.Serial) != 0 {
		t.Errorf("token %+v", ts)
	}
	// Serial numbers differ from token to token.
	again, err := a.Stamp(context.Background(), tsa.Request{Hash: crypto.SHA256, Digest: d[:]})
	if err != nil {
		t.Fatal(err)
	}
	if again.Serial.Cmp(got.Serial) == 0 {
		t.Error("two tokens with one serial number")
	}

	for _, r := range []tsa.Request{
		{Hash: crypto.SHA1, Digest: make([]byte, 20)},
		{Hash: crypto.SHA256, Digest: d[:31]},
		{Hash: crypto.SHA384, Digest: d[:]},
		{Hash: crypto.SHA256, Digest: d[:], Nonce: new(big.Int).Lsh(big.NewInt(1), 8*tsa.MaxNonceLen)},
		{Hash: crypto.SHA256, Digest: d[:], Nonce: big.NewInt(-1)},
	} {
		if _, err := a.Stamp(context.Background(), r); err == nil {
			t.Errorf("Stamp(%v, %d bytes, nonce %v) made a token", r.Hash, len(r.Digest), r.Nonce)
		}
	}

	// A token the key signed wrongly never leaves.
	a.Source = staticSource{badSigner{testKey}, cert}
	if _, err := a.Stamp(context.Background(), tsa.Request{Hash: crypto.SHA256, Digest: d[:]}); err == nil ||
		!strings.Contains(err.Error(), "does not verify") {
		t.Errorf("Stamp with a faulty signer: %v", err)
	}
}
