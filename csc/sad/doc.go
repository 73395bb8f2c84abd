// Package sad issues SADs without the OAuth 2.0 credential scope:
// credentials/authorize, credentials/extendTransaction and
// credentials/sendOTP (CSC v1 §11.6–11.8), all in authorize.go. Package
// csc mounts it (Handler); the request reading, the credential rules and
// the store view are csc/protocol's, and the SAD is spent by
// signatures/signHash (csc/signhash).
//
// Explicit authorization: a credential whose authMode is explicit gets
// its SAD from credentials/authorize, called with the user's service
// access token and the signing PIN (and the TOTP code when the user has
// one), instead of from the OAuth 2.0 credential scope. The PIN is checked
// by the password checker with the consent page's reservation and lockout
// (passwords.Checker.CheckSigningPIN), so a PIN guess costs the same
// through either door. The SAD is the same record the
// token endpoint writes: bound to the credential, the multiset of hashes,
// the user and the client, single use, oauth.sad_ttl, and to the user's
// secret generation the PIN was checked against (store.User.
// SecretGeneration): a PIN reset that commits while the PIN is checked
// refuses the SAD, and one after it refuses its use.
//
// credentials/extendTransaction trades an unexpired SAD of a credential
// with multisign > 1 for a new one with the same binding and a fresh
// expiry; the old value is gone in the same transaction, so there is
// still one usable SAD for one signHash. An authorization is never
// extended past maxSADExtensions × oauth.sad_ttl after the user
// authenticated.
//
// Every refusal of authorize and extendTransaction after the parameters
// is audited; a SAD is written only in a transaction that checks the
// credential, the user, the PIN lock and the client again.
package sad
