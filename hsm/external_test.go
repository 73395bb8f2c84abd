package hsm

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
)

// The tests in this file run on the token named by SIGND_TEST_PKCS11_MODULE,
// SIGND_TEST_PKCS11_LABEL and SIGND_TEST_PKCS11_PIN (opencryptoki's soft
// token, tpm2-pkcs11 over swtpm, or any other), and skip without them.
// They make no assumption about the token's PIN rules, handle numbers or
// mechanisms: what a token lacks must be refused by name.

// externalConfig is the Config of the external token, or skips t.
func externalConfig(t testing.TB) Config {
	t.Helper()
	module, label, pin := os.Getenv("SIGND_TEST_PKCS11_MODULE"), os.Getenv("SIGND_TEST_PKCS11_LABEL"), os.Getenv("SIGND_TEST_PKCS11_PIN")
	if module == "" || label == "" || pin == "" {
		t.Skip("no external token: set SIGND_TEST_PKCS11_MODULE, SIGND_TEST_PKCS11_LABEL and SIGND_TEST_PKCS11_PIN")
	}
	return Config{Module: module, TokenLabel: label, PIN: pin}
}

// externalAlgorithms are every key type and size GenerateRSA and
// GenerateEC accept.
var externalAlgorithms = []struct {
	name  string
	bits  int            // RSA
	curve elliptic.Curve // EC
}{
	{name: "rsa-2048", bits: 2048},
	{name: "rsa-3072", bits: 3072},
	{name: "rsa-4096", bits: 4096},
	{name: "ec-p256", curve: elliptic.P256()},
	{name: "ec-p384", curve: elliptic.P384()},
	{name: "ec-p521", curve: elliptic.P521()},
}

// refusedByName matches an ErrUnsupportedAlgorithm that says what the token
// lacks: a mechanism or a key size.
var refusedByName = regexp.MustCompile(`CKM_[A-Z0-9_]+|\d+ bits|P-\d+`)

// TestExternalGenerate: on the external token every key type either is
// generated, signs and verifies, or is refused with
// ErrUnsupportedAlgorithm naming the mechanism or size the token lacks;
// RSA-2048 (what every PKCS#11 token does) must work.
func TestExternalGenerate(t *testing.T) {
	cfg := externalConfig(t)
	tok := openTest(t, cfg, options{})
	ctx := context.Background()
	made := map[string]bool{}
	for _, alg := range externalAlgorithms {
		t.Run(alg.name, func(t *testing.T) {
			label := fmt.Sprintf("ext-%s-%x", alg.name, randomID(t)[:4])
			var info *KeyInfo
			var err error
			if alg.curve != nil {
				info, err = tok.GenerateEC(ctx, label, alg.curve)
			} else {
				info, err = tok.GenerateRSA(ctx, label, alg.bits)
			}
			if err != nil {
				if !errors.Is(err, ErrUnsupportedAlgorithm) || !refusedByName.MatchString(err.Error()) {
					t.Fatalf("%s: %v: want ErrUnsupportedAlgorithm naming the missing mechanism or size", alg.name, err)
				}
				if !tok.Available() {
					t.Fatalf("a refused %s marked the token unavailable", alg.name)
				}
				t.Logf("refused: %v", err)
				return
			}
			t.Cleanup(func() {
				if err := tok.DestroyKey(ctx, info.ID); err != nil {
					t.Errorf("destroy: %v", err)
				}
			})
			made[alg.name] = true
			d := digestOf(crypto.SHA256, []byte(label))
			sig, err := tok.SignDigest(ctx, info.ID, crypto.SHA256, d)
			if err != nil {
				t.Fatalf("sign: %v", err)
			}
			switch pub := info.Public.(type) {
			case *rsa.PublicKey:
				err = rsa.VerifyPKCS1v15(pub, crypto.SHA256, d, sig)
			case *ecdsa.PublicKey:
				if !ecdsa.VerifyASN1(pub, d, sig) {
					err = errors.New("ECDSA signature does not verify")
				}
			}
			if err != nil {
				t.Fatal(err)
			}
		})
	}
	if !made["rsa-2048"] {
		t.Errorf("RSA-2048 was not generated; made %v", made)
	}
	if !tok.Available() {
		t.Error("token unavailable after the generations")
	}
}

// TestExternalSignPSS: on a token that can make RSA keys, RSASSA-PSS with
// a salt as long as the hash signs; the longest salt either signs or is
// refused as an unsupported algorithm, without marking the token down.
func TestExternalSignPSS(t *testing.T) {
	cfg := externalConfig(t)
	tok := openTest(t, cfg, options{})
	ctx := context.Background()
	info, err := tok.GenerateRSA(ctx, fmt.Sprintf("ext-pss-%x", randomID(t)[:4]), 2048)
	if err != nil {
		t.Fatal(err)
	}
	refused := false
	t.Cleanup(func() {
		err := tok.DestroyKey(ctx, info.ID)
		switch {
		case err != nil && refused && ReturnCode(err) == "CKR_FUNCTION_FAILED":
			// tpm2-pkcs11 1.9 leaves the key in use after a C_SignInit
			// it refused (the object's user count is never decremented)
			// and refuses to destroy it until the module is finalized.
			t.Logf("destroy after a refused C_SignInit: %v", err)
		case err != nil:
			t.Errorf("destroy: %v", err)
		}
	})
	pub := info.Public.(*rsa.PublicKey)
	d := digestOf(crypto.SHA256, []byte(t.Name()))
	for _, salt := range []int{rsa.PSSSaltLengthEqualsHash, MaxPSSSaltLength(pub, crypto.SHA256)} {
		opts := &rsa.PSSOptions{Hash: crypto.SHA256, SaltLength: salt}
		sig, err := tok.SignDigestOpts(ctx, info.ID, opts, d)
		if err != nil {
			if !errors.Is(err, ErrUnsupportedAlgorithm) || !NotSigned(err) || !strings.Contains(err.Error(), "salt") {
				t.Fatalf("PSS salt %d: %v: want a NotSigned ErrUnsupportedAlgorithm naming the salt", salt, err)
			}
			t.Logf("PSS salt %d refused: %v", salt, err)
			refused = true
			continue
		}
		if err := rsa.VerifyPSS(pub, crypto.SHA256, d, sig, opts); err != nil {
			t.Fatalf("PSS salt %d: %v", salt, err)
		}
	}
	if !tok.Available() {
		t.Error("token unavailable after PSS")
	}
}
