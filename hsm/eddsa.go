package hsm

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ed25519"
	"fmt"
	"io"
	"time"

	"github.com/miekg/pkcs11"
	"github.com/signd/signd/hsm/ckr"
	"github.com/signd/signd/hsm/keyobj"
)

// CanEd25519 reports whether the token generates Ed25519 key pairs
// (CKM_EC_EDWARDS_KEY_PAIR_GEN with CKF_GENERATE_KEY_PAIR) and signs with
// them (CKM_EDDSA with CKF_SIGN), asking C_GetMechanismInfo; a mechanism
// the token does not know (CKR_MECHANISM_INVALID) is a no, not an error.
// SoftHSM2 2.6 has both; opencryptoki 3.8 and tpm2-pkcs11 1.9 have
// neither. The answer is not cached: only the audit key's creation asks.
func (t *Token) CanEd25519(ctx context.Context) (bool, error) {
	var can bool
	err := t.run(ctx, "probe Ed25519", func(pkcs11.SessionHandle) error {
		can = false
		for _, m := range []struct {
			typ  uint
			flag uint
		}{{keyobj.CKMECEdwardsKeyPairGen, pkcs11.CKF_GENERATE_KEY_PAIR}, {keyobj.CKMEdDSA, pkcs11.CKF_SIGN}} {
			mi, err := t.lib.GetMechanismInfo(t.slot, []*pkcs11.Mechanism{pkcs11.NewMechanism(m.typ, nil)})
			if ckr.RV(err) == pkcs11.CKR_MECHANISM_INVALID {
				return nil
			}
			if err != nil {
				return ckr.Wrap("C_GetMechanismInfo", err)
			}
			if mi.Flags&m.flag == 0 {
				return nil
			}
		}
		can = true
		return nil
	})
	return can, err
}

// GenerateEd25519 generates an Ed25519 key pair inside the token,
// labelled label, with a random 16-byte CKA_ID, under the template rules
// of GenerateRSA (sensitive, never extractable, can only sign, frozen; the
// freeze tested). The public key is read back and checked. A token
// without the mechanisms is refused before it is asked
// (ErrUnsupportedAlgorithm naming them; see CanEd25519).
func (t *Token) GenerateEd25519(ctx context.Context, label string) (*KeyInfo, error) {
	can, err := t.CanEd25519(ctx)
	if err != nil {
		return nil, err
	}
	if !can {
		return nil, fmt.Errorf("hsm: generate Ed25519 key: %w: %s has no CKM_EC_EDWARDS_KEY_PAIR_GEN with CKM_EDDSA: Ed25519 keys cannot be made on it", ErrUnsupportedAlgorithm, t.caps.Token())
	}
	mech := pkcs11.NewMechanism(keyobj.CKMECEdwardsKeyPairGen, nil)
	return t.generate(ctx, "Ed25519", "an Ed25519 key", label, mech, keyobj.EdwardsPublicTemplate(), keyobj.CKKECEdwards, func(pub crypto.PublicKey) error {
		if _, ok := pub.(ed25519.PublicKey); !ok {
			return fmt.Errorf("hsm: token generated %T, asked for an Ed25519 key", pub)
		}
		return nil
	})
}

// KeyByLabel returns the key pair whose private key is labelled label:
// RSA, EC or Ed25519. Labels are for keys found by a fixed name, such as
// the audit key; every other key is found by its CKA_ID. No key with the
// label is ErrKeyNotFound, two are ErrAmbiguousKey. It does not apply the
// key policy: the signer (Key, Ed25519Key) does.
func (t *Token) KeyByLabel(ctx context.Context, label string) (*KeyInfo, error) {
	if err := keyobj.CheckLabel(label); err != nil {
		return nil, err
	}
	var info *KeyInfo
	err := t.run(ctx, "find key by label", func(s pkcs11.SessionHandle) error {
		hs, err := t.obj.Find(s, []*pkcs11.Attribute{
			pkcs11.NewAttribute(pkcs11.CKA_CLASS, pkcs11.CKO_PRIVATE_KEY),
			pkcs11.NewAttribute(pkcs11.CKA_TOKEN, true),
			pkcs11.NewAttribute(pkcs11.CKA_LABEL, label),
		}, 2)
		switch {
		case err != nil:
			return err
		case len(hs) == 0:
			if err := t.checkNotFound(s); err != nil {
				return err
			}
			return fmt.Errorf("%w: no key labelled %q on token %q", ErrKeyNotFound, label, t.label)
		case len(hs) > 1:
			return fmt.Errorf("%w: label %q on token %q", ErrAmbiguousKey, label, t.label)
		}
		v, err := t.obj.Attrs(s, hs[0], pkcs11.CKA_ID, pkcs11.CKA_KEY_TYPE)
		if err != nil {
			return err
		}
		pub, err := t.obj.ReadPublic(s, hs[0], v[pkcs11.CKA_KEY_TYPE], v[pkcs11.CKA_ID])
		if err != nil {
			return fmt.Errorf("key labelled %q: %w", label, err)
		}
		info = &KeyInfo{ID: bytes.Clone(v[pkcs11.CKA_ID]), Label: label, Bits: KeyBits(pub), Public: pub}
		return nil
	})
	return info, err
}

