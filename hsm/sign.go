package hsm

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rsa"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/miekg/pkcs11"
)

// Key is an RSA private key on the token. It implements crypto.Signer with
// PKCS#1 v1.5 signatures over SHA-256, SHA-384 or SHA-512 digests. It is
// safe for concurrent use and survives recovery: the token handle is
// looked up again when needed.
type Key struct {
	t     DigestSigner
	id    []byte
	label string
	pub   *rsa.PublicKey
}

// DigestSigner signs a digest with the key whose ID is id, as
// Token.SignDigest does: what a Key signs with.
type DigestSigner interface {
	SignDigest(ctx context.Context, id []byte, hash crypto.Hash, digest []byte) ([]byte, error)
}

// NewKey returns the Key with ID id, label and public key pub that s signs
// with. Token.Key finds its keys itself; NewKey serves another DigestSigner
// that keeps the same contract, such as a software token in tests.
func NewKey(s DigestSigner, id []byte, label string, pub *rsa.PublicKey) *Key {
	return &Key{t: s, id: bytes.Clone(id), label: label, pub: pub}
}

var _ crypto.Signer = (*Key)(nil)

// ID returns the key's CKA_ID.
func (k *Key) ID() []byte { return bytes.Clone(k.id) }

// Label returns the key's CKA_LABEL.
func (k *Key) Label() string { return k.label }

// Public returns the *rsa.PublicKey.
func (k *Key) Public() crypto.PublicKey { return k.pub }

// Bits returns the modulus size.
func (k *Key) Bits() int { return k.pub.N.BitLen() }

// Sign signs digest, a hash of opts.HashFunc(), with RSA PKCS#1 v1.5. rand
// is ignored: the token supplies any randomness. *rsa.PSSOptions are
// refused. The wait for a session is bounded by Config.AcquireTimeout
// only; use SignDigest to bound it by a context.
func (k *Key) Sign(_ io.Reader, digest []byte, opts crypto.SignerOpts) ([]byte, error) {
	if opts == nil {
		return nil, fmt.Errorf("%w: no hash given", ErrUnsupportedAlgorithm)
	}
	if _, ok := opts.(*rsa.PSSOptions); ok {
		return nil, fmt.Errorf("%w: RSA-PSS", ErrUnsupportedAlgorithm)
	}
	return k.SignDigest(context.Background(), opts.HashFunc(), digest)
}

// SignDigest is Sign with a context bounding the wait for a session.
func (k *Key) SignDigest(ctx context.Context, hash crypto.Hash, digest []byte) ([]byte, error) {
	return k.t.SignDigest(ctx, k.id, hash, digest)
}

// digestInfoPrefix is the DER of DigestInfo{AlgorithmIdentifier{hash,
// NULL}, OCTET STRING} up to the digest bytes (RFC 8017 section 9.2, note
// 1).
var digestInfoPrefix = map[crypto.Hash][]byte{
	crypto.SHA256: {0x30, 0x31, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01, 0x05, 0x00, 0x04, 0x20},
	crypto.SHA384: {0x30, 0x41, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x02, 0x05, 0x00, 0x04, 0x30},
	crypto.SHA512: {0x30, 0x51, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x03, 0x05, 0x00, 0x04, 0x40},
}

// SignDigest signs digest, a hash of hash, with the key whose CKA_ID is id:
// RSA PKCS#1 v1.5 through CKM_RSA_PKCS over a DigestInfo built for this
// call. hash must be SHA-256, SHA-384 or SHA-512 (else
// ErrUnsupportedAlgorithm) and digest exactly its size (else ErrBadDigest).
// ctx bounds the wait for a session (ErrBusy); the PKCS#11 calls
// themselves cannot be cancelled. The signature is verified against the
// public key before it is returned, so a faulty token cannot leak the key
// through a bad RSA-CRT result.
func (t *Token) SignDigest(ctx context.Context, id []byte, hash crypto.Hash, digest []byte) ([]byte, error) {
	start := time.Now()
	sig, err := t.signDigest(ctx, id, hash, digest)
	if t.metrics != nil {
		t.metrics.ObserveSign(time.Since(start), err)
	}
	return sig, err
}

func (t *Token) signDigest(ctx context.Context, id []byte, hash crypto.Hash, digest []byte) ([]byte, error) {
	prefix, ok := digestInfoPrefix[hash]
	if !ok {
		return nil, &notSignedError{fmt.Errorf("hsm: sign: %w: hash %v (SHA-256, SHA-384 or SHA-512)", ErrUnsupportedAlgorithm, hash)}
	}
	if len(digest) != hash.Size() {
		return nil, &notSignedError{fmt.Errorf("hsm: sign: %w: %d bytes for %v, want %d", ErrBadDigest, len(digest), hash, hash.Size())}
	}
	data := make([]byte, 0, len(prefix)+len(digest))
	data = append(append(data, prefix...), digest...)

	mech := []*pkcs11.Mechanism{pkcs11.NewMechanism(pkcs11.CKM_RSA_PKCS, nil)}
	var sig []byte
	var pub *rsa.PublicKey
	// returned: the token handed a signature back (C_Sign succeeded).
	// Until then no signature exists outside the token, whatever failed.
	returned := false
	err := t.run(ctx, "sign", func(s pkcs11.SessionHandle) error {
		k, err := t.keyFor(s, id)
		if err != nil {
			return err
		}
		if err := t.lib.SignInit(s, mech, k.handle); err != nil {
			return ckr("C_SignInit", err)
		}
		sig, err = t.lib.Sign(s, data)
		if err != nil {
			return discard(ckr("C_Sign", err))
		}
		returned = true
		pub = k.pub
		return nil
	})
	if err != nil {
		if !returned {
			err = &notSignedError{err: err}
		}
		return nil, err
	}
	if err := rsa.VerifyPKCS1v15(pub, hash, digest, sig); err != nil {
		t.log.Error("hsm: token returned an invalid signature", "token", t.label, "id", fmt.Sprintf("%x", id))
		return nil, fmt.Errorf("hsm: sign: token %q returned an invalid signature for key %x", t.label, id)
	}
	return sig, nil
}

// notSignedError marks a SignDigest error after which no signature exists
// outside the token: the token never returned one.
type notSignedError struct{ err error }

func (e *notSignedError) Error() string { return e.err.Error() }
func (e *notSignedError) Unwrap() error { return e.err }

// MarkNotSigned returns err marked so that NotSigned reports true: for a
// signer other than Token, such as a software token, whose call failed
// before any signature was made. nil stays nil.
func MarkNotSigned(err error) error {
	if err == nil {
		return nil
	}
	return &notSignedError{err: err}
}

// NotSigned reports whether err, returned by SignDigest (or Key.Sign,
// Key.SignDigest), proves that no signature was made: the call failed
// before the token was asked to sign (token unavailable, no free session,
// key not found) or the token's C_SignInit or C_Sign failed and returned
// no signature. A caller may then give back what it spent on the attempt,
// such as a SAD. It is false for nil, for a signature the token returned
// that failed verification, and for any error it cannot vouch for: an
// unknown outcome counts as signed.
func NotSigned(err error) bool {
	var ns *notSignedError
	return errors.As(err, &ns)
}
