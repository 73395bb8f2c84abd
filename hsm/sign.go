package hsm

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"runtime/trace"
	"time"

	"github.com/miekg/pkcs11"
	"github.com/signd/signd/hsm/ckr"
	"github.com/signd/signd/hsm/keyobj"
	"github.com/signd/signd/hsm/scheme"
)

// Key is an RSA or EC private key on the token, a crypto.Signer (package
// scheme; Token.Key returns it).
type Key = scheme.Key

// DigestSigner signs a digest with the key whose ID is id, as
// Token.SignDigestOpts does: what a Key signs with.
type DigestSigner = scheme.DigestSigner

// NewKey returns the Key with ID id, label and public key pub that s
// signs with, for a DigestSigner other than Token (a software token).
func NewKey(s DigestSigner, id []byte, label string, pub crypto.PublicKey) *Key {
	return scheme.NewKey(s, id, label, pub)
}

// CreateCSR returns a DER PKCS#10 request for subject, signed by signer
// (normally a *Key); see scheme.CreateCSR.
func CreateCSR(signer crypto.Signer, subject pkix.Name) ([]byte, error) {
	return scheme.CreateCSR(signer, subject)
}

// SignDigest signs digest, a hash of hash, with the key whose CKA_ID is id,
// in the key's plain scheme: RSA PKCS#1 v1.5 for an RSA key, ECDSA for an
// EC key. It is SignDigestOpts with opts hash.
func (t *Token) SignDigest(ctx context.Context, id []byte, hash crypto.Hash, digest []byte) ([]byte, error) {
	return t.SignDigestOpts(ctx, id, hash, digest)
}

// SignDigestOpts signs digest, a hash of opts.HashFunc(), with the key
// whose CKA_ID is id:
//
//   - RSA key, opts a crypto.Hash: PKCS#1 v1.5 through CKM_RSA_PKCS over a
//     DigestInfo built for this call (RFC 8017 §9.2);
//   - RSA key, opts *rsa.PSSOptions: RSASSA-PSS through CKM_RSA_PKCS_PSS,
//     MGF1 with the same hash and a salt as long as the hash (RFC 8017
//     §9.1; SaltLength rsa.PSSSaltLengthEqualsHash or the hash size) or
//     the longest the key allows (SaltLength the modulus bytes minus the
//     hash size minus 2, as PDF signers such as pyHanko ask);
//   - EC key (P-256, P-384, P-521), opts a crypto.Hash: ECDSA through CKM_ECDSA;
//     the token's r‖s is returned as a DER ECDSA-Sig-Value (RFC 5480).
//
// The hash must be SHA-256, SHA-384 or SHA-512 and PSS only on an RSA key
// (else ErrUnsupportedAlgorithm), digest exactly the hash's size (else
// ErrBadDigest). ctx bounds the wait for a session (ErrBusy); the PKCS#11
// calls themselves cannot be cancelled. Every signature is verified
// against the public key before it is returned, so a faulty token cannot
// leak the key through a bad RSA-CRT result or a broken ECDSA nonce.
func (t *Token) SignDigestOpts(ctx context.Context, id []byte, opts crypto.SignerOpts, digest []byte) ([]byte, error) {
	start := time.Now()
	sig, err := t.signDigest(ctx, id, opts, digest)
	if t.metrics != nil {
		t.metrics.ObserveSign(time.Since(start), err)
	}
	return sig, err
}

func (t *Token) signDigest(ctx context.Context, id []byte, opts crypto.SignerOpts, digest []byte) ([]byte, error) {
	sc, err := scheme.Check(opts, digest)
	if err != nil {
		return nil, ckr.MarkNotSigned(fmt.Errorf("hsm: sign: %w", err))
	}
	var sig []byte
	var pub crypto.PublicKey
	// returned: the token handed a signature back (C_Sign succeeded).
	// Until then no signature exists outside the token, whatever failed.
	returned := false
	err = t.run(ctx, "sign", func(s pkcs11.SessionHandle) error {
		k, err := t.keyFor(s, id)
		if err != nil {
			return err
		}
		mech, data, err := sc.Mechanism(k.pub, digest)
		if err != nil {
			return err
		}
		if err := t.lib.SignInit(s, []*pkcs11.Mechanism{mech}, k.handle); err != nil {
			return ckr.Discard(t.signRefused(sc, k.pub, ckr.Wrap("C_SignInit", err)))
		}
		sig, err = t.lib.Sign(s, data)
		if err != nil {
			return ckr.Discard(ckr.Wrap("C_Sign", err))
		}
		returned = true
		pub = k.pub
		return nil
	})
	if err != nil {
		if !returned {
			err = ckr.MarkNotSigned(err)
		}
		return nil, err
	}
	if ec, ok := pub.(*ecdsa.PublicKey); ok {
		if sig, err = keyobj.ECDSADER(ec, sig); err != nil {
			t.log.ErrorContext(ctx, "hsm: token returned a malformed signature", "token", t.label, "id", fmt.Sprintf("%x", id))
			return nil, fmt.Errorf("hsm: sign: token %q returned a malformed signature for key %x: %w", t.label, id, err)
		}
	}
	if err := sc.Verify(pub, digest, sig); err != nil {
		t.log.ErrorContext(ctx, "hsm: token returned an invalid signature", "token", t.label, "id", fmt.Sprintf("%x", id))
		return nil, fmt.Errorf("hsm: sign: token %q returned an invalid signature for key %x", t.label, id)
	}
	return sig, nil
}

