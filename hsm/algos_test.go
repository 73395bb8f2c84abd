package hsm

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
	"errors"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/miekg/pkcs11"

	"github.com/signd/signd/csc/certstatus/certstatustest"
	"github.com/signd/signd/hsm/hsmtest"
)

// ecCurves are the curves the tests use, by name.
var ecCurves = map[string]elliptic.Curve{"P-256": elliptic.P256(), "P-384": elliptic.P384(), "P-521": elliptic.P521()}

// ecKeys generates one EC key per curve in shared, once each: a token
// without a curve fails (or skips) only the tests on that curve.
var ecKeys = func() map[string]func() (*KeyInfo, error) {
	m := map[string]func() (*KeyInfo, error){}
	for name, c := range ecCurves {
		m[name] = sync.OnceValues(func() (*KeyInfo, error) {
			info, err := shared.GenerateEC(context.Background(), "ec-"+name, c)
			if err == nil {
				ecMu.Lock()
				ecMadeKeys[name] = info
				ecMu.Unlock()
			}
			return info, err
		})
	}
	return m
}()

// ecMade is the shared EC key on curve if a test made it, else nil.
func ecMade(curve string) *KeyInfo {
	ecMu.Lock()
	defer ecMu.Unlock()
	return ecMadeKeys[curve]
}

var (
	ecMu       sync.Mutex
	ecMadeKeys = map[string]*KeyInfo{}
)

// ecKey is the shared EC key on curve. It skips t (lacks) when the token
// has no CKM_EC_KEY_PAIR_GEN or CKM_ECDSA for the curve's size, or refuses
// the curve as unsupported.
func ecKey(t testing.TB, curve string) *KeyInfo {
	t.Helper()
	requireEC(t, curve)
	info, err := ecKeys[curve]()
	if err != nil {
		lacksIfUnsupported(t, "CKM_EC_KEY_PAIR_GEN on "+curve, err)
		t.Fatalf("GenerateEC %s: %v", curve, err)
	}
	return info
}

// requireEC skips t (lacks) unless the token lists CKM_EC_KEY_PAIR_GEN
// and CKM_ECDSA for keys of curve's size.
func requireEC(t testing.TB, curve string) {
	t.Helper()
	bits := ecCurves[curve].Params().BitSize
	mechanism(t, pkcs11.CKM_EC_KEY_PAIR_GEN, "CKM_EC_KEY_PAIR_GEN", bits)
	mechanism(t, pkcs11.CKM_ECDSA, "CKM_ECDSA", bits)
}

