package hsm

import "github.com/signd/signd/hsm/ckr"

// Sentinel errors. Every error the package returns wraps one of these (and,
// when a PKCS#11 call failed, the pkcs11.Error as well) so callers can test
// them with errors.Is. They are package ckr's, which says what each means;
// each also answers what it means for a caller (Unavailable, KeyUnusable,
// KeyMissing, Unsupported), so that a package that does not import hsm
// asks the error itself through an interface of its own and errors.As; an
// error after which no signature exists answers NotSigned the same way.
var (
	ErrModule               = ckr.ErrModule               // the module path is unusable, or C_Initialize failed
	ErrTokenNotFound        = ckr.ErrTokenNotFound        // no slot (or more than one) holds a token with the label
	ErrPIN                  = ckr.ErrPIN                  // C_Login refused the PIN; fatal, never retried
	ErrKeyNotFound          = ckr.ErrKeyNotFound          // no private key with the CKA_ID
	ErrAmbiguousKey         = ckr.ErrAmbiguousKey         // more than one private key with the CKA_ID
	ErrLabelExists          = ckr.ErrLabelExists          // a new key's label is already on the token
	ErrKeyPolicy            = ckr.ErrKeyPolicy            // the key may not sign (see Key)
	ErrKeyNotFrozen         = ckr.ErrKeyNotFrozen         // Config.RequireImmutableKeys refused a new key; wraps ErrKeyPolicy
	ErrWeakKey              = ckr.ErrWeakKey              // smaller than Config.MinRSABits; wraps ErrKeyPolicy
	ErrBadDigest            = ckr.ErrBadDigest            // the digest length does not match the hash
	ErrUnsupportedAlgorithm = ckr.ErrUnsupportedAlgorithm // the caller's algorithm, or one the token cannot do
	ErrCertKeyMismatch      = ckr.ErrCertKeyMismatch      // a certificate is not for the key it is stored with
	ErrBusy                 = ckr.ErrBusy                 // no session free within Config.AcquireTimeout; retry later
	ErrTokenUnavailable     = ckr.ErrTokenUnavailable     // reconnecting after a device error; retry later
	ErrClosed               = ckr.ErrClosed               // the Token was closed
)

// ReturnCode returns the name of the PKCS#11 return code wrapped in err, for
// example "CKR_PIN_INCORRECT", or "" when err carries no PKCS#11 error.
func ReturnCode(err error) string { return ckr.ReturnCode(err) }
