// Package remote signs PDF documents through a CSC v1 signing service: a
// PAdES baseline B-T signature (ETSI EN 319 142-1) whose signature value
// comes from signatures/signHash and whose signature time-stamp comes from
// signatures/timestamp.
//
// digitorus/pdfsign builds the incremental update, the CMS SignedData and
// its signed attributes. Its crypto.Signer is Signer: for the one digest
// it is asked to sign (the signed attributes, known only then, since they
// hold the signing time) it obtains a SAD bound to that digest through
// Client.Authorize (the credential-scope OAuth code flow, CSC v1 §8.3) and
// calls signHash. pdfsign fetches time-stamps from an RFC 3161 HTTP
// server; Sign serves one on a loopback port for the duration of the
// signing that forwards each query to signatures/timestamp.
package remote
