package ckr

import (
	"errors"
	"fmt"
	"strings"

	"github.com/miekg/pkcs11"
)

// Sentinel errors, which package hsm returns under the same names. Every
// error package hsm returns wraps one of these (and,
// when a PKCS#11 call failed, the pkcs11.Error as well) so callers can test
// them with errors.Is. Each also answers what it means for a caller
// (Unavailable, KeyUnusable, KeyMissing, Unsupported; see sentinel), so
// that a package that does not import hsm asks the error itself through
// an interface of its own and errors.As; an error after which no signature
// exists answers NotSigned the same way.
var (
	// ErrModule means the PKCS#11 module path is not absolute, does not
	// exist, cannot be loaded, or C_Initialize failed. The error names the
	// path.
	ErrModule error = &sentinel{msg: "hsm: PKCS#11 module unusable"}

	// ErrTokenNotFound means no slot holds a token with the configured
	// label (or more than one does). The error names the label.
	ErrTokenNotFound error = &sentinel{msg: "hsm: token not found"}

	// ErrPIN means C_Login rejected the PIN (incorrect, locked, expired,
	// invalid or of the wrong length). It is fatal: the Token never retries
	// a login that failed this way, so a wrong PIN cannot lock the token.
	ErrPIN error = &sentinel{msg: "hsm: wrong or locked PIN", unavailable: true}

	// ErrKeyNotFound means no RSA private key with the given CKA_ID exists.
	ErrKeyNotFound error = &sentinel{msg: "hsm: key not found", keyUnusable: true, keyMissing: true}

	// ErrAmbiguousKey means more than one RSA private key has the CKA_ID.
	ErrAmbiguousKey error = &sentinel{msg: "hsm: more than one key with this ID", keyUnusable: true}

	// ErrLabelExists means GenerateRSA was asked for a label that an object
	// on the token already carries.
	ErrLabelExists error = &sentinel{msg: "hsm: label already in use"}

	// ErrKeyPolicy means a key exists but may not be used for signing: it
	// cannot sign, is extractable or not sensitive, or was not generated
	// inside the token (unless Config.AllowImportedKeys).
	ErrKeyPolicy error = &sentinel{msg: "hsm: key violates the key policy", keyUnusable: true}

	// ErrKeyNotFrozen means Config.RequireImmutableKeys refused a new key
	// the token did not freeze (KeyInfo.Defects); the key was destroyed.
	// It wraps ErrKeyPolicy.
	ErrKeyNotFrozen = fmt.Errorf("%w: the token does not freeze its keys", ErrKeyPolicy)

	// ErrWeakKey means the key is smaller than Config.MinRSABits. It wraps
	// ErrKeyPolicy.
	ErrWeakKey = fmt.Errorf("%w: RSA modulus too small", ErrKeyPolicy)

	// ErrBadDigest means the digest length does not match the hash.
	ErrBadDigest error = &sentinel{msg: "hsm: digest length does not match the hash"}

	// ErrUnsupportedAlgorithm means a hash other than SHA-256/384/512, a
	// PSS salt other than the hash length or the key's maximum, a key type
	// or size other than RSA 2048/3072/4096 and EC P-256/384/521, or one
	// the token cannot do: it lacks the mechanism or the key size
	// (Capabilities), or it refused the template, mechanism or parameters
	// while it still answers. The error names what is missing. It is the
	// caller's error; the token stays available.
	ErrUnsupportedAlgorithm error = &sentinel{msg: "hsm: unsupported algorithm", unsupported: true}

	// ErrCertKeyMismatch means a certificate's public key is not the HSM
	// key it is being stored with.
	ErrCertKeyMismatch error = &sentinel{msg: "hsm: certificate public key does not match the HSM key"}

	// ErrBusy means no session became free within Config.AcquireTimeout or
	// before the context ended. Retry later.
	ErrBusy error = &sentinel{msg: "hsm: all sessions busy", unavailable: true}

	// ErrTokenUnavailable means the token failed with a device-level error
	// and is being reconnected in the background. Retry later.
	ErrTokenUnavailable error = &sentinel{msg: "hsm: token unavailable", unavailable: true}

	// ErrClosed means the Token was closed.
	ErrClosed error = &sentinel{msg: "hsm: token closed", unavailable: true}
)

// sentinel is the type of the package's sentinel errors. Its methods are
// the error's meaning for a caller; wrapping (%w) keeps them reachable
// with errors.As, so a consumer declares, for instance,
// interface{ Unavailable() bool } and asks any error it got.
type sentinel struct {
	msg                                               string
	unavailable, keyUnusable, keyMissing, unsupported bool
}

