// Package csc serves the Cloud Signature Consortium API v1 (v1.0.4.0) under
// /csc/v1: Handler mounts every method, those of this package — info,
// credentials/list (list.go), credentials/info (credinfo.go), auth/login
// and auth/revoke (auth.go), signatures/timestamp (timestamp.go) — and
// those of its parts, which it builds from its own fields:
// signatures/signHash (package csc/signhash: the SAD checks, the signing
// during the commit, the SAD given back) and credentials/authorize,
// extendTransaction and sendOTP (package csc/sad: explicit authorization,
// its PIN checked by the authorization server's lockout). What they all
// share — reading a request, the refusals, the store view, who may sign
// with a credential — is package csc/protocol. It also holds the "service"
// and "credential" scope profiles the authorization server (package oauth)
// calls (profile.go) and the account page's Backend (account.go).
//
// It owns the CSC rules and nothing below them: persistence is package
// store (through Store), authentication of the Bearer is oauth's
// RequireBearer, and signatures come from a Signer — *hsm.Token satisfies
// it — so csc never talks PKCS#11 itself and does not import hsm.
//
// # Handlers
//
// Every bearer-authenticated method has one shape: protocol.ParseRequest
// (the bearer's grant and the body read once by protocol.ReadParams) runs
// the method's parse, which checks the parameters in the order the
// specification's refusals need and returns a request value
// (credentialInfoRequest, listRequest, ...); then a method with no HTTP in
// it runs the phases and returns the response or an error;
// protocol.JSONMethod writes it. Parsing and validating are one step on
// purpose: CSC names the first problem of a request, and type and value
// checks interleave in that order. signHash's phases return an outcome
// that one observer turns into metrics; audit entries are written inside
// the transactions they belong to, never after them.
//
// The parts read this Handler's Store and Revocation at each request, as
// its own methods do (liveStore, liveRevocation in handler.go), and share
// one protocol.Certs, the cache of parsed leaf certificates.
//
// # Errors
//
// Every handler returns errors as values. The /csc/v1 group is tagged with
// the CSC error dialect, and the daemon's one error renderer
// (oauth.Renderer) writes them through its mapping (errors.go) as JSON
// {"error", "error_description"} with the CSC v1 §10 status and the exact
// descriptions of the specification ("Invalid parameter SAD", "Missing (or
// invalid type) string parameter credentialID", ...). Anything that is not a
// protocol error is logged and answered as a bare 500 server_error; a
// Signer error that answers Unavailable, or a store that cannot commit, is
// 503 temporarily_unavailable with Retry-After. What the other Signer
// errors mean is signHash's (package csc/signhash).
package csc
