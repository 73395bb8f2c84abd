package enroll

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/signd/signd/csc/certstatus/certstatustest"
	"github.com/signd/signd/hsm/hsmtest/softtoken"
)

func TestRequestCheck(t *testing.T) {
	cases := []struct {
		name    string
		req     Request
		algo    string
		bits    int
		subject string
		err     string
	}{
		{"defaults", Request{Owner: "alice"}, "rsa-2048", 2048, "CN=alice", ""},
		{"rsa_3072", Request{Owner: "alice", Algorithm: "rsa-3072"}, "rsa-3072", 3072, "CN=alice", ""},
		{"rsa_4096", Request{Owner: "alice", Algorithm: "rsa-4096"}, "rsa-4096", 4096, "CN=alice", ""},
		{"subject", Request{Owner: "alice", Subject: "CN=Alice Jansen,C=NL"}, "rsa-2048", 2048, "CN=Alice Jansen,C=NL", ""},
		{"owner_escaped", Request{Owner: "jansen, alice"}, "rsa-2048", 2048, `CN=jansen\, alice`, ""},
		{"ec_p256", Request{Owner: "alice", Algorithm: "ec-p256"}, "ec-p256", 256, "CN=alice", ""},
		{"ec_p384", Request{Owner: "alice", Algorithm: "ec-p384"}, "ec-p384", 384, "CN=alice", ""},
		{"ec_p521", Request{Owner: "alice", Algorithm: "ec-p521"}, "ec-p521", 521, "CN=alice", ""},
		{"unknown_algorithm", Request{Owner: "alice", Algorithm: "ec-p224"}, "", 0, "", `algorithm "ec-p224" is not supported (rsa-2048, rsa-3072, rsa-4096, ec-p256, ec-p384, ec-p521)`},
		{"algorithm_case", Request{Owner: "alice", Algorithm: "RSA-2048"}, "", 0, "", `algorithm "RSA-2048" is not supported`},
		{"bad_subject", Request{Owner: "alice", Subject: "XX=1"}, "", 0, "", `subject: attribute type "XX" is not supported`},
		{"unusable_owner", Request{Owner: "a\x00"}, "", 0, "", "subject: distinguished name contains a control character"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec, err := tc.req.Check()
			if tc.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if spec.Algorithm != tc.algo || spec.Bits != tc.bits || spec.Subject.String() != tc.subject {
				t.Fatalf("got %s/%d/%q, want %s/%d/%q", spec.Algorithm, spec.Bits, spec.Subject, tc.algo, tc.bits, tc.subject)
			}
		})
	}
}

// softKeys is a Keys on one software RSA key; its signer checks that
// nothing reads randomness while a request is signed.
type softKeys struct {
	t         *testing.T
	key       *rsa.PrivateKey
	genErr    error
	signerErr error
	label     string
	bits      int
}

func (k *softKeys) GenerateKey(_ context.Context, label string, bits int) ([]byte, int, error) {
	if k.genErr != nil {
		return nil, 0, k.genErr
	}
	k.label, k.bits = label, bits
	return []byte{1, 2, 3}, k.key.N.BitLen(), nil
}

func (k *softKeys) GenerateECKey(context.Context, string, elliptic.Curve) ([]byte, int, error) {
	k.t.Error("GenerateECKey called for an RSA request")
	return nil, 0, errors.New("not an EC request")
}

func (k *softKeys) Signer(_ context.Context, id []byte) (crypto.Signer, error) {
	if k.signerErr != nil {
		return nil, k.signerErr
	}
	if string(id) != "\x01\x02\x03" {
		k.t.Fatalf("signer for key %x, want 010203", id)
	}
	return noRandSigner{k.t, k.key}, nil
}

type noRandSigner struct {
	t   *testing.T
	key *rsa.PrivateKey
}

func (s noRandSigner) Public() crypto.PublicKey { return s.key.Public() }

func (s noRandSigner) Sign(r io.Reader, digest []byte, opts crypto.SignerOpts) ([]byte, error) {
	if _, err := r.Read(make([]byte, 1)); err == nil {
		s.t.Error("the signer was handed a working random source")
	}
	return s.key.Sign(r, digest, opts)
}

