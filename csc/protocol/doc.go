// Package protocol is what every method of the CSC API v1 shares, below
// the packages that serve them (csc, csc/signhash, csc/sad):
//
//   - reading a request (request.go): the body read once and strictly
//     (ReadParams: Content-Type application/json, at most 64 KiB, one JSON
//     object, no duplicate names at any depth) into Params, whose typed
//     getters give the specification's refusals; ParseRequest, the common
//     opening of a bearer-authenticated method (the bearer's grant, the
//     body, the method's parse into its request value), and JSONMethod, a
//     method made of its parse and a phase without HTTP;
//   - the hash arrays of signHash, credentials/authorize and
//     extendTransaction (hashes.go: HashArray, DigestSize);
//   - the refusals with the specification's descriptions (errors.go:
//     BadRequest, Missing, Invalid, Unavailable) and the one Signer
//     error meaning the dialect itself asks (UnavailableError, Answers);
//   - the store view of the API (store.go: Tx, Store);
//   - who may sign with a credential now and whether a SAD still stands
//     (rules.go: Certs, with its cache of parsed leaf certificates
//     (certcache.go) and the revocation status; RevokedSAD, SameHashes),
//     and how the audit log names a requested credential
//     (AuditCredential);
//   - Routes, the registration of methods on /csc/v1 that info lists.
//
// It serves no route itself and imports only oauth (the error values and
// the Grant), store and csc/certstatus.
package protocol
