package oauth

import (
	"fmt"

	"github.com/signd/signd/store"
)

// AuthorizationDetail is one authorization detail in the shape of RFC 9396
// (OAuth 2.0 Rich Authorization Requests) §2: what a request, its code and
// the token it turns into authorize beyond their scopes. The profile that
// sets it owns its meaning; the server stores it with the request and the
// code, binds the token to it and gives it back unchanged.
type AuthorizationDetail struct {
	// Type is RFC 9396 §2 "type". It must be the DetailType of the profile
	// that sets it (ProfileInfo.DetailType).
	Type string
	// Identifier is RFC 9396 §2 "identifier": the one resource the
	// authorization is for. It is indexed with the stored token, so that
	// revoking the resource revokes the tokens bound to it. Required.
	Identifier string
	// Digests are digests of the data the authorization covers, raw bytes
	// in request order; a token bound to them authorizes an operation over
	// exactly that data.
	Digests [][]byte
}

// The store keeps one detail per request, code and token, in fields that
// predate this type (store.Grant and store.Token: CredentialID, Hashes).
// The three functions below are the only place that maps between the two;
// the detail's Type is not stored but is the DetailType of the grant's
// profile.

// StoreDetails records ds, the details that g's profile (whose detail type
// is detailType) returned from Authorize, in g. More than one detail, a
// detail of another type, or one without an identifier is a profile bug.
func StoreDetails(g *store.Grant, detailType string, ds []AuthorizationDetail) error {
	switch {
	case len(ds) == 0:
		return nil
	case len(ds) > 1:
		return fmt.Errorf("oauth: profile %s binds %d authorization details; the store keeps one", g.Profile, len(ds))
	case ds[0].Type == "" || ds[0].Type != detailType:
		return fmt.Errorf("oauth: profile %s binds an authorization detail of type %q", g.Profile, ds[0].Type)
	case ds[0].Identifier == "":
		return fmt.Errorf("oauth: profile %s binds an authorization detail without an identifier", g.Profile)
	}
	g.CredentialID, g.Hashes = ds[0].Identifier, ds[0].Digests
	return nil
}

// grantDetails returns the details stored in g, whose profile's detail
// type is detailType.
func grantDetails(g *store.Grant, detailType string) []AuthorizationDetail {
	if g.CredentialID == "" {
		return nil
	}
	return []AuthorizationDetail{{Type: detailType, Identifier: g.CredentialID, Digests: g.Hashes}}
}

// bindToken binds a token of kind store.TokenSAD to the detail of the
// code's grant g, which must have one with digests.
func bindToken(tok *store.Token, g *store.Grant) error {
	if g.CredentialID == "" || len(g.Hashes) == 0 {
		return fmt.Errorf("oauth: profile %s issues a %s token for a code without an authorization detail and digests", g.Profile, tok.Kind)
	}
	tok.CredentialID, tok.Hashes = g.CredentialID, g.Hashes
	return nil
}
