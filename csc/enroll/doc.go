// Package enroll prepares the key material of a CSC credential (CSC v1
// §8.3, credentials/info: key and cert): it generates the credential's RSA
// key pair inside the token, writes the PKCS#10 certificate request for the
// operator's subject distinguished name (RFC 4514 strings, ParseDN), and
// checks the certificate chain a CA returns before it is attached to the
// credential (ParseChainPEM, CheckChain, VerifyChain).
//
// It takes the token through the small Keys interface it declares — key
// generation and a crypto.Signer for a key ID — so it needs neither
// *hsm.Token nor *hsm.Key, and its tests run on software keys. The request
// is signed with hsm.CreateCSR, whose random source always fails: RSA
// PKCS#1 v1.5 signing is deterministic, and nothing in a request may
// depend on local randomness.
//
// Persistence, audit entries and the operator's errors are the caller's
// (package cmd/signd/admin): enroll returns plain errors whose text is
// written for an operator.
package enroll
