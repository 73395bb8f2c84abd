// Package enroll prepares the key material of a CSC credential (CSC v1
// §8.3, credentials/info: key and cert): it generates the credential's key
// pair inside the token (RSA 2048/3072/4096 or ECDSA on P-256/P-384/P-521),
// writes the PKCS#10 certificate request for the operator's subject
// distinguished name (RFC 4514 strings, ParseDN), and
// checks the certificate chain a CA returns before it is attached to the
// credential (ParseChainPEM, CheckChain, VerifyChain).
//
// It takes the token through the small Keys interface it declares — key
// generation and a crypto.Signer for a key ID — so it needs neither
// *hsm.Token nor *hsm.Key, and its tests run on software keys. The request
// is signed with hsm.CreateCSR (RSA PKCS#1 v1.5 with SHA-256, or ECDSA with
// SHA-256 on P-256, SHA-384 on P-384 and SHA-512 on P-521), whose random
// source always fails:
// the token supplies any randomness an ECDSA signature needs, and nothing
// in a request may depend on local randomness.
//
// Persistence, audit entries and the operator's errors are the caller's
// (package admin): enroll returns plain errors whose text is
// written for an operator.
package enroll
