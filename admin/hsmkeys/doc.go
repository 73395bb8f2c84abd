// Package hsmkeys is the administration of the keys in the token: signing
// credentials (key pair, CSR, certificate import, status, how signatures
// are authorized, removal), the time-stamping key, the OIDC signing keys
// and HSMInfo. The key material and chain checks are package
// csc/enroll's, what is asked of the token admin/tokenkeys's. Each
// operation is one audited act (admin/act); admin.Local calls it through
// HSM.
package hsmkeys