// Ed25519Key is an Ed25519 private key on the token. It implements
// crypto.Signer the way crypto/ed25519 does: Sign signs the message
// itself (opts.HashFunc() must be 0, pure Ed25519). It is safe for
// concurrent use and survives recovery.
type Ed25519Key struct {
	t     *Token
	id    []byte
	label string
	pub   ed25519.PublicKey
}

var _ crypto.Signer = (*Ed25519Key)(nil)

// Ed25519Key returns the signer of the Ed25519 key pair with CKA_ID id,
// after the key policy of Key. A key of another type is
// ErrUnsupportedAlgorithm.
func (t *Token) Ed25519Key(ctx context.Context, id []byte) (*Ed25519Key, error) {
	ck, err := t.loadKey(ctx, id)
	if err != nil {
		return nil, err
	}
	pub, ok := ck.pub.(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("hsm: load key: %w: key %x is %T, not Ed25519", ErrUnsupportedAlgorithm, id, ck.pub)
	}
	return &Ed25519Key{t: t, id: bytes.Clone(id), label: ck.label, pub: pub}, nil
}

// ID returns the key's CKA_ID.
func (k *Ed25519Key) ID() []byte { return bytes.Clone(k.id) }

// Label returns the key's CKA_LABEL.
func (k *Ed25519Key) Label() string { return k.label }

// Public returns the ed25519.PublicKey.
func (k *Ed25519Key) Public() crypto.PublicKey { return k.pub }

// Sign signs message with pure Ed25519 (RFC 8032 §5.1.6). rand is ignored
// (Ed25519 is deterministic), opts.HashFunc() must be 0: Ed25519ph and
// Ed25519ctx are not offered. The wait for a session is bounded by
// Config.AcquireTimeout only; use SignMessage to bound it by a context.
func (k *Ed25519Key) Sign(_ io.Reader, message []byte, opts crypto.SignerOpts) ([]byte, error) {
	if opts != nil && opts.HashFunc() != 0 {
		return nil, fmt.Errorf("hsm: sign: %w: Ed25519 signs the message itself, not a %v digest", ErrUnsupportedAlgorithm, opts.HashFunc())
	}
	return k.t.SignEd25519(context.Background(), k.id, message)
}

// SignMessage is Sign with a context bounding the wait for a session.
func (k *Ed25519Key) SignMessage(ctx context.Context, message []byte) ([]byte, error) {
	return k.t.SignEd25519(ctx, k.id, message)
}

// maxEd25519Message bounds what SignEd25519 passes to the token in one
// C_Sign: the audit checkpoints it exists for are a few hundred bytes.
const maxEd25519Message = 64 << 10

// SignEd25519 signs message with the Ed25519 key whose CKA_ID is id
// through CKM_EDDSA (pure Ed25519; the token hashes the message itself,
// so the whole message crosses into the token, at most 64 KiB). As every
// signature of the package, it is verified with the public key before it
// is returned, and a failure before the token returned one is NotSigned.
func (t *Token) SignEd25519(ctx context.Context, id []byte, message []byte) ([]byte, error) {
	start := time.Now()
	sig, err := t.signEd25519(ctx, id, message)
	if t.metrics != nil {
		t.metrics.ObserveSign(time.Since(start), err)
	}
	return sig, err
}

func (t *Token) signEd25519(ctx context.Context, id []byte, message []byte) ([]byte, error) {
	if len(message) > maxEd25519Message {
		return nil, ckr.MarkNotSigned(fmt.Errorf("hsm: sign: %w: message of %d bytes, at most %d", ErrBadDigest, len(message), maxEd25519Message))
	}
	var sig []byte
	var pub ed25519.PublicKey
	returned := false
	err := t.run(ctx, "sign", func(s pkcs11.SessionHandle) error {
		k, err := t.keyFor(s, id)
		if err != nil {
			return err
		}
		p, ok := k.pub.(ed25519.PublicKey)
		if !ok {
			return fmt.Errorf("%w: key %x is %T, not Ed25519", ErrUnsupportedAlgorithm, id, k.pub)
		}
		if err := t.lib.SignInit(s, []*pkcs11.Mechanism{pkcs11.NewMechanism(keyobj.CKMEdDSA, nil)}, k.handle); err != nil {
			return ckr.Discard(t.refused("Ed25519 (CKM_EDDSA)", ckr.Wrap("C_SignInit", err)))
		}
		sig, err = t.lib.Sign(s, message)
		if err != nil {
			return ckr.Discard(ckr.Wrap("C_Sign", err))
		}
		returned = true
		pub = p
		return nil
	})
	if err != nil {
		if !returned {
			err = ckr.MarkNotSigned(err)
		}
		return nil, err
	}
	if len(sig) != ed25519.SignatureSize || !ed25519.Verify(pub, message, sig) {
		t.log.ErrorContext(ctx, "hsm: token returned an invalid signature", "token", t.label, "id", fmt.Sprintf("%x", id))
		return nil, fmt.Errorf("hsm: sign: token %q returned an invalid signature for key %x", t.label, id)
	}
	return sig, nil
}
