package softtoken_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha512"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"testing"

	"github.com/signd/signd/hsm"
	"github.com/signd/signd/hsm/hsmtest/softtoken"
)

// TestAlgorithms: the software token signs what *hsm.Token signs, with
// the same refusals.
func TestAlgorithms(t *testing.T) {
	ctx := context.Background()
	tok, rsaKey := newKey(t, softtoken.Options{})
	ec256, err := tok.GenerateEC(ctx, "ec-256", elliptic.P256())
	if err != nil {
		t.Fatal(err)
	}
	ec384, err := tok.GenerateEC(ctx, "ec-384", elliptic.P384())
	if err != nil {
		t.Fatal(err)
	}
	ec521, err := tok.GenerateEC(ctx, "ec-521", elliptic.P521())
	if err != nil {
		t.Fatal(err)
	}
	if ec256.Bits != 256 || ec384.Bits != 384 || ec521.Bits != 521 {
		t.Fatalf("EC key sizes %d, %d, %d", ec256.Bits, ec384.Bits, ec521.Bits)
	}
	if _, err := tok.GenerateEC(ctx, "ec-224", elliptic.P224()); !errors.Is(err, hsm.ErrUnsupportedAlgorithm) {
		t.Errorf("P-224: %v", err)
	}
	if _, err := tok.GenerateEC(ctx, "ec-256", elliptic.P256()); !errors.Is(err, hsm.ErrLabelExists) {
		t.Errorf("label in use: %v", err)
	}
	d384 := sha512.Sum384([]byte("x"))
	pss := &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash, Hash: crypto.SHA384}

	sig, err := tok.SignDigestOpts(ctx, rsaKey.ID, pss, d384[:])
	if err != nil {
		t.Fatal(err)
	}
	if err := rsa.VerifyPSS(rsaKey.Public.(*rsa.PublicKey), crypto.SHA384, d384[:], sig, &rsa.PSSOptions{SaltLength: 48, Hash: crypto.SHA384}); err != nil {
		t.Errorf("PSS: %v", err)
	}
	for _, k := range []*hsm.KeyInfo{ec256, ec384, ec521} {
		sig, err := tok.SignDigest(ctx, k.ID, crypto.SHA384, d384[:])
		if err != nil || !ecdsa.VerifyASN1(k.Public.(*ecdsa.PublicKey), d384[:], sig) {
			t.Errorf("ECDSA P-%d: %v", k.Bits, err)
		}
	}
	for name, tc := range map[string]struct {
		id   []byte
		opts crypto.SignerOpts
		want error
	}{
		"PSS on EC":   {ec256.ID, pss, hsm.ErrUnsupportedAlgorithm},
		"PSS salt 20": {rsaKey.ID, &rsa.PSSOptions{SaltLength: 20, Hash: crypto.SHA384}, hsm.ErrUnsupportedAlgorithm},
		"short":       {ec256.ID, crypto.SHA512, hsm.ErrBadDigest},
	} {
		if sig, err := tok.SignDigestOpts(ctx, tc.id, tc.opts, d384[:]); !errors.Is(err, tc.want) || !hsm.NotSigned(err) || sig != nil {
			t.Errorf("%s: %v (NotSigned %v)", name, err, hsm.NotSigned(err))
		}
	}

	// A CSR through the EC key's crypto.Signer.
	key, err := tok.Key(ctx, ec384.ID)
	if err != nil {
		t.Fatal(err)
	}
	der, err := hsm.CreateCSR(key, pkix.Name{CommonName: "EC"})
	if err != nil {
		t.Fatal(err)
	}
	csr, err := x509.ParseCertificateRequest(der)
	if err != nil || csr.SignatureAlgorithm != x509.ECDSAWithSHA384 || csr.CheckSignature() != nil {
		t.Fatalf("CSR: %v %v", err, csr.SignatureAlgorithm)
	}
	if _, err := key.Sign(rand.Reader, d384[:], pss); !errors.Is(err, hsm.ErrUnsupportedAlgorithm) {
		t.Errorf("Key.Sign PSS on EC: %v", err)
	}
	keys, err := tok.Keys(ctx)
	if err != nil || len(keys) != 4 {
		t.Fatalf("Keys: %d, %v", len(keys), err)
	}
}
