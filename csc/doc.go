// Package csc serves the Cloud Signature Consortium API v1 (v1.0.4.0) under
// /csc/v1: info, credentials/list, credentials/info, credentials/authorize,
// credentials/extendTransaction, credentials/sendOTP and
// signatures/signHash, with the SAD checks and the audit entries of every
// signHash and authorization attempt (authorize.go: explicit
// authorization, its PIN checked by the authorization server's lockout).
// It also holds the "service" and "credential" scope profiles the
// authorization server (package oauth) calls (profile.go).
//
// It owns the CSC rules and nothing below them: persistence is package
// store (through Store), authentication of the Bearer is oauth's
// RequireBearer, and signatures come from a Signer — *hsm.Token satisfies
// it — so csc never talks PKCS#11 itself and does not import hsm.
//
// # Handlers
//
// Every bearer-authenticated method has one shape: parseRequest (the
// bearer's grant and the body read once by readParams) runs the method's
// parse, which checks the parameters in the order the specification's
// refusals need and returns a request value (signHashRequest,
// authorizeRequest, ...); then a method with no HTTP in it runs the
// phases and returns the response or an error; jsonMethod writes it.
// Parsing and validating are one step on purpose: CSC names the first
// problem of a request, and type and value checks interleave in that
// order. signHash's phases (signHashes) return a signHashOutcome that one
// observer, observeSignHash, turns into metrics; audit entries are written
// inside the transactions they belong to, never after them.
//
// # Errors
//
// Every handler returns errors as values. The /csc/v1 group is tagged with
// the CSC error dialect, and the daemon's one error renderer
// (oauth.Renderer) writes them through its mapping (errors.go) as JSON
// {"error", "error_description"} with the CSC v1 §10 status and the exact
// descriptions of the specification ("Invalid parameter SAD", "Missing (or
// invalid type) string parameter credentialID", ...). Anything that is not a
// protocol error is logged and answered as a bare 500 server_error. A
// Signer error answers its own meaning through methods that csc asks with
// errors.As and interfaces of its own (restore.go; package hsm's errors
// implement them): one that answers Unavailable (a busy or reconnecting
// HSM) is 503 temporarily_unavailable with Retry-After, Unsupported is 400
// naming signAlgo, and KeyUnusable (the credential's key is gone from a
// working HSM) is 400 "The credential identified by credentialID is
// disabled". On a node of a cluster (Handler.Clustered), a key that is
// missing from this node's HSM only (KeyMissing) is this node's fault, not
// the client's: 503 temporarily_unavailable "The signing key is not
// available on this node,
// try again later" with Retry-After, the SAD untouched.
//
// # signHash
//
// A request is parsed strictly (Content-Type application/json, at most 64
// KiB, no duplicate keys, typed parameters) and then decided in one store
// write transaction, grouped with concurrent ones (Store.Batch): the
// credential must be the caller's, enabled, with a certificate valid now;
// the SAD must exist, and once it does it is deleted in that same
// transaction whatever follows — it must belong to the Bearer's user and
// client, be bound to this credential, be unexpired, and cover exactly the
// request's hashes. The audit entry of the decision is appended in the same
// transaction, so a SAD is never consumed without its entry and no crash
// can let it be used twice. As soon as the transaction has granted, the HSM
// signs while it commits (signing.go); the signatures leave only when the
// commit succeeded with that grant, and are dropped otherwise.
//
// # No SAD burned by a request that could not sign
//
// Before that transaction the Signer is asked whether the credential's key
// could sign now (Signer.CheckKey: HSM available, a session free, the key
// known); if not, the request is refused (and audited) with its SAD
// untouched. If signing then fails and the error proves (NotSigned) that no
// signature was made, a compensating transaction stores the SAD again,
// unchanged, with its original expiry, and appends a new audit entry
// "restored" referring to the grant. A failure whose outcome is unknown,
// or one after an earlier hash of the request was signed, leaves the SAD
// spent: never a second signature for one SAD.
package csc