func (e *sentinel) Error() string { return e.msg }

// Unavailable reports that the token cannot serve now and a retry later
// may succeed: ErrBusy, ErrTokenUnavailable, ErrPIN (the operator must fix
// the PIN), ErrClosed.
func (e *sentinel) Unavailable() bool { return e.unavailable }

// KeyUnusable reports that the key cannot sign while the token works:
// ErrKeyNotFound, ErrAmbiguousKey, ErrKeyPolicy (and the errors that wrap
// it).
func (e *sentinel) KeyUnusable() bool { return e.keyUnusable }

// KeyMissing reports that this token does not hold the key
// (ErrKeyNotFound): another node's token may.
func (e *sentinel) KeyMissing() bool { return e.keyMissing }

// Unsupported reports that the token cannot make the requested algorithm
// with the key while it works (ErrUnsupportedAlgorithm).
func (e *sentinel) Unsupported() bool { return e.unsupported }

// ReturnCode returns the name of the PKCS#11 return code wrapped in err, for
// example "CKR_PIN_INCORRECT", or "" when err carries no PKCS#11 error.
func ReturnCode(err error) string {
	var c pkcs11.Error
	if !errors.As(err, &c) {
		return ""
	}
	return Name(c)
}

// Name returns the CKR_ name of c. miekg/pkcs11 formats its errors as
// "pkcs11: 0xA0: CKR_PIN_INCORRECT"; the name is taken from there so the
// table stays miekg's.
func Name(c pkcs11.Error) string {
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
	return fmt.Sprintf("%s: %s (0x%x)", e.fn, Name(e.code), uint(e.code))
}

func (e *ckrError) Unwrap() error { return e.code }

// Wrap wraps an error returned by the PKCS#11 function fn. Errors that are
// not pkcs11.Error pass through unchanged; nil stays nil.
func Wrap(fn string, err error) error {
	var c pkcs11.Error
	if errors.As(err, &c) {
		return &ckrError{fn: fn, code: c}
	}
	return err
}

// RV returns the PKCS#11 return code in err, or CKR_OK.
func RV(err error) uint {
	var c pkcs11.Error
	if errors.As(err, &c) {
		return uint(c)
	}
	return pkcs11.CKR_OK
}

// Class is what an operation does after a PKCS#11 error: the class of
// the return value.
type Class int

const (
	Caller  Class = iota // caller or key class: return the error, the token is fine
	Session              // session class: the session is dead; replace it, retry once
	Login                // login class: login or handles lost; re-login, flush the cache, retry once
	Device               // device class: the token is gone; mark it unavailable at once, reconnect in the background
	PIN                  // PIN class: the PIN was refused; fatal, never retried
	// Confirm class: ambiguous (CKR_GENERAL_ERROR, CKR_FUNCTION_FAILED,
	// CKR_DEVICE_MEMORY). Device class only when C_GetTokenInfo fails
	// too; while the token answers, a refusal of this one request (caller
	// class). tpm2-pkcs11 answers a key template it does not like with
	// CKR_GENERAL_ERROR.
	Confirm
)

// String names the class, for logs and tests.
func (r Class) String() string {
	switch r {
	case Session:
		return "session"
	case Login:
		return "login"
	case Device:
		return "device"
	case PIN:
		return "pin"
	case Confirm:
		return "confirm"
	}
	return "caller"
}