// opensslVerify verifies sig over digest with pub by `openssl pkeyutl
// -verify`: RSA PKCS#1 v1.5 (DigestInfo of hash), RSA-PSS (salt = hash
// length, MGF1 with hash) or ECDSA (DER).
func opensslVerify(t *testing.T, pub crypto.PublicKey, hash string, pss bool, digest, sig []byte) {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	pubFile, dFile, sFile := filepath.Join(dir, "pub.pem"), filepath.Join(dir, "digest"), filepath.Join(dir, "sig")
	writePEM(t, pubFile, "PUBLIC KEY", der)
	for f, b := range map[string][]byte{dFile: digest, sFile: sig} {
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"pkeyutl", "-verify", "-pubin", "-inkey", pubFile, "-in", dFile, "-sigfile", sFile, "-pkeyopt", "digest:" + hash}
	if pss {
		args = append(args, "-pkeyopt", "rsa_padding_mode:pss", "-pkeyopt", "rsa_pss_saltlen:digest", "-pkeyopt", "rsa_mgf1_md:"+hash)
	}
	out, err := exec.Command("openssl", args...).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Signature Verified Successfully") {
		t.Fatalf("openssl %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// TestGenerateEC: the key pair gets the same template rules as an RSA
// key, and its public key reads back on the right curve.
func TestGenerateEC(t *testing.T) {
	for _, tt := range []struct {
		curve string
		c     elliptic.Curve
		bits  int
	}{{"P-256", elliptic.P256(), 256}, {"P-384", elliptic.P384(), 384}, {"P-521", elliptic.P521(), 521}} {
		t.Run(tt.curve, func(t *testing.T) {
			info := ecKey(t, tt.curve)
			pub, ok := info.Public.(*ecdsa.PublicKey)
			if !ok || pub.Curve != tt.c || info.Bits != tt.bits || len(info.ID) != 16 {
				t.Fatalf("KeyInfo %T bits %d id %d bytes, want EC %s", info.Public, info.Bits, len(info.ID), tt.curve)
			}
			priv, err := rawAttrs(shared, pkcs11.CKO_PRIVATE_KEY, info.ID,
				pkcs11.CKA_SENSITIVE, pkcs11.CKA_EXTRACTABLE, pkcs11.CKA_SIGN, pkcs11.CKA_DERIVE,
				pkcs11.CKA_SIGN_RECOVER, pkcs11.CKA_PRIVATE, pkcs11.CKA_TOKEN, pkcs11.CKA_LOCAL,
				pkcs11.CKA_ALWAYS_SENSITIVE, pkcs11.CKA_NEVER_EXTRACTABLE, pkcs11.CKA_MODIFIABLE, pkcs11.CKA_COPYABLE)
			if err != nil {
				t.Fatal(err)
			}
			checkBools(t, "private", priv, map[uint]bool{
				pkcs11.CKA_SENSITIVE: true, pkcs11.CKA_EXTRACTABLE: false, pkcs11.CKA_SIGN: true,
				pkcs11.CKA_DERIVE: false, pkcs11.CKA_SIGN_RECOVER: false, pkcs11.CKA_PRIVATE: true,
				pkcs11.CKA_TOKEN: true, pkcs11.CKA_LOCAL: true, pkcs11.CKA_ALWAYS_SENSITIVE: true,
				pkcs11.CKA_NEVER_EXTRACTABLE: true, pkcs11.CKA_MODIFIABLE: false, pkcs11.CKA_COPYABLE: false,
			})
			if _, err := rawAttrs(shared, pkcs11.CKO_PRIVATE_KEY, info.ID, pkcs11.CKA_VALUE); !unreadable(err) {
				t.Errorf("reading the private value: %v, want CKR_ATTRIBUTE_SENSITIVE or CKR_ATTRIBUTE_TYPE_INVALID", err)
			}
			key, err := shared.Key(context.Background(), info.ID)
			if err != nil {
				t.Fatal(err)
			}
			if !pub.Equal(key.Public()) || key.Bits() != tt.bits {
				t.Errorf("Key: %v bits %d, want the generated key", key.Public(), key.Bits())
			}
		})
	}
	for _, c := range []elliptic.Curve{elliptic.P224(), nil} {
		if _, err := shared.GenerateEC(context.Background(), "ec-refused", c); !errors.Is(err, ErrUnsupportedAlgorithm) {
			t.Errorf("GenerateEC(%v): %v, want ErrUnsupportedAlgorithm", c, err)
		}
	}
	t.Run("label in use", func(t *testing.T) {
		requireEC(t, "P-256")
		if _, err := shared.GenerateEC(context.Background(), sharedKey.Label, elliptic.P256()); !errors.Is(err, ErrLabelExists) {
			t.Errorf("label in use: %v, want ErrLabelExists", err)
		}
	})
}

// TestSignECDSA: every hash on every curve, returned as DER and verified
// by Go and OpenSSL.
func TestSignECDSA(t *testing.T) {
	for _, curve := range []string{"P-256", "P-384", "P-521"} {
		for _, h := range hashes {
			t.Run(curve+"/"+h.name, func(t *testing.T) {
				info := ecKey(t, curve)
				pub := info.Public.(*ecdsa.PublicKey)
				d := digestOf(h.hash, []byte(t.Name()))
				sig, err := shared.SignDigest(context.Background(), info.ID, h.hash, d)
				if err != nil {
					t.Fatal(err)
				}
				var rs struct{ R, S *big.Int }
				if rest, err := asn1.Unmarshal(sig, &rs); err != nil || len(rest) != 0 {
					t.Fatalf("signature is not a DER ECDSA-Sig-Value: %v (%x)", err, sig)
				}
				if !ecdsa.VerifyASN1(pub, d, sig) {
					t.Fatal("crypto/ecdsa does not verify the signature")
				}
				opensslVerify(t, pub, h.name, false, d, sig)
				// The crypto.Signer path (CreateCertificate and friends).
				key, err := shared.Key(context.Background(), info.ID)
				if err != nil {
					t.Fatal(err)
				}
				sig, err = key.Sign(rand.Reader, d, h.hash)
				if err != nil || !ecdsa.VerifyASN1(pub, d, sig) {
					t.Fatalf("Key.Sign: %v", err)
				}
			})
		}
	}
}

// TestSignPSS: RSASSA-PSS through CKM_RSA_PKCS_PSS, salt = hash length,
// MGF1 with the same hash, verified by Go and OpenSSL.
func TestSignPSS(t *testing.T) {
	mechanism(t, pkcs11.CKM_RSA_PKCS_PSS, "CKM_RSA_PKCS_PSS", 2048)
	key, err := shared.Key(context.Background(), sharedKey.ID)
	if err != nil {
		t.Fatal(err)
	}
	pub := sharedKey.Public.(*rsa.PublicKey)
	for _, h := range hashes {
		for _, salt := range []int{rsa.PSSSaltLengthEqualsHash, h.hash.Size()} {
			d := digestOf(h.hash, []byte(t.Name()+h.name))
			opts := &rsa.PSSOptions{SaltLength: salt, Hash: h.hash}
			sig, err := key.Sign(rand.Reader, d, opts)
			if err != nil {
				t.Fatalf("%s: %v", h.name, err)
			}
			if err := rsa.VerifyPSS(pub, h.hash, d, sig, &rsa.PSSOptions{SaltLength: h.hash.Size(), Hash: h.hash}); err != nil {
				t.Fatalf("%s: crypto/rsa: %v", h.name, err)
			}
			if rsa.VerifyPKCS1v15(pub, h.hash, d, sig) == nil {
				t.Fatalf("%s: a PSS request returned a PKCS#1 v1.5 signature", h.name)
			}
			opensslVerify(t, pub, h.name, true, d, sig)
		}
	}
	// PKCS#1 v1.5 on every hash, by OpenSSL too.
	for _, h := range hashes {
		d := digestOf(h.hash, []byte(t.Name()+h.name))
		sig, err := shared.SignDigestOpts(context.Background(), sharedKey.ID, h.hash, d)
		if err != nil {
			t.Fatal(err)
		}
		opensslVerify(t, pub, h.name, false, d, sig)
	}
}

// TestSignAlgorithmRejects: what the token is never asked to do.
func TestSignAlgorithmRejects(t *testing.T) {
	d := digestOf(crypto.SHA256, []byte("x"))
	rsaKey := func(testing.TB) []byte { return sharedKey.ID }
	ecP256 := func(t testing.TB) []byte { return ecKey(t, "P-256").ID }
	tests := []struct {
		name   string
		id     func(testing.TB) []byte
		opts   crypto.SignerOpts
		digest []byte
		want   error
	}{
		{"PSS salt 20", rsaKey, &rsa.PSSOptions{SaltLength: 20, Hash: crypto.SHA256}, d, ErrUnsupportedAlgorithm},
		{"PSS auto salt", rsaKey, &rsa.PSSOptions{Hash: crypto.SHA256}, d, ErrUnsupportedAlgorithm},
		{"PSS SHA-1", rsaKey, &rsa.PSSOptions{SaltLength: 20, Hash: crypto.SHA1}, d[:20], ErrUnsupportedAlgorithm},
		{"PSS short digest", rsaKey, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash, Hash: crypto.SHA384}, d, ErrBadDigest},
		{"PSS on an EC key", ecP256, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash, Hash: crypto.SHA256}, d, ErrUnsupportedAlgorithm},
		{"ECDSA short digest", ecP256, crypto.SHA256, d[:31], ErrBadDigest},
		{"ECDSA SHA-1", ecP256, crypto.SHA1, d[:20], ErrUnsupportedAlgorithm},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sig, err := shared.SignDigestOpts(context.Background(), tt.id(t), tt.opts, tt.digest)
			if !errors.Is(err, tt.want) || !NotSigned(err) || sig != nil {
				t.Fatalf("SignDigestOpts: %v (NotSigned %v, signature %x), want %v", err, NotSigned(err), sig, tt.want)
			}
		})
	}
}

