// Package clientca reads and checks what names the provisioning API's
// clients (admin.api_*): the file of the CA certificates that issue their
// certificates (admin.api_client_ca), that CA's CRL (admin.api_client_crl)
// and the certificate entries of each role (admin.api_roles.*). ReadCAs
// and ReadCRL are what the daemon serves with, Replaces what a reload
// may put in place of the CRL in force, Rollback what a start may put in
// place of the CRL last in force as the audit log records it (Record,
// the same rules on what a record keeps); CAFile, CRLFile and Entries
// are config's checks of the same files and entries, each returning "" or
// the problem in words, as the checks of config/rules do. The key rows
// and the rest of admin.api_* stay in package config's one key table.
//
// It imports config/rules and no other signd package.
package clientca