// classes is the one table that classifies every PKCS#11 v2.40 return
// value (PKCS#11 Base Specification v2.40 §5.1, in miekg/pkcs11's
// spelling). Codes not listed (vendor-defined ones, and those newer than
// the table) are caller class: they fail the one operation and leave the
// token alone. The table follows letsencrypt/boulder#1003 (a device error
// marks the HSM down) and the measured SoftHSM2 behaviour
// (reference: closing the last session or a removed token object directory
// turns handles into CKR_OBJECT_HANDLE_INVALID; a removed token answers
// C_GetTokenInfo with CKR_GENERAL_ERROR).
var classes = map[uint]Class{
	pkcs11.CKR_OK:     Caller,
	pkcs11.CKR_CANCEL: Caller,
	// The host ran out of memory: this process's problem, not the token's.
	pkcs11.CKR_HOST_MEMORY: Caller,
	// The slot vanished or was renumbered (SoftHSM2 renumbers slots when
	// tokens come and go): find the token by label again.
	pkcs11.CKR_SLOT_ID_INVALID: Device,
	// SoftHSM2 answers a token whose files vanished with
	// CKR_GENERAL_ERROR, the standard calls it unrecoverable, and
	// tpm2-pkcs11 answers a key template it does not like with it: the
	// evidence decides (C_GetTokenInfo). Likewise "could not be
	// performed, no detail" and "the token's memory is full".
	pkcs11.CKR_GENERAL_ERROR:              Confirm,
	pkcs11.CKR_FUNCTION_FAILED:            Confirm,
	pkcs11.CKR_ARGUMENTS_BAD:              Caller,
	pkcs11.CKR_NO_EVENT:                   Caller,
	pkcs11.CKR_NEED_TO_CREATE_THREADS:     Device, // C_Initialize: the module cannot run here
	pkcs11.CKR_CANT_LOCK:                  Device, // C_Initialize: no locking, as above
	pkcs11.CKR_ATTRIBUTE_READ_ONLY:        Caller,
	pkcs11.CKR_ATTRIBUTE_SENSITIVE:        Caller,
	pkcs11.CKR_ATTRIBUTE_TYPE_INVALID:     Caller,
	pkcs11.CKR_ATTRIBUTE_VALUE_INVALID:    Caller,
	pkcs11.CKR_ACTION_PROHIBITED:          Caller,
	pkcs11.CKR_DATA_INVALID:               Caller,
	pkcs11.CKR_DATA_LEN_RANGE:             Caller,
	pkcs11.CKR_DEVICE_ERROR:               Device,
	pkcs11.CKR_DEVICE_MEMORY:              Confirm,
	pkcs11.CKR_DEVICE_REMOVED:             Device,
	pkcs11.CKR_ENCRYPTED_DATA_INVALID:     Caller,
	pkcs11.CKR_ENCRYPTED_DATA_LEN_RANGE:   Caller,
	pkcs11.CKR_FUNCTION_CANCELED:          Caller,
	pkcs11.CKR_FUNCTION_NOT_PARALLEL:      Caller,
	pkcs11.CKR_FUNCTION_NOT_SUPPORTED:     Caller,
	pkcs11.CKR_KEY_HANDLE_INVALID:         Login,
	pkcs11.CKR_KEY_SIZE_RANGE:             Caller,
	pkcs11.CKR_KEY_TYPE_INCONSISTENT:      Caller,
	pkcs11.CKR_KEY_NOT_NEEDED:             Caller,
	pkcs11.CKR_KEY_CHANGED:                Caller,
	pkcs11.CKR_KEY_NEEDED:                 Caller,
	pkcs11.CKR_KEY_INDIGESTIBLE:           Caller,
	pkcs11.CKR_KEY_FUNCTION_NOT_PERMITTED: Caller,
	pkcs11.CKR_KEY_NOT_WRAPPABLE:          Caller,
	pkcs11.CKR_KEY_UNEXTRACTABLE:          Caller,
	pkcs11.CKR_MECHANISM_INVALID:          Caller,
	pkcs11.CKR_MECHANISM_PARAM_INVALID:    Caller,
	pkcs11.CKR_OBJECT_HANDLE_INVALID:      Login,
	// An operation left active or never started on a session: the
	// session's state is unknown, so it is replaced.
	pkcs11.CKR_OPERATION_ACTIVE:          Session,
	pkcs11.CKR_OPERATION_NOT_INITIALIZED: Session,
	pkcs11.CKR_PIN_INCORRECT:             PIN,
	pkcs11.CKR_PIN_INVALID:               PIN,
	pkcs11.CKR_PIN_LEN_RANGE:             PIN,
	pkcs11.CKR_PIN_EXPIRED:               PIN,
	pkcs11.CKR_PIN_LOCKED:                PIN,
	pkcs11.CKR_SESSION_CLOSED:            Session,
	// Too many sessions: fail this operation; the pool bounds ours.
	pkcs11.CKR_SESSION_COUNT:                    Caller,
	pkcs11.CKR_SESSION_HANDLE_INVALID:           Session,
	pkcs11.CKR_SESSION_PARALLEL_NOT_SUPPORTED:   Caller,
	pkcs11.CKR_SESSION_READ_ONLY:                Caller,
	pkcs11.CKR_SESSION_EXISTS:                   Caller,
	pkcs11.CKR_SESSION_READ_ONLY_EXISTS:         Caller,
	pkcs11.CKR_SESSION_READ_WRITE_SO_EXISTS:     Caller,
	pkcs11.CKR_SIGNATURE_INVALID:                Caller,
	pkcs11.CKR_SIGNATURE_LEN_RANGE:              Caller,
	pkcs11.CKR_TEMPLATE_INCOMPLETE:              Caller,
	pkcs11.CKR_TEMPLATE_INCONSISTENT:            Caller,
	pkcs11.CKR_TOKEN_NOT_PRESENT:                Device,
	pkcs11.CKR_TOKEN_NOT_RECOGNIZED:             Device,
	pkcs11.CKR_TOKEN_WRITE_PROTECTED:            Caller,
	pkcs11.CKR_UNWRAPPING_KEY_HANDLE_INVALID:    Caller,
	pkcs11.CKR_UNWRAPPING_KEY_SIZE_RANGE:        Caller,
	pkcs11.CKR_UNWRAPPING_KEY_TYPE_INCONSISTENT: Caller,
	// Login is per application and token: already logged in is success
	// (Token.login); "not logged in" means the login was lost.
	pkcs11.CKR_USER_ALREADY_LOGGED_IN: Caller,
	pkcs11.CKR_USER_NOT_LOGGED_IN:     Login,
	// No user PIN was ever set: no login can succeed.
	pkcs11.CKR_USER_PIN_NOT_INITIALIZED:       PIN,
	pkcs11.CKR_USER_TYPE_INVALID:              Caller,
	pkcs11.CKR_USER_ANOTHER_ALREADY_LOGGED_IN: Caller,
	pkcs11.CKR_USER_TOO_MANY_TYPES:            Caller,
	pkcs11.CKR_WRAPPED_KEY_INVALID:            Caller,
	pkcs11.CKR_WRAPPED_KEY_LEN_RANGE:          Caller,
	pkcs11.CKR_WRAPPING_KEY_HANDLE_INVALID:    Caller,
	pkcs11.CKR_WRAPPING_KEY_SIZE_RANGE:        Caller,
	pkcs11.CKR_WRAPPING_KEY_TYPE_INCONSISTENT: Caller,
	pkcs11.CKR_RANDOM_SEED_NOT_SUPPORTED:      Caller,
	pkcs11.CKR_RANDOM_NO_RNG:                  Caller,
	pkcs11.CKR_DOMAIN_PARAMS_INVALID:          Caller,
	pkcs11.CKR_CURVE_NOT_SUPPORTED:            Caller,
	pkcs11.CKR_BUFFER_TOO_SMALL:               Caller,
	pkcs11.CKR_SAVED_STATE_INVALID:            Caller,
	pkcs11.CKR_INFORMATION_SENSITIVE:          Caller,
	pkcs11.CKR_STATE_UNSAVEABLE:               Caller,
	// The module was finalized under us: initialize it again.
	pkcs11.CKR_CRYPTOKI_NOT_INITIALIZED:     Device,
	pkcs11.CKR_CRYPTOKI_ALREADY_INITIALIZED: Caller, // tolerated by openModule
	pkcs11.CKR_MUTEX_BAD:                    Device,
	pkcs11.CKR_MUTEX_NOT_LOCKED:             Device,
	pkcs11.CKR_NEW_PIN_MODE:                 Caller,
	pkcs11.CKR_NEXT_OTP:                     Caller,
	pkcs11.CKR_EXCEEDED_MAX_ITERATIONS:      Caller,
	pkcs11.CKR_FIPS_SELF_TEST_FAILED:        Device,
	pkcs11.CKR_LIBRARY_LOAD_FAILED:          Device,
	pkcs11.CKR_PIN_TOO_WEAK:                 PIN,
	pkcs11.CKR_PUBLIC_KEY_INVALID:           Caller,
	pkcs11.CKR_FUNCTION_REJECTED:            Caller,
}