// SignDigests signs each of digests, hashes of opts.HashFunc(), with the
// key whose CKA_ID is id, as SignDigestOpts does, one after the other on
// one pooled session: the key is looked up once and the session taken from
// the pool once for the whole batch. It returns the signatures in the
// order of digests, each verified against the public key, or an error and
// no signature at all.
//
// An error satisfies NotSigned only when the token returned no signature
// of the batch: every digest is checked before the token is asked
// anything, and a failure of the first C_SignInit or C_Sign is NotSigned as
// in SignDigestOpts. A failure after the token returned a signature is not
// NotSigned, even when the failing call itself made none: signatures of
// the batch exist. When the session is lost midway and replaced, the batch
// goes on with the first digest not yet signed; no digest is signed twice.
func (t *Token) SignDigests(ctx context.Context, id []byte, opts crypto.SignerOpts, digests [][]byte) ([][]byte, error) {
	start := time.Now()
	sigs, err := t.signDigests(ctx, id, opts, digests)
	if t.metrics != nil {
		t.metrics.ObserveSign(time.Since(start), err)
	}
	return sigs, err
}

func (t *Token) signDigests(ctx context.Context, id []byte, opts crypto.SignerOpts, digests [][]byte) ([][]byte, error) {
	if len(digests) == 0 {
		return nil, ckr.MarkNotSigned(fmt.Errorf("hsm: sign: %w: no digest given", ErrBadDigest))
	}
	var sc scheme.Scheme
	for i, digest := range digests {
		var err error
		if sc, err = scheme.Check(opts, digest); err != nil {
			return nil, ckr.MarkNotSigned(fmt.Errorf("hsm: sign: digest %d: %w", i, err))
		}
	}
	// sigs holds what the token returned so far; a retry of the closure
	// on a fresh session goes on after them.
	sigs := make([][]byte, 0, len(digests))
	var pub crypto.PublicKey
	err := t.run(ctx, "sign", func(s pkcs11.SessionHandle) error {
		k, err := t.keyFor(s, id)
		if err != nil {
			return err
		}
		pub = k.pub
		for len(sigs) < len(digests) {
			mech, data, err := sc.Mechanism(k.pub, digests[len(sigs)])
			if err != nil {
				return err
			}
			if err := t.lib.SignInit(s, []*pkcs11.Mechanism{mech}, k.handle); err != nil {
				return ckr.Discard(t.signRefused(sc, k.pub, ckr.Wrap("C_SignInit", err)))
			}
			sig, err := t.lib.Sign(s, data)
			if err != nil {
				return ckr.Discard(ckr.Wrap("C_Sign", err))
			}
			sigs = append(sigs, sig)
		}
		return nil
	})
	if err != nil {
		if len(sigs) == 0 {
			return nil, ckr.MarkNotSigned(err)
		}
		return nil, fmt.Errorf("%w (after %d of %d signatures)", err, len(sigs), len(digests))
	}
	defer trace.StartRegion(ctx, "hsm.verify").End()
	for i, sig := range sigs {
		if ec, ok := pub.(*ecdsa.PublicKey); ok {
			if sig, err = keyobj.ECDSADER(ec, sig); err != nil {
				t.log.ErrorContext(ctx, "hsm: token returned a malformed signature", "token", t.label, "id", fmt.Sprintf("%x", id))
				return nil, fmt.Errorf("hsm: sign: token %q returned a malformed signature for key %x: %w", t.label, id, err)
			}
			sigs[i] = sig
		}
		if err := sc.Verify(pub, digests[i], sig); err != nil {
			t.log.ErrorContext(ctx, "hsm: token returned an invalid signature", "token", t.label, "id", fmt.Sprintf("%x", id))
			return nil, fmt.Errorf("hsm: sign: token %q returned an invalid signature for key %x", t.label, id)
		}
	}
	return sigs, nil
}

