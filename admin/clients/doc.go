// Package clients is the administration of OAuth clients: registering
// (with the OIDC checks: one pairwise sector, an ID-token algorithm the
// provider signs with), listing, showing and removing them. Each operation
// is one audited act (admin/act); admin.Local calls it through Clients.
package clients
