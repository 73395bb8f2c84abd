package scheme

import (
	"bytes"
	"context"
	"crypto"
	"fmt"
	"io"

	"github.com/signd/signd/hsm/ckr"
	"github.com/signd/signd/hsm/keyobj"
)

// Key is an RSA or EC private key on the token. It implements
// crypto.Signer: RSA PKCS#1 v1.5 (opts a crypto.Hash) or RSASSA-PSS (opts
// *rsa.PSSOptions) for an RSA key, ECDSA with a DER ECDSA-Sig-Value for an
// EC key, over SHA-256, SHA-384 or SHA-512 digests. It is safe for
// concurrent use and survives recovery: the token handle is looked up
// again when needed.
type Key struct {
	t     DigestSigner
	id    []byte
	label string
	pub   crypto.PublicKey
}

// DigestSigner signs a digest with the key whose ID is id, as
// hsm.Token.SignDigestOpts does: what a Key signs with.
type DigestSigner interface {
	SignDigestOpts(ctx context.Context, id []byte, opts crypto.SignerOpts, digest []byte) ([]byte, error)
}

// NewKey returns the Key with ID id, label and public key pub (an
// *rsa.PublicKey or *ecdsa.PublicKey) that s signs with. hsm.Token.Key finds
// its keys itself; NewKey serves another DigestSigner that keeps the same
// contract, such as a software token in tests.
func NewKey(s DigestSigner, id []byte, label string, pub crypto.PublicKey) *Key {
	return &Key{t: s, id: bytes.Clone(id), label: label, pub: pub}
}

var _ crypto.Signer = (*Key)(nil)

// ID returns the key's CKA_ID.
func (k *Key) ID() []byte { return bytes.Clone(k.id) }

// Label returns the key's CKA_LABEL.
func (k *Key) Label() string { return k.label }

// Public returns the *rsa.PublicKey or *ecdsa.PublicKey.
func (k *Key) Public() crypto.PublicKey { return k.pub }

// Bits returns the modulus size (RSA) or the curve size (EC).
func (k *Key) Bits() int { return keyobj.KeyBits(k.pub) }

// Sign signs digest, a hash of opts.HashFunc(): see Key. rand is ignored:
// the token supplies any randomness. The wait for a session is bounded by
// Config.AcquireTimeout only; use SignDigest to bound it by a context.
func (k *Key) Sign(_ io.Reader, digest []byte, opts crypto.SignerOpts) ([]byte, error) {
	if opts == nil {
		return nil, fmt.Errorf("%w: no hash given", ckr.ErrUnsupportedAlgorithm)
	}
	return k.t.SignDigestOpts(context.Background(), k.id, opts, digest)
}

// SignDigest is Sign with a context bounding the wait for a session.
func (k *Key) SignDigest(ctx context.Context, hash crypto.Hash, digest []byte) ([]byte, error) {
	return k.t.SignDigestOpts(ctx, k.id, hash, digest)
}
