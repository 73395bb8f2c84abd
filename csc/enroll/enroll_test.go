package enroll

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"strings"
	"testing"
	"time"
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
		{"unknown_algorithm", Request{Owner: "alice", Algorithm: "ec-p256"}, "", 0, "", `algorithm "ec-p256" is not supported (rsa-2048, rsa-3072, rsa-4096)`},
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
	cases := []struct {
		name  string
		chain []*x509.Certificate
		pub   crypto.PublicKey
		err   string
	}{
		{"ok", []*x509.Certificate{leaf, root}, leafKey.Public(), ""},
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
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}
