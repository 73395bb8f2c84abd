package tokenkeys

import (
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/x509"
	"fmt"
	"strings"

	"github.com/signd/signd/hsm"
)

// KeyStore is what Local needs of the token; *hsm.Token satisfies it.
type KeyStore interface {
	GenerateRSA(ctx context.Context, label string, bits int) (*hsm.KeyInfo, error)
	GenerateEC(ctx context.Context, label string, curve elliptic.Curve) (*hsm.KeyInfo, error)
	Key(ctx context.Context, id []byte) (*hsm.Key, error)
	DestroyKey(ctx context.Context, id []byte) error
	ImportCertificate(ctx context.Context, id []byte, label string, cert *x509.Certificate) error
	// StoreCertificates keeps the issuers of key id's certificate under
	// label (hsm.Token.StoreCertificates).
	StoreCertificates(ctx context.Context, id []byte, label string, certs []*x509.Certificate) error
}

// Enroll gives enrollment (csc/enroll.Keys) the token's keys, and keeps what the token
// does not freeze of the key it generated (hsm.KeyInfo.Defects) for the
// audit entry.
type Enroll struct {
	Keys    KeyStore
	defects []string
}

// GenerateKey implements enroll.Keys: an RSA key pair of bits.
func (k *Enroll) GenerateKey(ctx context.Context, label string, bits int) ([]byte, int, error) {
	info, err := k.Keys.GenerateRSA(ctx, label, bits)
	if err != nil {
		return nil, 0, err
	}
	k.defects = info.Defects
	return info.ID, info.Bits, nil
}

// GenerateECKey implements enroll.Keys: an EC key pair on curve.
func (k *Enroll) GenerateECKey(ctx context.Context, label string, curve elliptic.Curve) ([]byte, int, error) {
	info, err := k.Keys.GenerateEC(ctx, label, curve)
	if err != nil {
		return nil, 0, err
	}
	k.defects = info.Defects
	return info.ID, info.Bits, nil
}

// AuditNote is what the enrollment's audit entry adds about the key's
// freeze: nothing when the token keeps it.
func (k *Enroll) AuditNote() string {
	if len(k.defects) == 0 {
		return ""
	}
	return "; the token does not freeze the key: " + strings.Join(k.defects, ", ")
}

// Signer implements enroll.Keys: the key with CKA_ID id.
func (k *Enroll) Signer(ctx context.Context, id []byte) (crypto.Signer, error) {
	key, err := k.Keys.Key(ctx, id)
	if err != nil {
		return nil, err
	}
	return key, nil
}

// TokenReporter is what HSMInfo asks of the token: *hsm.Token satisfies
// it, and so does the CLI's lazily opened token.
type TokenReporter interface {
	// CheckKeys lists the token's keys with what the token does not
	// freeze of each (hsm.Token.CheckKeys).
	CheckKeys(ctx context.Context) ([]hsm.KeyInfo, error)
	// Capabilities is what the token said of itself when it was opened.
	Capabilities() *hsm.Capabilities
}

// KeyType names the type of k as HSMInfo shows it.
func KeyType(k hsm.KeyInfo) string {
	if hsm.IsEC(k.Public) {
		return fmt.Sprintf("EC P-%d", k.Bits)
	}
	if _, ok := k.Public.(ed25519.PublicKey); ok {
		return "Ed25519" // the audit key
	}
	return fmt.Sprintf("RSA-%d", k.Bits)
}
