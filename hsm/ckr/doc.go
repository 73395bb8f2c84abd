// Package ckr is package hsm's error model: the sentinel errors every
// error of hsm wraps (ErrBusy, ErrKeyNotFound, ...; hsm returns them
// under the same names) with the meaning each answers to a caller
// (Unavailable, KeyUnusable, KeyMissing, Unsupported), and the one table
// that classifies every PKCS#11 v2.40 return value by what an operation
// does after it (Class: caller, session, login, device, PIN, confirm).
//
// Wrap names the PKCS#11 function a return value came from ("C_Login:
// CKR_PIN_INCORRECT (0xa0)") and keeps the pkcs11.Error reachable;
// ReturnCode and Code give its name for metrics and messages. Classify
// decides an error's class from its return value and from the marks the
// token's code puts on it: Refused (a refusal confirmed by a token that
// still answers: caller class), Discard (the session must not be reused:
// Spoiled), MarkNotSigned (no signature exists: NotSigned), and the
// conditions ErrTokenGone (device), ErrStaleModule (login) and
// ErrNotInitialized (device).
//
// It holds no state and makes no PKCS#11 call; what each class makes the
// token do is package hsm's (run.go, recover.go).
package ckr