// shortSigner drops the last byte of every signature the module returns.
type shortSigner struct{ *hsmtest.Faults }

func (b shortSigner) Sign(sh pkcs11.SessionHandle, msg []byte) ([]byte, error) {
	sig, err := b.Faults.Sign(sh, msg)
	if err == nil && len(sig) > 0 {
		sig = sig[:len(sig)-1]
	}
	return sig, err
}

// TestVerifyAfterSignAlgorithms: a signature the token corrupted never
// leaves, whatever the algorithm, and it counts as made (not NotSigned).
func TestVerifyAfterSignAlgorithms(t *testing.T) {
	pss := &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash, Hash: crypto.SHA384}
	ec := func(curve string) func(testing.TB) []byte {
		return func(t testing.TB) []byte { return ecKey(t, curve).ID }
	}
	rsaKey := func(testing.TB) []byte { return sharedKey.ID }
	cases := []struct {
		name string
		id   func(testing.TB) []byte
		opts crypto.SignerOpts
	}{
		{"PKCS#1 v1.5", rsaKey, crypto.SHA256},
		{"PSS", func(t testing.TB) []byte {
			mechanism(t, pkcs11.CKM_RSA_PKCS_PSS, "CKM_RSA_PKCS_PSS", 2048)
			return sharedKey.ID
		}, pss},
		{"ECDSA P-256", ec("P-256"), crypto.SHA256},
		{"ECDSA P-384", ec("P-384"), crypto.SHA512},
		{"ECDSA P-521", ec("P-521"), crypto.SHA256},
	}
	for _, w := range []struct {
		name, want string
		wrap       func(Ctx) Ctx
	}{
		{"flipped bit", "invalid signature", func(real Ctx) Ctx { return badSigner{hsmtest.Wrap(real)} }},
		{"short", "", func(real Ctx) Ctx { return shortSigner{hsmtest.Wrap(real)} }},
	} {
		cfg := config(mainTok)
		cfg.Wrap = w.wrap
		bad := openTest(t, cfg, options{})
		for _, c := range cases {
			t.Run(w.name+"/"+c.name, func(t *testing.T) {
				d := digestOf(c.opts.HashFunc(), []byte("fault"))
				sig, err := bad.SignDigestOpts(context.Background(), c.id(t), c.opts, d)
				if err == nil || sig != nil || NotSigned(err) || !strings.Contains(err.Error(), "signature") {
					t.Fatalf("corrupted signature: %v (NotSigned %v, %d bytes)", err, NotSigned(err), len(sig))
				}
				if w.want != "" && !strings.Contains(err.Error(), w.want) {
					t.Fatalf("error %q, want %q", err, w.want)
				}
			})
		}
	}
}

