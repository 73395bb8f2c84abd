// Package hsm owns signd's PKCS#11 side: it loads a PKCS#11 module, finds a
// token by its label, logs in, keeps sessions, generates and finds RSA and
// EC key pairs, signs digests, builds CSRs through the token and stores
// issued certificates on it.
//
// It knows nothing of users, credentials, OAuth or HTTP: callers refer to
// keys by their CKA_ID (16 random bytes chosen at generation) and map
// errors to responses themselves (ErrBadDigest is a client error, ErrBusy
// and ErrTokenUnavailable are "try again later", everything else is a
// server error).
//
// # Keys
//
// GenerateRSA makes 2048-, 3072- or 4096-bit key pairs and GenerateEC ECDSA
// key pairs on P-256, P-384 or P-521 (CKM_EC_KEY_PAIR_GEN, CKA_EC_PARAMS) inside
// the token with explicit templates: the private key is sensitive, never
// extractable and can only sign. Key finds a private key by CKA_CLASS and
// CKA_ID (a certificate stored with ImportCertificate shares the ID), reads
// its CKA_KEY_TYPE (RSA or EC; an EC key's point comes from its public key
// object), caches its handle, and refuses keys that could not have been
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
// signature is NotSigned.
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
// # Recovery
//
// Every PKCS#11 return value is classified once, in one table (ckrClass in
// errors.go): caller/key class (the operation fails, the token is fine),
// session class, login class, device class and PIN class. Every operation
// is retried at most once per kind of failure: a closed or invalid session
// is replaced; "user not logged in" or an invalid object handle
// re-establishes the persistent session and the login, flushes the
// key-handle cache and looks the key up again. A find that returns nothing
// is believed only while the token answers C_GetTokenInfo: SoftHSM2 finds
// nothing, without an error, on a token whose files vanished.
//
// A device-class error (CKR_DEVICE_ERROR, CKR_DEVICE_REMOVED,
// CKR_TOKEN_NOT_PRESENT, CKR_GENERAL_ERROR, CKR_SLOT_ID_INVALID,
// CKR_CRYPTOKI_NOT_INITIALIZED, ...) from any call on any path marks the
// token unavailable at once: calls fail fast with ErrTokenUnavailable,
// without waiting for a lock, while a background goroutine finalizes and
// initializes the module again (a module lists only the tokens present at
// C_Initialize), finds the token by label, logs in and starts a fresh
// handle cache, with exponential backoff from 100 ms capped at 2 s. No
// probe traffic is needed. Status reports availability and counts
// outages. PIN errors are fatal (ErrPIN) and never retried, so a wrong PIN
// cannot lock the token.
//
// NotSigned tells a caller whether a failed SignDigest provably made no
// signature, so that it can give back what it spent on the attempt.
// CheckKey is the cheap check before spending it.
//
// # Package-level state
//
// The package keeps exactly one piece of package-level state: a registry of
// loaded modules, one per resolved path, reference counted. C_Initialize and
// C_Finalize act on the whole process, so two Tokens using the same module
// must share one initialization, and re-initializing it (during recovery)
// must be coordinated between them; see module.go.
//
// PKCS#11 return codes appear by name in errors and logs, for example
// "CKR_PIN_INCORRECT (0xa0)"; ReturnCode extracts the name for metrics. The
// PIN never appears in an error or a log line.
package hsm