func TestGenerate(t *testing.T) {
	priv, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := Request{Owner: "alice", Subject: "CN=Alice Jansen,O=Example B.V.,C=NL"}.Check()
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("token gone")
	cases := []struct {
		name    string
		keys    *softKeys
		wantKey bool
		err     error
	}{
		{"ok", &softKeys{t: t, key: priv}, true, nil},
		{"generation_fails", &softKeys{t: t, key: priv, genErr: boom}, false, boom},
		{"key_lookup_fails", &softKeys{t: t, key: priv, signerErr: boom}, true, boom},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			key, der, err := Generate(context.Background(), tc.keys, "signd-c1", spec)
			if !errors.Is(err, tc.err) || (err == nil) != (tc.err == nil) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			if (key != nil) != tc.wantKey {
				t.Fatalf("key = %v, want one: %v", key, tc.wantKey)
			}
			if err != nil {
				return
			}
			if tc.keys.label != "signd-c1" || tc.keys.bits != 2048 || key.Bits != 2048 || string(key.ID) != "\x01\x02\x03" {
				t.Fatalf("generated %q/%d, key %x/%d", tc.keys.label, tc.keys.bits, key.ID, key.Bits)
			}
			block, _ := pem.Decode([]byte(CSRPEM(der)))
			if block == nil || block.Type != "CERTIFICATE REQUEST" {
				t.Fatalf("CSRPEM: %v", block)
			}
			csr, err := x509.ParseCertificateRequest(block.Bytes)
			if err != nil {
				t.Fatal(err)
			}
			if err := csr.CheckSignature(); err != nil {
				t.Fatal(err)
			}
			if csr.Subject.String() != "CN=Alice Jansen,O=Example B.V.,C=NL" || !priv.PublicKey.Equal(csr.PublicKey) {
				t.Fatalf("CSR for %q", csr.Subject)
			}
		})
	}
}

func TestCheckChain(t *testing.T) {
	now := time.Now()
	root, rootKey := selfSigned(t, "root", now)
	leafKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "leaf"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, root, leafKey.Public(), rootKey)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	other, _ := selfSigned(t, "other", now)
	// leafWith is a leaf for leafKey from root with what change sets.
	leafWith := func(change func(*x509.Certificate)) *x509.Certificate {
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(3), Subject: pkix.Name{CommonName: "leaf"},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour)}
		change(tmpl)
		return certstatustest.Create(t, tmpl, root, leafKey.Public(), rootKey)
	}
	documentSigning := asn1.ObjectIdentifier{1, 3, 6, 1, 5, 5, 7, 3, 36}
	cases := []struct {
		name  string
		chain []*x509.Certificate
		pub   crypto.PublicKey
		err   string
	}{
		{"ok", []*x509.Certificate{leaf, root}, leafKey.Public(), ""},
		{"nonRepudiation", []*x509.Certificate{leafWith(func(c *x509.Certificate) { c.KeyUsage = x509.KeyUsageContentCommitment }), root}, leafKey.Public(), ""},
		{"digitalSignature, emailProtection", []*x509.Certificate{leafWith(func(c *x509.Certificate) {
			c.KeyUsage, c.ExtKeyUsage = x509.KeyUsageDigitalSignature, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageEmailProtection}
		}), root}, leafKey.Public(), ""},
		{"documentSigning", []*x509.Certificate{leafWith(func(c *x509.Certificate) { c.UnknownExtKeyUsage = []asn1.ObjectIdentifier{documentSigning} }), root}, leafKey.Public(), ""},
		{"keyAgreement only", []*x509.Certificate{leafWith(func(c *x509.Certificate) { c.KeyUsage = x509.KeyUsageKeyEncipherment }), root}, leafKey.Public(), "neither digitalSignature nor nonRepudiation"},
		{"a CA certificate", []*x509.Certificate{leafWith(func(c *x509.Certificate) {
			c.IsCA, c.BasicConstraintsValid, c.KeyUsage = true, true, x509.KeyUsageCertSign|x509.KeyUsageDigitalSignature
		}), root}, leafKey.Public(), "is a CA certificate"},
		{"serverAuth only", []*x509.Certificate{leafWith(func(c *x509.Certificate) { c.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth} }), root}, leafKey.Public(), "does not allow signing documents"},
		{"clientAuth only", []*x509.Certificate{leafWith(func(c *x509.Certificate) { c.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth} }), root}, leafKey.Public(), "does not allow signing documents"},
		{"other_key", []*x509.Certificate{leaf, root}, rootKey.Public(), ErrLeafKey.Error()},
		{"no_root", []*x509.Certificate{leaf}, leafKey.Public(), "not a self-signed root"},
		{"wrong_root", []*x509.Certificate{leaf, other}, leafKey.Public(), "chain does not verify"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckChain(tc.chain, tc.pub, now)
			if tc.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("err = %v, want %q", err, tc.err)
			}
		})
	}
}

