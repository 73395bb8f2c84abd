package hsm

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/asn1"
	"errors"
	"fmt"
	"math/big"

	"github.com/miekg/pkcs11"
)

// Named curves (RFC 5480 §2.1.1.1) the token may hold keys on.
var (
	oidP256 = asn1.ObjectIdentifier{1, 2, 840, 10045, 3, 1, 7}
	oidP384 = asn1.ObjectIdentifier{1, 3, 132, 0, 34}
	oidP521 = asn1.ObjectIdentifier{1, 3, 132, 0, 35}
)

// curveParams returns the DER CKA_EC_PARAMS (a namedCurve OID) of a
// supported curve: P-256, P-384 or P-521.
func curveParams(c elliptic.Curve) ([]byte, error) {
	switch c {
	case elliptic.P256():
		return asn1.Marshal(oidP256)
	case elliptic.P384():
		return asn1.Marshal(oidP384)
	case elliptic.P521():
		return asn1.Marshal(oidP521)
	}
	name := "nil"
	if c != nil {
		name = c.Params().Name
	}
	return nil, fmt.Errorf("%w: curve %s (P-256, P-384 or P-521)", ErrUnsupportedAlgorithm, name)
}

// curveOf parses CKA_EC_PARAMS: only the named curves P-256, P-384 and
// P-521.
func curveOf(params []byte) (elliptic.Curve, error) {
	var oid asn1.ObjectIdentifier
	if rest, err := asn1.Unmarshal(params, &oid); err != nil || len(rest) != 0 {
		return nil, errors.New("hsm: EC key whose CKA_EC_PARAMS is not a named curve")
	}
	switch {
	case oid.Equal(oidP256):
		return elliptic.P256(), nil
	case oid.Equal(oidP384):
		return elliptic.P384(), nil
	case oid.Equal(oidP521):
		return elliptic.P521(), nil
	}
	return nil, fmt.Errorf("%w: EC key on curve %v (P-256, P-384 or P-521)", ErrKeyPolicy, oid)
}

// ecPublic builds a public key from CKA_EC_PARAMS and CKA_EC_POINT. The
// point is a DER OCTET STRING holding the uncompressed point (PKCS#11
// v2.40 §2.3.3); a bare point is accepted too, as some tokens return it.
func ecPublic(params, point []byte) (*ecdsa.PublicKey, error) {
	curve, err := curveOf(params)
	if err != nil {
		return nil, err
	}
	if len(point) == 0 {
		return nil, fmt.Errorf("%w: EC key without CKA_EC_POINT", errUnusablePublic)
	}
	var raw []byte
	if rest, err := asn1.Unmarshal(point, &raw); err != nil || len(rest) != 0 {
		raw = point
	}
	pub, err := ecdsa.ParseUncompressedPublicKey(curve, raw)
	if err != nil {
		return nil, fmt.Errorf("%w: EC key with an unusable CKA_EC_POINT: %w", errUnusablePublic, err)
	}
	return pub, nil
}

// errUnusablePublic means the token returned a public key that does not
// parse (tpm2-pkcs11 1.9 returns a malformed CKA_EC_POINT for P-521).
var errUnusablePublic = errors.New("hsm: unusable public key")

// IsEC reports whether pub is an ECDSA public key.
func IsEC(pub crypto.PublicKey) bool {
	_, ok := pub.(*ecdsa.PublicKey)
	return ok
}

// KeyBits is the size of a public key: the RSA modulus or the EC curve
// (256 for Ed25519); 0 for another type.
func KeyBits(pub crypto.PublicKey) int {
	switch p := pub.(type) {
	case *rsa.PublicKey:
		return p.N.BitLen()
	case *ecdsa.PublicKey:
		return p.Curve.Params().BitSize
	case ed25519.PublicKey:
		return 256
	}
	return 0
}

// publicEqual reports whether a and b are the same public key.
func publicEqual(a, b crypto.PublicKey) bool {
	e, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && a != nil && e.Equal(b)
}

// ecdsaDER turns the r‖s of CKM_ECDSA (PKCS#11 v2.40 §2.3.1: two integers
// of the curve's byte length each) into the DER ECDSA-Sig-Value of RFC
// 5480 §2.2.3 / RFC 3279 §2.2.3 that X.509, CMS and every CSC client expect.
func ecdsaDER(pub *ecdsa.PublicKey, rs []byte) ([]byte, error) {
	n := (pub.Curve.Params().BitSize + 7) / 8
	if len(rs) != 2*n {
		return nil, fmt.Errorf("hsm: CKM_ECDSA returned %d bytes, want %d", len(rs), 2*n)
	}
	return asn1.Marshal(struct{ R, S *big.Int }{
		new(big.Int).SetBytes(rs[:n]), new(big.Int).SetBytes(rs[n:]),
	})
}

// GenerateEC generates an ECDSA key pair on curve (P-256, P-384 or P-521) inside
// the token, labelled label, with a random 16-byte CKA_ID, under the same
// template rules as GenerateRSA (CKM_EC_KEY_PAIR_GEN with CKA_EC_PARAMS).
// The public key is read back and checked.
func (t *Token) GenerateEC(ctx context.Context, label string, curve elliptic.Curve) (*KeyInfo, error) {
	params, err := curveParams(curve)
	if err != nil {
		return nil, err
	}
	if err := t.caps.CheckEC(curve); err != nil {
		return nil, fmt.Errorf("hsm: generate EC key: %w", err)
	}
	pubT := []*pkcs11.Attribute{
		pkcs11.NewAttribute(pkcs11.CKA_CLASS, pkcs11.CKO_PUBLIC_KEY),
		pkcs11.NewAttribute(pkcs11.CKA_KEY_TYPE, pkcs11.CKK_EC),
		pkcs11.NewAttribute(pkcs11.CKA_TOKEN, true),
		pkcs11.NewAttribute(pkcs11.CKA_VERIFY, true),
		pkcs11.NewAttribute(pkcs11.CKA_DERIVE, false),
		pkcs11.NewAttribute(pkcs11.CKA_EC_PARAMS, params),
		pkcs11.NewAttribute(pkcs11.CKA_MODIFIABLE, false),
	}
	mech := pkcs11.NewMechanism(pkcs11.CKM_EC_KEY_PAIR_GEN, nil)
	what := fmt.Sprintf("an EC key on %s (%d bits)", curve.Params().Name, curve.Params().BitSize)
	return t.generate(ctx, "EC", what, label, mech, pubT, pkcs11.CKK_EC, func(pub crypto.PublicKey) error {
		if p, ok := pub.(*ecdsa.PublicKey); !ok || p.Curve != curve {
			return fmt.Errorf("hsm: token generated %T, asked for an EC key on %s", pub, curve.Params().Name)
		}
		return nil
	})
}

// newKeyID returns a fresh CKA_ID.
func newKeyID() ([]byte, error) {
	id := make([]byte, idLen)
	if _, err := rand.Read(id); err != nil {
		return nil, fmt.Errorf("hsm: key ID: %w", err)
	}
	return id, nil
}
