// Package tsa is signd's time-stamping authority: RFC 3161 time-stamp
// tokens (as updated by RFC 5816) over a client's digest, signed by a key
// held in the HSM whose certificate carries the critical id-kp-timeStamping
// extended key usage and nothing else (RFC 3161 §2.3). CSC v1 §11.10
// signatures/timestamp serves them.
//
// The TSA's identity lives in the token only: a key pair generated there
// (label "<label>-<id>"), its certificate stored next to it under the
// label (csc.timestamp.label, DefaultLabel "signd-tsa") and the
// certificate's issuers under IssuerLabel. HSMSource finds the newest such
// certificate on each call (cached briefly), so an operator enrols a new
// key and imports its certificate while the daemon serves; the next token
// uses it. Only a key signd tsa enroll made signs (keys.go), and with a
// Revocation only a certificate whose chain is answered valid and current.
package tsa
