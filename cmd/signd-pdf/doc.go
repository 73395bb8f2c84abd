// Command signd-pdf signs a PDF through signd (or any CSC v1 service): a
// PAdES B-T approval signature whose value comes from signatures/signHash
// and whose signature time-stamp comes from signatures/timestamp.
//
//	signd-pdf --url https://sign.example.org --client-id rp --client-secret-file rp.secret \
//	    --credential CREDENTIAL_ID --in contract.pdf --out contract-signed.pdf
//
// It runs the OAuth 2.0 authorization code flow (CSC v1 §8.3, with PKCE)
// in the user's browser with a callback on a loopback port
// (--redirect-uri, registered for the client): once in scope "service"
// for the access token (unless --access-token-file gives one) and once in
// scope "credential" for the SAD of the one digest it signs. Package
// remote does the signing.
package main