func selfSigned(t *testing.T, cn string, now time.Time) (*x509.Certificate, *rsa.PrivateKey) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	cert := certstatustest.Create(t, tmpl, tmpl, key.Public(), key)
	return cert, key
}

// tokenKeys is Keys on a software token.
type tokenKeys struct{ *softtoken.Token }

func (k tokenKeys) GenerateKey(ctx context.Context, label string, bits int) ([]byte, int, error) {
	info, err := k.GenerateRSA(ctx, label, bits)
	if err != nil {
		return nil, 0, err
	}
	return info.ID, info.Bits, nil
}

func (k tokenKeys) GenerateECKey(ctx context.Context, label string, curve elliptic.Curve) ([]byte, int, error) {
	info, err := k.GenerateEC(ctx, label, curve)
	if err != nil {
		return nil, 0, err
	}
	return info.ID, info.Bits, nil
}

func (k tokenKeys) Signer(ctx context.Context, id []byte) (crypto.Signer, error) {
	return k.Key(ctx, id)
}

// TestGenerateEC: an EC request generates an EC key on its curve and a
// CSR signed by it with the curve's hash.
func TestGenerateEC(t *testing.T) {
	for _, tc := range []struct {
		algo  string
		curve elliptic.Curve
		sig   x509.SignatureAlgorithm
	}{
		{"ec-p256", elliptic.P256(), x509.ECDSAWithSHA256},
		{"ec-p384", elliptic.P384(), x509.ECDSAWithSHA384},
		{"ec-p521", elliptic.P521(), x509.ECDSAWithSHA512},
	} {
		t.Run(tc.algo, func(t *testing.T) {
			spec, err := Request{Owner: "alice", Algorithm: tc.algo}.Check()
			if err != nil {
				t.Fatal(err)
			}
			keys := tokenKeys{softtoken.New(softtoken.Options{})}
			key, der, err := Generate(context.Background(), keys, "signd-"+tc.algo, spec)
			if err != nil {
				t.Fatal(err)
			}
			csr, err := x509.ParseCertificateRequest(der)
			if err != nil {
				t.Fatal(err)
			}
			pub, ok := csr.PublicKey.(*ecdsa.PublicKey)
			if !ok || pub.Curve != tc.curve || csr.SignatureAlgorithm != tc.sig || csr.CheckSignature() != nil {
				t.Fatalf("CSR: key %T, algorithm %v, signature %v", csr.PublicKey, csr.SignatureAlgorithm, csr.CheckSignature())
			}
			if key.Bits != tc.curve.Params().BitSize || keys.Calls(softtoken.OpGenerateRSA) != 0 {
				t.Fatalf("key %d bits, %d RSA generations", key.Bits, keys.Calls(softtoken.OpGenerateRSA))
			}
			signer, _ := keys.Signer(context.Background(), key.ID)
			if err := CheckChain([]*x509.Certificate{selfSignedBy(t, signer)}, signer.Public(), time.Now()); err != nil {
				t.Fatalf("CheckChain of an EC leaf: %v", err)
			}
		})
	}
}

// selfSignedBy is a self-signed certificate of signer's key.
func selfSignedBy(t *testing.T, signer crypto.Signer) *x509.Certificate {
	t.Helper()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "EC"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		BasicConstraintsValid: true, IsCA: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	return certstatustest.Create(t, tmpl, tmpl, signer.Public(), signer)
}
