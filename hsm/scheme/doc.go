// Package scheme is the signature schemes package hsm signs digests in,
// without the token: Check turns a crypto.SignerOpts and a digest into a
// Scheme (SHA-256, SHA-384 or SHA-512; RSASSA-PSS with a salt as long as
// the hash or the key's maximum) before anything is asked of the token,
// Mechanism gives the PKCS#11 mechanism and the data to sign for a key
// (CKM_RSA_PKCS over a DigestInfo built per call, CKM_RSA_PKCS_PSS with
// MGF1 of the same hash, CKM_ECDSA), and Verify checks a signature with
// the public key before it leaves package hsm, so a fault attack on
// RSA-CRT or on an ECDSA nonce never returns a signature. Its errors are
// ckr.ErrUnsupportedAlgorithm and ckr.ErrBadDigest.
//
// Key (hsm.Key) is the crypto.Signer over a DigestSigner (an hsm.Token,
// or a software token in tests) and CreateCSR the PKCS#10 request signed
// through any crypto.Signer, its signature checked before it is returned.
package scheme