// Classify maps an error to its Class: the class of the PKCS#11 return
// value it carries (classes), or, for the package's own conditions, the
// class they stand for.
//
// A confirm-class code is device class when C_GetTokenInfo itself
// returned it (the confirmation failed), caller class once a refusal was
// confirmed (refusedError), and confirm class otherwise: Token.failed
// asks the token.
func Classify(err error) Class {
	var refused *refusedError
	switch {
	case err == nil:
		return Caller
	case errors.Is(err, ErrStaleModule):
		return Login
	case errors.Is(err, ErrTokenGone):
		return Device
	case errors.As(err, &refused):
		return Caller
	}
	c := classes[RV(err)]
	var ce *ckrError
	if c == Confirm && errors.As(err, &ce) && ce.fn == "C_GetTokenInfo" {
		return Device
	}
	return c
}

// ErrTokenGone means the token did not answer C_GetTokenInfo where an
// answer was needed to believe a result: a find that returned nothing is
// "no such key" only while the token answers. It is device class.
var ErrTokenGone = errors.New("hsm: token does not answer")

// Code names the PKCS#11 return code in err for a message, or says
// "a device error" when there is none.
func Code(err error) string {
	if c := ReturnCode(err); c != "" {
		return c
	}
	return "a device error"
}

// ErrNotInitialized means the module is finalized: a re-initialization
// failed. It is a device error, so the reconnect loop tries again.
var ErrNotInitialized = &ckrError{fn: "module not initialized", code: pkcs11.CKR_CRYPTOKI_NOT_INITIALIZED}

