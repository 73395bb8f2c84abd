// Package oidc is signd's OpenID Connect provider. It owns:
//
//   - discovery (GET /.well-known/openid-configuration) and the JWKS
//     (GET /.well-known/jwks.json);
//   - the ID-token signing keys: RSA (RS256, PS256) and EC P-256 (ES256)
//     key pairs generated inside the HSM, one life cycle per algorithm
//     (next → active → retired, see KeyRing), and the compact JWS signed
//     by the HSM in each algorithm (signer.go); each change of the keys
//     hands its caller's Recorder the write transaction that makes it,
//     where the caller appends the audit entry (KeyChange);
//   - GET and POST /userinfo with the claims of the granted scopes that
//     the user approved on the consent page as they are now (what the
//     user saw is what the relying party gets);
//   - the claim mapping per scope under a configurable namespace (Claims);
//   - pairwise subjects and their secret salt (Pairwise);
//   - the `openid` scope profile that plugs into the authorization server of
//     package oauth (Profile).
//
// It does not re-implement OAuth: /oauth2/authorize, /oauth2/token, the
// login and consent pages, codes, sessions and bearer-token checks belong
// to package oauth. oidc never talks PKCS#11; it uses the hsm key API
// through the KeyStore interface.
package oidc
