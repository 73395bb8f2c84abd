package oidc

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/asn1"
	"math/big"
	"testing"
)

// jwsECDSA turns the HSM's DER ECDSA-Sig-Value into the 64 bytes of R and
// S that JWS ES256 sends (RFC 7518 §3.4), left-padding a short R or S, and
// refuses anything but one SEQUENCE of two integers in 1..N-1.
func TestJWSECDSA(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	digest := sha256.Sum256([]byte("signing input"))
	// A signature whose R is shorter than 32 bytes (about 1 in 256).
	var r, s *big.Int
	for i := 0; ; i++ {
		if r, s, err = ecdsa.Sign(rand.Reader, key, digest[:]); err != nil {
			t.Fatal(err)
		}
		if len(r.Bytes()) < 32 {
			break
		}
		if i > 100000 {
			t.Fatal("no short R in 100000 signatures")
		}
	}
	der := func(r, s *big.Int) []byte {
		b, err := asn1.Marshal(struct{ R, S *big.Int }{r, s})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	raw, err := jwsECDSA(&key.PublicKey, der(r, s))
	if err != nil || len(raw) != 64 {
		t.Fatalf("short R: %d bytes, %v", len(raw), err)
	}
	if !ecdsa.Verify(&key.PublicKey, digest[:], new(big.Int).SetBytes(raw[:32]), new(big.Int).SetBytes(raw[32:])) {
		t.Error("the R‖S form does not verify")
	}
	sk := &signingKey{alg: "ES256", pub: &key.PublicKey}
	if err := sk.verify(digest[:], raw); err != nil {
		t.Errorf("verify: %v", err)
	}
	if err := sk.verify(digest[:], der(r, s)); err == nil {
		t.Error("verify accepted the DER form, which JWS relying parties refuse")
	}

	n := elliptic.P256().Params().N
	bad := []struct {
		name string
		der  []byte
	}{
		{"empty", nil},
		{"trailing byte", append(der(r, s), 0)},
		{"not a sequence", []byte{0x02, 0x01, 0x01}},
		{"R zero", der(big.NewInt(0), s)},
		{"R negative", der(big.NewInt(-1), s)},
		{"S equal to N", der(r, n)},
		{"R longer than the curve", der(new(big.Int).Lsh(big.NewInt(1), 300), s)},
	}
	for _, tt := range bad {
		if out, err := jwsECDSA(&key.PublicKey, tt.der); err == nil {
			t.Errorf("%s: accepted as %x", tt.name, out)
		}
	}
}
