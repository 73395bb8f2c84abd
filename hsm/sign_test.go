package hsm

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/miekg/pkcs11"
	"github.com/signd/signd/csc/certstatus/certstatustest"
	"github.com/signd/signd/hsm/keyobj"
)

var hashes = []struct {
	name string
	hash crypto.Hash
}{
	{"sha256", crypto.SHA256},
	{"sha384", crypto.SHA384},
	{"sha512", crypto.SHA512},
}

func TestSignVerifies(t *testing.T) {
	key, err := shared.Key(context.Background(), sharedKey.ID)
	if err != nil {
		t.Fatal(err)
	}
	if key.Bits() != 2048 || !bytes.Equal(key.ID(), sharedKey.ID) || key.Label() != sharedKey.Label {
		t.Fatalf("key %x %q %d bits", key.ID(), key.Label(), key.Bits())
	}
	dir := t.TempDir()
	pubPEM := filepath.Join(dir, "pub.pem")
	writePEM(t, pubPEM, "PUBLIC KEY", mustMarshalPKIX(t, key.Public()))
	data := []byte("signd test data\n")
	dataFile := filepath.Join(dir, "data")
	if err := os.WriteFile(dataFile, data, 0o600); err != nil {
		t.Fatal(err)
	}

	for _, h := range hashes {
		t.Run(h.name, func(t *testing.T) {
			digest := digestOf(h.hash, data)
			sig, err := key.Sign(rand.Reader, digest, h.hash)
			if err != nil {
				t.Fatal(err)
			}
			if err := rsa.VerifyPKCS1v15(key.Public().(*rsa.PublicKey), h.hash, digest, sig); err != nil {
				t.Fatalf("crypto/rsa: %v", err)
			}
			sigFile := filepath.Join(dir, "sig."+h.name)
			if err := os.WriteFile(sigFile, sig, 0o600); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command("openssl", "dgst", "-"+h.name, "-verify", pubPEM, "-signature", sigFile, dataFile).CombinedOutput()
			if err != nil || !strings.Contains(string(out), "Verified OK") {
				t.Fatalf("openssl dgst -verify: %v: %s", err, out)
			}
		})
	}
}

// TestSignGolden imports a crypto/rsa key and checks that the token's
// PKCS#1 v1.5 signatures are byte-identical to crypto/rsa's.
func TestSignGolden(t *testing.T) {
	cfg := config(mainTok)
	cfg.AllowImportedKeys = true
	tok := openTest(t, cfg, options{})
	id := randomID(t)
	importRSA(t, tok, "golden-2048", id, fixtureKey)
	t.Cleanup(func() { _ = tok.DestroyKey(context.Background(), id) })
	key, err := tok.Key(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if !fixtureKey.PublicKey.Equal(key.Public()) {
		t.Fatal("public key differs from the fixture")
	}
	for _, h := range hashes {
		t.Run(h.name, func(t *testing.T) {
			digest := digestOf(h.hash, []byte("golden"))
			got, err := key.SignDigest(context.Background(), h.hash, digest)
			if err != nil {
				t.Fatal(err)
			}
			want, err := rsa.SignPKCS1v15(nil, fixtureKey, h.hash, digest)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("HSM signature differs from crypto/rsa:\n got %x\nwant %x", got, want)
			}
		})
	}
}

func TestSignRejects(t *testing.T) {
	key, err := shared.Key(context.Background(), sharedKey.ID)
	if err != nil {
		t.Fatal(err)
	}
	d256 := digestOf(crypto.SHA256, []byte("x"))
	tests := []struct {
		name   string
		digest []byte
		opts   crypto.SignerOpts
		want   error
	}{
		{"short digest", d256[:31], crypto.SHA256, ErrBadDigest},
		{"long digest", append(d256, 0), crypto.SHA256, ErrBadDigest},
		{"sha256 digest as sha512", d256, crypto.SHA512, ErrBadDigest},
		{"empty digest", nil, crypto.SHA384, ErrBadDigest},
		{"pss", d256, &rsa.PSSOptions{Hash: crypto.SHA256}, ErrUnsupportedAlgorithm},
		{"sha1", d256[:20], crypto.SHA1, ErrUnsupportedAlgorithm},
		{"md5", d256[:16], crypto.MD5, ErrUnsupportedAlgorithm},
		{"no hash", d256, crypto.Hash(0), ErrUnsupportedAlgorithm},
		{"nil opts", d256, nil, ErrUnsupportedAlgorithm},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sig, err := key.Sign(rand.Reader, tt.digest, tt.opts)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Sign: %v (signature %x), want %v", err, sig, tt.want)
			}
		})
	}
}

