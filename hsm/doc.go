// Package hsm owns signd's PKCS#11 side: it loads a PKCS#11 module, finds a
// token by its label, logs in, keeps sessions, generates and finds RSA and
// EC key pairs, signs digests, builds CSRs through the token and stores
// issued certificates on it.
//
// It knows nothing of users, credentials, OAuth or HTTP: callers refer to
// keys by their CKA_ID (16 random bytes chosen at generation) and map
// errors to responses themselves (ErrBadDigest is a client error, ErrBusy
// and ErrTokenUnavailable are "try again later", everything else is a
// server error). To let them do so without importing hsm, every error
// answers its meaning through methods reachable with errors.As:
// Unavailable, KeyUnusable, KeyMissing, Unsupported (the sentinels,
// package ckr) and NotSigned (sign.go); a caller declares the one-method
// interface it asks, such as interface{ Unavailable() bool }.
//
// # Parts
//
// The Token, its sessions, recovery, key lookup and signing are this
// package's; what does not need a Token is in its parts, which import
// nothing of it: package ckr (the sentinel errors, which hsm returns under
// the same names, and the one table that classifies every PKCS#11 return
// value), caps (what the module and token say they can do), keyobj (key
// templates, attribute reads, public halves, the key policy and the freeze
// test, on a session it is given), scheme (signature schemes: the options
// checked, the mechanism, the verification) and module (loaded modules,
// the session registry and the pool). cryptoki defines Ctx, the subset of
// PKCS#11 all of them call.
//
// # Capabilities
//
// Open asks the module and the token what they are and can do (C_GetInfo,
// C_GetTokenInfo, C_GetMechanismList and C_GetMechanismInfo for the
// mechanisms signd uses: CKM_RSA_PKCS_KEY_PAIR_GEN, CKM_RSA_PKCS,
// CKM_RSA_PKCS_PSS, CKM_EC_KEY_PAIR_GEN, CKM_ECDSA), keeps the answer as
// the Token's Capabilities and logs it once. Every use is adapted from
// it, because real tokens differ from SoftHSM2: opencryptoki 3.8 reports
// Cryptoki 2.20 and has no EC; tpm2-pkcs11 1.9 makes RSA up to 3072 bits,
// fixes key usages itself and accepts writes to keys it says are frozen.
// A key type or size the token lacks is refused before the token is asked
// (ErrUnsupportedAlgorithm, naming the missing mechanism or size and the
// key types the token can make).
//
// # Keys
//
// GenerateRSA makes 2048-, 3072- or 4096-bit key pairs, GenerateEd25519
// Ed25519 key pairs (CKM_EC_EDWARDS_KEY_PAIR_GEN, for the audit key; eddsa.go;
// CanEd25519 asks the token whether it has the mechanisms) and GenerateEC ECDSA
// key pairs on P-256, P-384 or P-521 (CKM_EC_KEY_PAIR_GEN, CKA_EC_PARAMS) inside
// the token with explicit templates: the private key is sensitive, never
// extractable, can only sign and is frozen (CKA_MODIFIABLE false,
// CKA_COPYABLE false). The templates follow the token:
//
//   - CKA_COPYABLE (a v2.40 attribute) is set only for Cryptoki 2.40 and
//     later, and left out for good once the token refuses it
//     (CKR_ATTRIBUTE_TYPE_INVALID): a 2.20 token refuses the whole call.
//   - Attributes are read in one C_GetAttributeValue and, when the token
//     refuses one of them as unknown or sensitive, one at a time.
//   - Config.Profile says how usages are set. ProfileStrict spells every
//     usage out (CKA_DECRYPT, CKA_ENCRYPT, CKA_UNWRAP, CKA_WRAP, CKA_DERIVE,
//     CKA_SIGN_RECOVER false). ProfileTokenFixedUsage leaves CKA_DECRYPT
//     and CKA_ENCRYPT to the token (tpm2-pkcs11 sets them itself, refuses
//     a differing value with CKR_GENERAL_ERROR, and signs CKM_RSA_PKCS as
//     a raw RSA decrypt, so its signing keys must decrypt). ProfileAuto,
//     the default, starts strict and, when the token refuses that
//     template (CKR_TEMPLATE_INCONSISTENT, CKR_ATTRIBUTE_VALUE_INVALID, or
//     CKR_GENERAL_ERROR while C_GetTokenInfo still answers), retries once
//     with the token-fixed-usage template and keeps it. Detection by
//     manufacturer was not chosen: a retry works on tokens nobody listed,
//     and what the token then gave the key is checked anyway.
//
// A token refusal of the request while the token answers (a template,
// mechanism, parameter or key size: CKR_ATTRIBUTE_VALUE_INVALID,
// CKR_MECHANISM_INVALID, CKR_KEY_SIZE_RANGE, ...) is
// ErrUnsupportedAlgorithm too, as is a generated key whose public half
// does not parse (tpm2-pkcs11's P-521 CKA_EC_POINT); the key is destroyed.
//
// The freeze is tested, not read back (package keyobj says how): after
// generation the package writes the key's own CKA_LABEL back, which a
// frozen key refuses, tries a C_CopyObject into a session object, which
// it must refuse as well, and reads the usages the token really gave the
// key. Only an explicit refusal proves the freeze: another answer is the
// defect "freeze could not be tested", and an ambiguous one fails the
// operation. A key that reads CKA_MODIFIABLE or
// CKA_COPYABLE true is neither written nor copied: the token says so
// itself. What the token does not keep is KeyInfo.Defects and a warning
// naming the token and the key; CheckKeys repeats the test for every key
// on the token (signd runs it at start and for `signd hsm info`). With
// Config.RequireImmutableKeys a newly generated key with defects is
// destroyed and refused (ErrKeyNotFrozen); keys already on the token are
// only reported by CheckKeys. A token that reads back CKA_MODIFIABLE or
// CKA_COPYABLE true on a new key ignored the template: that key is always
// refused (ErrKeyPolicy).
//
// Key finds a private key by CKA_CLASS and
// CKA_ID (a certificate stored with ImportCertificate shares the ID), reads
// its CKA_KEY_TYPE (RSA, EC or Ed25519; an EC or Ed25519 key's point comes
// from its public key object), caches its handle, and refuses keys that could not have been
// generated that way (ErrKeyPolicy): keys imported from outside the token
// are accepted only with Config.AllowImportedKeys, which exists for golden
// tests.
//
// # Signatures
//
// SignDigestOpts signs a SHA-256, SHA-384 or SHA-512 digest: RSA PKCS#1
// v1.5 through CKM_RSA_PKCS over a DigestInfo built per call, RSASSA-PSS
// through CKM_RSA_PKCS_PSS (MGF1 with the same hash, salt = hash length;
// opts *rsa.PSSOptions), ECDSA through CKM_ECDSA, whose r‖s is returned as
// a DER ECDSA-Sig-Value. Every signature is verified with the public key
// before it is returned (a fault attack on RSA-CRT or on an ECDSA nonce
// never leaves the package); a failure before the token returned a
// signature is NotSigned. A scheme the token refuses at C_SignInit (a PSS
// salt: tpm2-pkcs11 refuses the longest) is ErrUnsupportedAlgorithm and
// remembered per key size; CheckSign, the check before a caller spends
// anything, refuses it then, and tries a PSS scheme it has not seen with
// C_SignInit alone on a session it then closes, so no signature is made.
// SignsPSS says whether the token has CKM_RSA_PKCS_PSS at all.
//
// # Sessions
//
// A Token holds one persistent logged-in session that is never lent out. It
// keeps the login state and every object handle alive: with SoftHSM2,
// closing the last session or calling C_Logout invalidates all cached
// handles. Operations borrow a session from a bounded pool
// (Config.MaxSessions, default GOMAXPROCS); when none becomes free within
// Config.AcquireTimeout or before the context ends, they fail with ErrBusy.
// The package never calls C_Logout and never unloads (dlclose) the module.
//
// A session's number is not its identity: opencryptoki and tpm2-pkcs11
// give the number of a closed session to the next one opened (SoftHSM2
// never does), so a number that answers C_GetSessionInfo may be another
// session now, even the Token's own persistent one. Each session is kept
// with the serial of the C_OpenSession that returned it, in a registry of
// the module (shared by the Tokens on it); a session whose number was
// handed out again is dead and is dropped without C_CloseSession, which
// would close the other one. C_OpenSession and the recording of its
// number are one step, and so are the check that a number is still ours
// and its C_CloseSession (module.Module.OpenSession, CloseSession): a
// goroutine discarding a dead session can never close the number another
// goroutine's C_OpenSession was just given. A session the module reports
// closed (CKR_SESSION_HANDLE_INVALID, CKR_SESSION_CLOSED) is forgotten,
// never closed: its number is free in the module already.
//
// # Recovery
//
// Every PKCS#11 return value is classified once, in one table (package
// ckr): caller/key class (the operation fails, the token is fine),
// session class, login class, device class and PIN class. Every operation
// is retried at most once per kind of failure: a closed or invalid session
// is replaced; "user not logged in" or an invalid object handle
// re-establishes the persistent session and the login, flushes the
// key-handle cache and looks the key up again. A find that returns nothing
// is believed only while the token answers C_GetTokenInfo: SoftHSM2 finds
// nothing, without an error, on a token whose files vanished.
//
// Ambiguous return values (CKR_GENERAL_ERROR, CKR_FUNCTION_FAILED,
// CKR_DEVICE_MEMORY) are decided by evidence: a C_GetTokenInfo follows,
// and only when it fails too is the error a device error; while the token
// answers, the one request was refused (caller class; tpm2-pkcs11 answers
// a template it does not like with CKR_GENERAL_ERROR). From
// C_GetTokenInfo itself they are device errors. Either way the session
// they came from is closed, never lent out again: the code says nothing
// of the state the module left it in (PKCS#11 v2.40 §5.1 calls
// CKR_GENERAL_ERROR unrecoverable), and many modules answer
// C_GetTokenInfo from a cache.
//
// A device-class error (CKR_DEVICE_ERROR, CKR_DEVICE_REMOVED,
// CKR_TOKEN_NOT_PRESENT, CKR_SLOT_ID_INVALID,
// CKR_CRYPTOKI_NOT_INITIALIZED, a confirmed ambiguous code, ...) from any
// call on any path marks the token unavailable at once: calls fail fast with ErrTokenUnavailable,
// without waiting for a lock, while a background goroutine finalizes and
// initializes the module again (a module lists only the tokens present at
// C_Initialize), finds the token by label, logs in and starts a fresh
// handle cache, with exponential backoff from 100 ms capped at 2 s. No
// probe traffic is needed. Status reports availability and counts
// outages. PIN errors are fatal (ErrPIN) and never retried, so a wrong PIN
// cannot lock the token.
//
// NotSigned (the function, or the error's NotSigned method) tells a
// caller whether a failed SignDigest provably made no signature, so that
// it can give back what it spent on the attempt.
// CheckKey is the cheap check before spending it.
//
// # Package-level state
//
// The package and its parts keep exactly one piece of package-level state:
// the registry of loaded modules, one per resolved path, reference counted
// (package module). C_Initialize and C_Finalize act on the whole process,
// so two Tokens using the same module must share one initialization, and
// re-initializing it (during recovery) must be coordinated between them.
//
// PKCS#11 return codes appear by name in errors and logs, for example
// "CKR_PIN_INCORRECT (0xa0)"; ReturnCode extracts the name for metrics. The
// PIN never appears in an error or a log line.
package hsm
