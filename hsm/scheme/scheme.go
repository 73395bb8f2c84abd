package scheme

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/rsa"
	"errors"
	"fmt"

	"github.com/miekg/pkcs11"
	"github.com/signd/signd/hsm/ckr"
	"github.com/signd/signd/hsm/keyobj"
)

// digestInfoPrefix is the DER of DigestInfo{AlgorithmIdentifier{hash,
// NULL}, OCTET STRING} up to the digest bytes (RFC 8017 section 9.2, note
// 1).
var digestInfoPrefix = map[crypto.Hash][]byte{
	crypto.SHA256: {0x30, 0x31, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01, 0x05, 0x00, 0x04, 0x20},
	crypto.SHA384: {0x30, 0x41, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x02, 0x05, 0x00, 0x04, 0x30},
	crypto.SHA512: {0x30, 0x51, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x03, 0x05, 0x00, 0x04, 0x40},
}

// pssParams are the CK_RSA_PKCS_PSS_PARAMS hash and MGF of each hash.
var pssParams = map[crypto.Hash][2]uint{
	crypto.SHA256: {pkcs11.CKM_SHA256, pkcs11.CKG_MGF1_SHA256},
	crypto.SHA384: {pkcs11.CKM_SHA384, pkcs11.CKG_MGF1_SHA384},
	crypto.SHA512: {pkcs11.CKM_SHA512, pkcs11.CKG_MGF1_SHA512},
}

// Scheme is a signature scheme, what Check made of a crypto.SignerOpts.
type Scheme struct {
	Hash crypto.Hash
	PSS  bool
	Salt int // RSASSA-PSS salt length in bytes
}

// Check checks opts and digest before anything is asked of the
// token. Its errors mean nothing was signed.
func Check(opts crypto.SignerOpts, digest []byte) (Scheme, error) {
	if opts == nil {
		return Scheme{}, fmt.Errorf("%w: no hash given", ckr.ErrUnsupportedAlgorithm)
	}
	sc := Scheme{Hash: opts.HashFunc()}
	if _, ok := digestInfoPrefix[sc.Hash]; !ok {
		return sc, fmt.Errorf("%w: hash %v (SHA-256, SHA-384 or SHA-512)", ckr.ErrUnsupportedAlgorithm, sc.Hash)
	}
	if p, ok := opts.(*rsa.PSSOptions); ok {
		sc.Salt = p.SaltLength
		if sc.Salt == rsa.PSSSaltLengthEqualsHash {
			sc.Salt = sc.Hash.Size()
		}
		if sc.Salt < sc.Hash.Size() {
			return sc, fmt.Errorf("%w: RSA-PSS salt length %d (only the hash length, %d, or the key's maximum)", ckr.ErrUnsupportedAlgorithm, p.SaltLength, sc.Hash.Size())
		}
		sc.PSS = true
	}
	if len(digest) != sc.Hash.Size() {
		return sc, fmt.Errorf("%w: %d bytes for %v, want %d", ckr.ErrBadDigest, len(digest), sc.Hash, sc.Hash.Size())
	}
	return sc, nil
}

// Mechanism returns the signing mechanism and the data to sign for sc on
// a key with public key pub.
func (sc Scheme) Mechanism(pub crypto.PublicKey, digest []byte) (*pkcs11.Mechanism, []byte, error) {
	switch k := pub.(type) {
	case *rsa.PublicKey:
		if sc.PSS {
			if maxSalt := MaxPSSSaltLength(k, sc.Hash); sc.Salt != sc.Hash.Size() && sc.Salt != maxSalt {
				return nil, nil, fmt.Errorf("%w: RSA-PSS salt length %d (only the hash length, %d, or the key's maximum, %d)", ckr.ErrUnsupportedAlgorithm, sc.Salt, sc.Hash.Size(), maxSalt)
			}
			p := pssParams[sc.Hash]
			return pkcs11.NewMechanism(pkcs11.CKM_RSA_PKCS_PSS, pkcs11.NewPSSParams(p[0], p[1], uint(sc.Salt))), digest, nil
		}
		prefix := digestInfoPrefix[sc.Hash]
		data := make([]byte, 0, len(prefix)+len(digest))
		return pkcs11.NewMechanism(pkcs11.CKM_RSA_PKCS, nil), append(append(data, prefix...), digest...), nil
	case *ecdsa.PublicKey:
		if sc.PSS {
			return nil, nil, fmt.Errorf("%w: RSA-PSS with an EC key", ckr.ErrUnsupportedAlgorithm)
		}
		return pkcs11.NewMechanism(pkcs11.CKM_ECDSA, nil), digest, nil
	}
	return nil, nil, fmt.Errorf("%w: key type %T", ckr.ErrUnsupportedAlgorithm, pub)
}

// Verify checks sig, as returned to the caller, against pub.
func (sc Scheme) Verify(pub crypto.PublicKey, digest, sig []byte) error {
	switch p := pub.(type) {
	case *rsa.PublicKey:
		if sc.PSS {
			return rsa.VerifyPSS(p, sc.Hash, digest, sig, &rsa.PSSOptions{SaltLength: sc.Salt, Hash: sc.Hash})
		}
		return rsa.VerifyPKCS1v15(p, sc.Hash, digest, sig)
	case *ecdsa.PublicKey:
		if !ecdsa.VerifyASN1(p, digest, sig) {
			return errors.New("ECDSA verification failed")
		}
		return nil
	}
	return fmt.Errorf("key type %T", pub)
}

// String names the scheme for errors: "RSASSA-PSS with SHA-256 and a
// 222-byte salt", "PKCS#1 v1.5 with SHA-256", "ECDSA with SHA-256".
func (sc Scheme) String() string {
	if sc.PSS {
		return fmt.Sprintf("RSASSA-PSS with %v and a %d-byte salt", sc.Hash, sc.Salt)
	}
	return fmt.Sprintf("a signature with %v", sc.Hash)
}

// Key identifies a scheme on a key size, for the refusals a Token
// remembers.
func (sc Scheme) Key(pub crypto.PublicKey) string {
	return fmt.Sprintf("%T/%d/%v/%v/%d", pub, keyobj.KeyBits(pub), sc.Hash, sc.PSS, sc.Salt)
}

// MaxPSSSaltLength is the longest RSASSA-PSS salt a signature with pub
// over a hash of h can carry: the encoded message length minus the hash
// length minus 2 (RFC 8017 §9.1.1).
func MaxPSSSaltLength(pub *rsa.PublicKey, h crypto.Hash) int {
	return (pub.N.BitLen()-1+7)/8 - h.Size() - 2
}