// keyCSR finds key id on the shared token and makes a CSR for subject
// with it; it returns the key, the parsed CSR and its DER.
func keyCSR(t *testing.T, id []byte, subject pkix.Name) (*Key, *x509.CertificateRequest, []byte) {
	t.Helper()
	key, err := shared.Key(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	der, err := CreateCSR(key, subject)
	if err != nil {
		t.Fatal(err)
	}
	csr, err := x509.ParseCertificateRequest(der)
	if err != nil {
		t.Fatal(err)
	}
	return key, csr, der
}

func TestCreateCSR(t *testing.T) {
	subject := pkix.Name{CommonName: "Alice Example", Organization: []string{"signd"}, Country: []string{"DE"}}
	_, csr, der := keyCSR(t, sharedKey.ID, subject)
	if err := csr.CheckSignature(); err != nil {
		t.Fatal(err)
	}
	if csr.SignatureAlgorithm != x509.SHA256WithRSA {
		t.Errorf("signature algorithm %v", csr.SignatureAlgorithm)
	}
	if csr.Subject.CommonName != "Alice Example" || !sharedKey.Public.(*rsa.PublicKey).Equal(csr.PublicKey) {
		t.Errorf("CSR subject %v / public key not the HSM key", csr.Subject)
	}
	file := filepath.Join(t.TempDir(), "csr.pem")
	writePEM(t, file, "CERTIFICATE REQUEST", der)
	out, err := exec.Command("openssl", "req", "-verify", "-noout", "-in", file).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "verify OK") {
		t.Fatalf("openssl req -verify: %v: %s", err, out)
	}

	// Only RSA signers and EC signers on P-256 or P-384.
	ec, err := ecdsa.GenerateKey(elliptic.P224(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := CreateCSR(ec, subject); !errors.Is(err, ErrUnsupportedAlgorithm) {
		t.Errorf("ECDSA P-224 signer: %v, want ErrUnsupportedAlgorithm", err)
	}
	_, ed, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := CreateCSR(ed, subject); !errors.Is(err, ErrUnsupportedAlgorithm) {
		t.Errorf("Ed25519 signer: %v, want ErrUnsupportedAlgorithm", err)
	}
}

// TestEnrollment runs the enrollment flow: generate, CSR, issue, import
// the certificate, sign, and roll back with DestroyKey.
func TestEnrollment(t *testing.T) {
	ctx := context.Background()
	info, err := shared.GenerateRSA(ctx, "enroll-2048", 2048)
	if err != nil {
		t.Fatal(err)
	}
	_, csr, _ := keyCSR(t, info.ID, pkix.Name{CommonName: "Bob"})
	ca := certstatustest.New(t, "signd test CA", nil)
	leaf := ca.Issue(t, csr.PublicKey, certstatustest.Leaf{Subject: csr.Subject})

	t.Run("mismatch", func(t *testing.T) {
		other := ca.Issue(t, &fixtureKey.PublicKey, certstatustest.Leaf{Subject: csr.Subject})
		err := shared.ImportCertificate(ctx, info.ID, "", other)
		if !errors.Is(err, ErrCertKeyMismatch) {
			t.Fatalf("ImportCertificate: %v, want ErrCertKeyMismatch", err)
		}
		if n := countObjects(t, shared, keyobj.CertTemplate(info.ID)); n != 0 {
			t.Fatalf("%d certificates stored", n)
		}
	})
	t.Run("unknown key", func(t *testing.T) {
		if err := shared.ImportCertificate(ctx, randomID(t), "", leaf); !errors.Is(err, ErrKeyNotFound) {
			t.Fatalf("ImportCertificate: %v, want ErrKeyNotFound", err)
		}
	})
	t.Run("import", func(t *testing.T) {
		if err := shared.ImportCertificate(ctx, info.ID, "", leaf); err != nil {
			t.Fatal(err)
		}
		// Replacing keeps one certificate object.
		if err := shared.ImportCertificate(ctx, info.ID, "enroll-2048-cert", leaf); err != nil {
			t.Fatal(err)
		}
		if n := countObjects(t, shared, keyobj.CertTemplate(info.ID)); n != 1 {
			t.Fatalf("%d certificate objects, want 1", n)
		}
		// The quirk: CKA_ID alone matches the key pair and the certificate.
		if n := countObjects(t, shared, []*pkcs11.Attribute{pkcs11.NewAttribute(pkcs11.CKA_ID, info.ID)}); n != 3 {
			t.Errorf("%d objects with the ID, want 3", n)
		}
		var v map[uint][]byte
		err := shared.run(ctx, "read certificate", func(s pkcs11.SessionHandle) error {
			hs, err := shared.obj.Find(s, keyobj.CertTemplate(info.ID), 1)
			if err != nil {
				return err
			}
			v, err = shared.obj.Attrs(s, hs[0], pkcs11.CKA_VALUE, pkcs11.CKA_LABEL, pkcs11.CKA_PRIVATE, pkcs11.CKA_SUBJECT)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(v[pkcs11.CKA_VALUE], leaf.Raw) || string(v[pkcs11.CKA_LABEL]) != "enroll-2048-cert" ||
			keyobj.AttrBool(v[pkcs11.CKA_PRIVATE]) || !bytes.Equal(v[pkcs11.CKA_SUBJECT], leaf.RawSubject) {
			t.Errorf("stored certificate: label %q, private %v, value matches %v",
				v[pkcs11.CKA_LABEL], keyobj.AttrBool(v[pkcs11.CKA_PRIVATE]), bytes.Equal(v[pkcs11.CKA_VALUE], leaf.Raw))
		}

		// A fresh Token (no cache) still finds exactly the private key.
		fresh := openTest(t, config(mainTok), options{})
		k, err := fresh.Key(ctx, info.ID)
		if err != nil {
			t.Fatalf("Key after certificate import: %v", err)
		}
		sig, err := k.Sign(nil, digestOf(crypto.SHA256, []byte("enrolled")), crypto.SHA256)
		if err != nil {
			t.Fatal(err)
		}
		if err := leaf.CheckSignature(x509.SHA256WithRSA, []byte("enrolled"), sig); err != nil {
			t.Fatalf("signature does not verify with the certificate: %v", err)
		}
	})
	t.Run("rollback", func(t *testing.T) {
		if err := shared.DestroyKey(ctx, info.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := shared.Key(ctx, info.ID); !errors.Is(err, ErrKeyNotFound) {
			t.Fatalf("Key after DestroyKey: %v, want ErrKeyNotFound", err)
		}
		if n := countObjects(t, shared, []*pkcs11.Attribute{pkcs11.NewAttribute(pkcs11.CKA_ID, info.ID)}); n != 0 {
			t.Fatalf("%d objects left with the ID", n)
		}
	})
}

func mustMarshalPKIX(t *testing.T, pub crypto.PublicKey) []byte {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

func writePEM(t *testing.T, file, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