// TestECKeyLifecycle: an EC key is listed, takes its certificate (a
// certificate for another key is refused), makes a CSR with its own
// algorithm and is destroyed with everything under its ID.
func TestECKeyLifecycle(t *testing.T) {
	ctx := context.Background()
	requireEC(t, "P-384")
	info, err := shared.GenerateEC(ctx, "ec-lifecycle", elliptic.P384())
	if err != nil {
		lacksIfUnsupported(t, "CKM_EC_KEY_PAIR_GEN on P-384", err)
		t.Fatal(err)
	}
	keys, err := shared.Keys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, k := range keys {
		if string(k.ID) == string(info.ID) {
			found = k.Bits == 384 && k.Label == "ec-lifecycle" && k.Public.(*ecdsa.PublicKey).Equal(info.Public)
		}
	}
	if !found {
		t.Fatalf("Keys does not list the EC key: %+v", keys)
	}
	key, csr, der := keyCSR(t, info.ID, pkix.Name{CommonName: "EC Example"})
	if csr.SignatureAlgorithm != x509.ECDSAWithSHA384 || csr.CheckSignature() != nil || !key.Public().(*ecdsa.PublicKey).Equal(csr.PublicKey) {
		t.Fatalf("CSR: algorithm %v, signature %v", csr.SignatureAlgorithm, csr.CheckSignature())
	}
	file := filepath.Join(t.TempDir(), "csr.pem")
	writePEM(t, file, "CERTIFICATE REQUEST", der)
	if out, err := exec.Command("openssl", "req", "-verify", "-noout", "-in", file).CombinedOutput(); err != nil || !strings.Contains(string(out), "verify OK") {
		t.Fatalf("openssl req -verify: %v: %s", err, out)
	}
	ca := certstatustest.New(t, "signd test CA", nil)
	if err := shared.ImportCertificate(ctx, info.ID, "", ca.Issue(t, csr.PublicKey, certstatustest.Leaf{Subject: pkix.Name{CommonName: "EC Example"}})); err != nil {
		t.Fatal(err)
	}
	other := ecKey(t, "P-384")
	if err := shared.ImportCertificate(ctx, info.ID, "", ca.Issue(t, other.Public, certstatustest.Leaf{Subject: pkix.Name{CommonName: "Other"}})); !errors.Is(err, ErrCertKeyMismatch) {
		t.Errorf("certificate of another EC key: %v, want ErrCertKeyMismatch", err)
	}
	if err := shared.DestroyKey(ctx, info.ID); err != nil {
		t.Fatal(err)
	}
	if n := countObjects(t, shared, []*pkcs11.Attribute{pkcs11.NewAttribute(pkcs11.CKA_ID, info.ID)}); n != 0 {
		t.Errorf("%d objects left under the destroyed key's ID", n)
	}
	if _, err := shared.SignDigest(ctx, info.ID, crypto.SHA256, digestOf(crypto.SHA256, nil)); !errors.Is(err, ErrKeyNotFound) {
		t.Errorf("sign with the destroyed key: %v", err)
	}
}
