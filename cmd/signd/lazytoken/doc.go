// Package lazytoken is the PKCS#11 token of an admin command run without
// the daemon: Keys opens it on first use, so that a command that never
// touches a key never needs the PIN or the HSM, and a token that cannot be
// opened is an admin.Error of kind unavailable. It implements what the
// admin service, the OIDC key ring and the audit key ask of a token.
package lazytoken