// ErrStaleModule means the module was finalized and initialized again (by
// another Token's recovery) since this Token opened its sessions: every
// session and object handle it holds is void and may even name another
// token's objects now.
var ErrStaleModule = errors.New("hsm: module re-initialized since the sessions were opened")

// ClassOf returns the class of the return value code alone (the table
// Classify starts from).
func ClassOf(code uint) Class { return classes[code] }

// refusedError is a refusal confirmed by a token that still answers: caller
// class, whatever its return value.
type refusedError struct{ err error }

func (e *refusedError) Error() string { return e.err.Error() }
func (e *refusedError) Unwrap() error { return e.err }

// Refused marks err as a refusal confirmed by a token that still answers
// C_GetTokenInfo: Classify then says caller class, whatever its return
// value.
func Refused(err error) error { return &refusedError{err} }

// IsRefused reports whether err was marked by Refused.
func IsRefused(err error) bool {
	var r *refusedError
	return errors.As(err, &r)
}

// Spoiled reports whether the session an operation failed with err on
// must not go back to the pool: a dead session (session class), an
// operation that asked for it (Discard), and every ambiguous return
// value (CKR_GENERAL_ERROR, CKR_FUNCTION_FAILED, CKR_DEVICE_MEMORY),
// whatever C_GetTokenInfo later says about the token: PKCS#11 v2.40 §5.1
// calls CKR_GENERAL_ERROR unrecoverable, many modules answer
// C_GetTokenInfo from a cache, and an operation the module may have left
// half done on the session (a find, a signature) would meet the next
// borrower. The raw code decides, so a confirmed refusal (Refused)
// with one of these codes is discarded too. A fresh C_OpenSession is
// cheap; a poisoned session is not.
func Spoiled(err error) bool {
	var d *discardError
	return Classify(err) == Session || errors.As(err, &d) || classes[RV(err)] == Confirm
}

// Closed reports whether err says the session it came from is closed
// (CKR_SESSION_HANDLE_INVALID, CKR_SESSION_CLOSED): its number is free in
// the module, and may already stand for a session opened since.
func Closed(err error) bool {
	switch RV(err) {
	case pkcs11.CKR_SESSION_HANDLE_INVALID, pkcs11.CKR_SESSION_CLOSED:
		return true
	}
	return false
}

// discardError marks an error after which the session must not be reused,
// for example a failed C_Sign after a successful C_SignInit: the standard
// says the operation ended, but a module that disagrees would answer the
// next C_SignInit with CKR_OPERATION_ACTIVE.
type discardError struct{ err error }

func (e *discardError) Error() string { return e.err.Error() }
func (e *discardError) Unwrap() error { return e.err }

// Discard marks err so that Spoiled reports true. nil stays nil.
func Discard(err error) error {
	if err == nil {
		return nil
	}
	return &discardError{err: err}
}

// notSignedError marks a signing error after which no signature exists
// outside the token: the token never returned one.
type notSignedError struct{ err error }

func (e *notSignedError) Error() string { return e.err.Error() }
func (e *notSignedError) Unwrap() error { return e.err }

// NotSigned is the error's answer to a consumer that asks through
// interface{ NotSigned() bool } and errors.As (package csc): true.
func (e *notSignedError) NotSigned() bool { return true }

// MarkNotSigned returns err marked so that NotSigned reports true. nil
// stays nil.
func MarkNotSigned(err error) error {
	if err == nil {
		return nil
	}
	return &notSignedError{err: err}
}

// NotSigned reports whether err was marked by MarkNotSigned.
func NotSigned(err error) bool {
	var ns *notSignedError
	return errors.As(err, &ns)
}
