// Package softtoken is a software signing token with the behaviour of an
// *hsm.Token, for the unit tests of the protocol packages (csc, oidc, oauth),
// which then run without SoftHSM2.
//
// A Token keeps RSA and ECDSA keys in memory (crypto/rsa, crypto/ecdsa)
// and offers what the consumers use of *hsm.Token, with the same errors:
// GenerateRSA (2048, 3072 or 4096 bits; a label in use is
// hsm.ErrLabelExists), GenerateEC (P-256, P-384, P-521), Keys, Key (an *hsm.Key
// that signs through the Token, hsm.NewKey), CheckKey, DestroyKey
// (hsm.ErrKeyNotFound), SignDigest and SignDigestOpts: PKCS#1 v1.5 over a
// DigestInfo (RFC 8017 §9.2), RSASSA-PSS with a salt of the hash's length,
// or ECDSA as DER, verified before they are returned, with
// hsm.ErrUnsupportedAlgorithm and hsm.ErrBadDigest. An error after which no signature exists satisfies
// hsm.NotSigned, as the real token's does. Keys it generates pass the key
// policy of hsm (never extractable, generated in the token).
//
// Faults are injected in the style of letsencrypt/boulder's pkcs11helpers
// MockCtx and of hsm/hsmtest.Faults, by operation name ("GenerateRSA",
// "GenerateEC", "Keys", "Key", "CheckKey", "DestroyKey", "SignDigest" for
// SignDigest and SignDigestOpts alike): fail a call once or always with a
// given error, add latency, run a hook before each call,
// or make the token vanish (SetGone) so that calls answer
// hsm.ErrTokenUnavailable until it is back. Calls are counted.
//
// The outage model follows *hsm.Token: a key already known makes CheckKey
// and Key succeed without asking the device (the real token's cached
// handle), so the token notices that it is gone at the first call that
// reaches the device (SignDigest, GenerateRSA, ...). From then on Available
// reports false and every call fails at once with hsm.ErrTokenUnavailable,
// until SetGone(false) (the real token reconnects in the background).
// Options.Sessions bounds concurrent calls as the real session pool does:
// a call that finds none free within Options.AcquireTimeout, or before its
// context ends, fails with hsm.ErrBusy.
//
// Integration tests (cmd/signd, hsm) keep the real SoftHSM2 token; this
// package is for tests whose subject is the protocol, not the device.
package softtoken
