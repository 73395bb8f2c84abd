package hsm

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"fmt"

	"github.com/miekg/pkcs11"
	"github.com/signd/signd/hsm/keyobj"
)

// GenerateEC generates an ECDSA key pair on curve (P-256, P-384 or P-521) inside
// the token, labelled label, with a random 16-byte CKA_ID, under the same
// template rules as GenerateRSA (CKM_EC_KEY_PAIR_GEN with CKA_EC_PARAMS).
// The public key is read back and checked.
func (t *Token) GenerateEC(ctx context.Context, label string, curve elliptic.Curve) (*KeyInfo, error) {
	params, err := keyobj.CurveParams(curve)
	if err != nil {
		return nil, err
	}
	if err := t.caps.CheckEC(curve); err != nil {
		return nil, fmt.Errorf("hsm: generate EC key: %w", err)
	}
	mech := pkcs11.NewMechanism(pkcs11.CKM_EC_KEY_PAIR_GEN, nil)
	what := fmt.Sprintf("an EC key on %s (%d bits)", curve.Params().Name, curve.Params().BitSize)
	return t.generate(ctx, "EC", what, label, mech, keyobj.ECPublicTemplate(params), pkcs11.CKK_EC, func(pub crypto.PublicKey) error {
		if p, ok := pub.(*ecdsa.PublicKey); !ok || p.Curve != curve {
			return fmt.Errorf("hsm: token generated %T, asked for an EC key on %s", pub, curve.Params().Name)
		}
		return nil
	})
}

// IsEC reports whether pub is an ECDSA public key.
func IsEC(pub crypto.PublicKey) bool { return keyobj.IsEC(pub) }

// KeyBits is the size of a public key: the RSA modulus or the EC curve
// (256 for Ed25519); 0 for another type.
func KeyBits(pub crypto.PublicKey) int { return keyobj.KeyBits(pub) }
