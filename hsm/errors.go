package hsm

import (
	"errors"
	"fmt"
	"strings"

	"github.com/miekg/pkcs11"
)

// Sentinel errors. Every error the package returns wraps one of these (and,
// when a PKCS#11 call failed, the pkcs11.Error as well) so callers can test
// them with errors.Is.
var (
	// ErrModule means the PKCS#11 module path is not absolute, does not
	// exist, cannot be loaded, or C_Initialize failed. The error names the
	// path.
	ErrModule = errors.New("hsm: PKCS#11 module unusable")

	// ErrTokenNotFound means no slot holds a token with the configured
	// label (or more than one does). The error names the label.
	ErrTokenNotFound = errors.New("hsm: token not found")

	// ErrPIN means C_Login rejected the PIN (incorrect, locked, expired,
	// invalid or of the wrong length). It is fatal: the Token never retries
	// a login that failed this way, so a wrong PIN cannot lock the token.
	ErrPIN = errors.New("hsm: wrong or locked PIN")

	// ErrKeyNotFound means no RSA private key with the given CKA_ID exists.
	ErrKeyNotFound = errors.New("hsm: key not found")

	// ErrAmbiguousKey means more than one RSA private key has the CKA_ID.
	ErrAmbiguousKey = errors.New("hsm: more than one key with this ID")

	// ErrLabelExists means GenerateRSA was asked for a label that an object
	// on the token already carries.
	ErrLabelExists = errors.New("hsm: label already in use")

	// ErrKeyPolicy means a key exists but may not be used for signing: it
	// cannot sign, is extractable or not sensitive, or was not generated
	// inside the token (unless Config.AllowImportedKeys).
	ErrKeyPolicy = errors.New("hsm: key violates the key policy")

	// ErrWeakKey means the key is smaller than Config.MinRSABits. It wraps
	// ErrKeyPolicy.
	ErrWeakKey = fmt.Errorf("%w: RSA modulus too small", ErrKeyPolicy)

	// ErrBadDigest means the digest length does not match the hash.
	ErrBadDigest = errors.New("hsm: digest length does not match the hash")

	// ErrUnsupportedAlgorithm means a hash other than SHA-256/384/512, PSS
	// options, a non-RSA key, or an RSA size other than 2048/3072/4096 bits.
	ErrUnsupportedAlgorithm = errors.New("hsm: unsupported algorithm")

	// ErrCertKeyMismatch means a certificate's public key is not the HSM
	// key it is being stored with.
	ErrCertKeyMismatch = errors.New("hsm: certificate public key does not match the HSM key")

	// ErrBusy means no session became free within Config.AcquireTimeout or
	// before the context ended. Retry later.
	ErrBusy = errors.New("hsm: all sessions busy")

	// ErrTokenUnavailable means the token failed with a device-level error
	// and is being reconnected in the background. Retry later.
	ErrTokenUnavailable = errors.New("hsm: token unavailable")

	// ErrClosed means the Token was closed.
	ErrClosed = errors.New("hsm: token closed")
)

// ReturnCode returns the name of the PKCS#11 return code wrapped in err, for
// example "CKR_PIN_INCORRECT", or "" when err carries no PKCS#11 error.
func ReturnCode(err error) string {
	var c pkcs11.Error
	if !errors.As(err, &c) {
		return ""
	}
	return ckrName(c)
}

// ckrName returns the CKR_ name of c. miekg/pkcs11 formats its errors as
// "pkcs11: 0xA0: CKR_PIN_INCORRECT"; the name is taken from there so the
// table stays miekg's.
func ckrName(c pkcs11.Error) string {
	s := c.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 && strings.HasPrefix(s[i+2:], "CKR_") {
		return s[i+2:]
	}
	return fmt.Sprintf("CKR_0x%X", uint(c))
}

// ckrError is a failed PKCS#11 call. It prints the function and the return
// code by name, "C_Login: CKR_PIN_INCORRECT (0xa0)", and unwraps to the
// pkcs11.Error.
type ckrError struct {
	fn   string
	code pkcs11.Error
}

func (e *ckrError) Error() string {
	return fmt.Sprintf("%s: %s (0x%x)", e.fn, ckrName(e.code), uint(e.code))
}

func (e *ckrError) Unwrap() error { return e.code }

// ckr wraps an error returned by the PKCS#11 function fn. Errors that are
// not pkcs11.Error pass through unchanged; nil stays nil.
func ckr(fn string, err error) error {
	var c pkcs11.Error
	if errors.As(err, &c) {
		return &ckrError{fn: fn, code: c}
	}
	return err
}

// rv returns the PKCS#11 return code in err, or CKR_OK.
func rv(err error) uint {
	var c pkcs11.Error
	if errors.As(err, &c) {
		return uint(c)
	}
	return pkcs11.CKR_OK
}

// recovery is what an operation does after a PKCS#11 error.
type recovery int

const (
	recoverNone    recovery = iota // return the error
	recoverSession                 // the session is dead: replace it, retry once
	recoverLogin                   // login or handles lost: re-login, flush cache, retry once
	recoverDevice                  // the token is gone: mark unavailable, reconnect in the background
	recoverPIN                     // the PIN was refused: fatal
)

// classify maps an error to its recovery.
func classify(err error) recovery {
	if errors.Is(err, errStaleModule) {
		return recoverLogin
	}
	switch rv(err) {
	case pkcs11.CKR_SESSION_CLOSED, pkcs11.CKR_SESSION_HANDLE_INVALID:
		return recoverSession
	case pkcs11.CKR_USER_NOT_LOGGED_IN, pkcs11.CKR_OBJECT_HANDLE_INVALID, pkcs11.CKR_KEY_HANDLE_INVALID:
		return recoverLogin
	case pkcs11.CKR_DEVICE_ERROR, pkcs11.CKR_DEVICE_REMOVED, pkcs11.CKR_TOKEN_NOT_PRESENT,
		pkcs11.CKR_TOKEN_NOT_RECOGNIZED, pkcs11.CKR_GENERAL_ERROR, pkcs11.CKR_CRYPTOKI_NOT_INITIALIZED:
		return recoverDevice
	case pkcs11.CKR_PIN_INCORRECT, pkcs11.CKR_PIN_LOCKED, pkcs11.CKR_PIN_EXPIRED,
		pkcs11.CKR_PIN_INVALID, pkcs11.CKR_PIN_LEN_RANGE:
		return recoverPIN
	}
	return recoverNone
}

// errNotInitialized means the module is finalized: a re-initialization
// failed. It is a device error, so the reconnect loop tries again.
var errNotInitialized = &ckrError{fn: "module not initialized", code: pkcs11.CKR_CRYPTOKI_NOT_INITIALIZED}

// errStaleModule means the module was finalized and initialized again (by
// another Token's recovery) since this Token opened its sessions: every
// session and object handle it holds is void and may even name another
// token's objects now.
var errStaleModule = errors.New("hsm: module re-initialized since the sessions were opened")