// signRefused turns a C_SignInit refusal of the scheme (a mechanism or
// parameter the token does not take: tpm2-pkcs11 refuses the longest PSS
// salt with CKR_MECHANISM_PARAM_INVALID) into ErrUnsupportedAlgorithm and
// remembers it, so that CheckSign refuses the scheme on keys of that size
// before anything is spent. Other errors pass through. Callers discard
// the session: tpm2-pkcs11 keeps a half-started operation on it after a
// refused C_SignInit, and then refuses to destroy the key
// (CKR_FUNCTION_FAILED) while that session lives.
func (t *Token) signRefused(sc scheme.Scheme, pub crypto.PublicKey, err error) error {
	rerr := t.refused(sc.String()+" with a "+fmt.Sprint(KeyBits(pub))+"-bit key", err)
	if ckr.IsRefused(rerr) {
		t.schemeRefusals.Store(sc.Key(pub), rerr)
	}
	return rerr
}

// CheckSign is CheckKey for a signature in the scheme opts (a crypto.Hash
// or *rsa.PSSOptions) with the key whose CKA_ID is id: the options fit the
// key (scheme.Check, the PSS salt), the token has the mechanism
// (CKM_RSA_PKCS_PSS for PSS), and the token has not refused the scheme on
// a key of this size before. A PSS scheme not yet tried on this key size
// is tried with C_SignInit alone on a session that is then closed, so no
// signature is made. Its refusals are ErrUnsupportedAlgorithm. Options
// that do not fit the key (PSS for an EC key, a salt the key cannot
// carry) are not its business: it answers as CheckKey, and SignDigestOpts
// refuses them.
func (t *Token) CheckSign(ctx context.Context, id []byte, opts crypto.SignerOpts) error {
	if opts == nil {
		return t.CheckKey(ctx, id)
	}
	sc, err := scheme.Check(opts, make([]byte, opts.HashFunc().Size()))
	if err != nil {
		return fmt.Errorf("hsm: check key: %w", err)
	}
	err = t.run(ctx, "check key", func(s pkcs11.SessionHandle) error {
		k, err := t.keyFor(s, id)
		if err != nil {
			return err
		}
		mech, _, err := sc.Mechanism(k.pub, make([]byte, sc.Hash.Size()))
		if err != nil {
			return nil // a scheme for another key type: the caller's to refuse, as SignDigestOpts does
		}
		if sc.PSS && !t.caps.CanPSS() {
			return fmt.Errorf("%w: %s has no CKM_RSA_PKCS_PSS: RSASSA-PSS cannot be signed on it", ErrUnsupportedAlgorithm, t.caps.Token())
		}
		if r, ok := t.schemeRefusals.Load(sc.Key(k.pub)); ok {
			return r.(error)
		}
		if !sc.PSS {
			return nil
		}
		if _, ok := t.schemeAccepted.Load(sc.Key(k.pub)); ok {
			return nil
		}
		if err := t.lib.SignInit(s, []*pkcs11.Mechanism{mech}, k.handle); err != nil {
			return ckr.Discard(t.signRefused(sc, k.pub, ckr.Wrap("C_SignInit", err)))
		}
		t.schemeAccepted.Store(sc.Key(k.pub), true)
		// The session now has a signature operation that nothing will
		// finish: it is closed.
		return ckr.Discard(errProbed)
	})
	if errors.Is(err, errProbed) {
		return nil
	}
	return err
}

// SignsPSS reports whether the token signs RSASSA-PSS (CKM_RSA_PKCS_PSS
// with CKF_SIGN): credentials/info lists RSASSA-PSS only then.
func (t *Token) SignsPSS() bool { return t.caps.CanPSS() }

// errProbed ends a CheckSign probe whose C_SignInit succeeded.
var errProbed = errors.New("hsm: scheme accepted by C_SignInit")

// MarkNotSigned returns err marked so that NotSigned reports true: for a
// signer other than Token, such as a software token, whose call failed
// before any signature was made. nil stays nil.
func MarkNotSigned(err error) error { return ckr.MarkNotSigned(err) }

// NotSigned reports whether err, returned by SignDigest, SignDigestOpts,
// SignDigests (or Key.Sign, Key.SignDigest), proves that no signature was
// made: the call failed
// before the token was asked to sign (token unavailable, no free session,
// key not found) or the token's C_SignInit or C_Sign failed and returned
// no signature. A caller may then give back what it spent on the attempt,
// such as a SAD. It is false for nil, for a signature the token returned
// that failed verification, and for any error it cannot vouch for: an
// unknown outcome counts as signed.
func NotSigned(err error) bool { return ckr.NotSigned(err) }

// MaxPSSSaltLength is the longest RSASSA-PSS salt a signature with pub
// over a hash of h can carry: the encoded message length minus the hash
// length minus 2 (RFC 8017 §9.1.1).
func MaxPSSSaltLength(pub *rsa.PublicKey, h crypto.Hash) int { return scheme.MaxPSSSaltLength(pub, h) }
