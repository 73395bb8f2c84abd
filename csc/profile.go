package csc

import (
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/signd/signd/oauth"
	"github.com/signd/signd/store"
)

// The two CSC scope profiles of the authorization server (package oauth):
// "service" turns into a Bearer access token for credentials/list and
// credentials/info; "credential" turns into a SAD bound to one credential
// and one hash, for one signHash. The two are never combined with each
// other or with other scopes.
//
// The credential scope states what it authorizes as an RFC 9396
// authorization detail, which the server stores with the request and the
// code and binds the SAD to; the meaning is this package's.

// Profile names, which are also the scopes.
const (
	ScopeService    = "service"
	ScopeCredential = "credential"
)

// detailCredential is the authorization details type of the credential
// scope, as CSC v2 §8 names it: the detail's Identifier is the credential
// ID, its Digests the hashes to sign (raw SHA-256 digests, in request
// order). A SAD is bound to exactly these.
const detailCredential = "credential"

// credentialDetail returns the credential detail of b; its Identifier is
// "" when b has none.
func credentialDetail(b oauth.Binding) oauth.AuthorizationDetail {
	for _, d := range b.Details {
		if d.Type == detailCredential {
			return d
		}
	}
	return oauth.AuthorizationDetail{}
}

// Limits of the credential scope's authorize parameters.
const (
	profileMaxCredentialID = 128
	profileMaxDescription  = 500 // CSC v1 §11.9 description
	profileParamDesc       = "description"
)

// profileError is a redirected protocol error of a profile.
func profileError(code, desc string) *oauth.Error {
	return &oauth.Error{Code: code, Description: desc, Status: http.StatusBadRequest}
}

// onlyScope refuses any scope beside want (invalid_scope).
func onlyScope(scopes []string, want string) error {
	if len(scopes) != 1 || scopes[0] != want {
		return profileError(oauth.CodeInvalidScope, "Scope "+want+" cannot be combined with other scopes")
	}
	return nil
}

// ServiceProfile is the "service" scope: after the user's consent, a
// Bearer access token (oauth.access_token_ttl) for credentials/list and
// credentials/info. A login session may replace the password.
type ServiceProfile struct{}

var _ oauth.Profile = ServiceProfile{}

// Info implements oauth.Profile. CSC requires redirect_uri.
func (ServiceProfile) Info() oauth.ProfileInfo { return oauth.ProfileInfo{Name: ScopeService} }

// Match implements oauth.Profile.
func (ServiceProfile) Match(scopes []string) bool { return slices.Contains(scopes, ScopeService) }

// Authorize implements oauth.Profile: the scope must be service alone.
func (ServiceProfile) Authorize(_ context.Context, r *oauth.AuthorizeRequest) (*oauth.Authorization, error) {
	if err := onlyScope(r.Scopes, ScopeService); err != nil {
		return nil, err
	}
	return &oauth.Authorization{Login: oauth.LoginPolicy{SSO: true}}, nil
}

// CheckUser implements oauth.Profile: every authenticated user may list
// their own credentials.
func (ServiceProfile) CheckUser(context.Context, *oauth.Request) error { return nil }

// Consent implements oauth.Profile.
func (ServiceProfile) Consent(context.Context, *oauth.Request) (*oauth.Consent, error) {
	return &oauth.Consent{
		Title: oauth.Text{NL: "Toegang tot uw ondertekeningssleutels", EN: "Access to your signing keys"},
		Permissions: []oauth.Text{{
			NL: "uw ondertekeningssleutels opvragen en de gegevens ervan lezen (status, certificaten)",
			EN: "list your signing keys and read their details (status, certificates)",
		}},
	}, nil
}

// Issue implements oauth.Profile: a Bearer access token.
func (ServiceProfile) Issue(*oauth.Request) (*oauth.Issuance, error) {
	return &oauth.Issuance{Kind: store.TokenAccess, TokenType: "Bearer"}, nil
}

// TokenResponse implements oauth.Profile: nothing beyond the token.
func (ServiceProfile) TokenResponse(context.Context, *oauth.Request, *oauth.IssuedToken) (map[string]any, error) {
	return nil, nil
}

// CredentialProfile is the "credential" scope: credentialID,
// numSignatures=1 and one SHA-256 hash; after a fresh login (no single
// sign-on) and the signing PIN on the consent page, a SAD
// (oauth.sad_ttl) bound to the user, the client, the credential and the
// hash (its credential authorization detail).
type CredentialProfile struct {
	Store CredentialStore
	Now   func() time.Time // nil = time.Now
	// Revocation refuses credentials whose certificate is revoked,
	// suspended or of unknown status (see Handler.Revocation). nil =
	// validity dates only.
	Revocation Revocation
}

var _ oauth.Profile = (*CredentialProfile)(nil)

// CredentialStore is the credential profile's view of the store: it reads
// credentials (store.Scope makes one).
type CredentialStore interface {
	View(ctx context.Context, fn func(store.CredentialReader) error) error
}

// Info implements oauth.Profile. CSC requires redirect_uri.
func (p *CredentialProfile) Info() oauth.ProfileInfo {
	return oauth.ProfileInfo{Name: ScopeCredential, DetailType: detailCredential}
}

// Match implements oauth.Profile.
func (p *CredentialProfile) Match(scopes []string) bool {
	return slices.Contains(scopes, ScopeCredential)
}

// Authorize implements oauth.Profile. It requires credentialID,
// numSignatures (exactly 1) and hash: base64url, padded or not, of 32, 48
// or 64 bytes (a SHA-256, SHA-384 or SHA-512 digest); CSC allows a
// comma-separated list, whose length must then be numSignatures, so
// exactly one. description (at most 500 characters) is
// shown on the consent page; account_token, clientData and lang are
// accepted and not needed.
func (p *CredentialProfile) Authorize(_ context.Context, r *oauth.AuthorizeRequest) (*oauth.Authorization, error) {
	if err := onlyScope(r.Scopes, ScopeCredential); err != nil {
		return nil, err
	}
	bad := func(desc string) error { return profileError(oauth.CodeInvalidRequest, desc) }
	credID := r.Params.Get("credentialID")
	switch {
	case credID == "":
		return nil, bad("Missing parameter credentialID")
	case len(credID) > profileMaxCredentialID:
		return nil, bad("Invalid parameter credentialID")
	}
	num := r.Params.Get("numSignatures")
	if num == "" {
		return nil, bad("Missing parameter numSignatures")
	}
	if n, err := strconv.Atoi(num); err != nil || n != 1 {
		return nil, bad("Invalid value for parameter numSignatures, it must be 1")
	}
	raw := r.Params.Get("hash")
	if raw == "" {
		return nil, bad("Missing parameter hash")
	}
	parts := strings.Split(raw, ",")
	if len(parts) != 1 {
		return nil, bad("The number of hashes must equal numSignatures")
	}
	digest, ok := decodeHashParam(parts[0])
	if !ok {
		return nil, bad("Invalid parameter hash, it must be a base64url SHA-256, SHA-384 or SHA-512 digest (32, 48 or 64 bytes)")
	}
	params := map[string]string{}
	if d := r.Params.Get(profileParamDesc); d != "" {
		if len(d) > profileMaxDescription || !utf8.ValidString(d) {
			return nil, bad("Invalid parameter description")
		}
		params[profileParamDesc] = d
	} else {
		params = nil
	}
	return &oauth.Authorization{
		Binding: oauth.Binding{
			Details: []oauth.AuthorizationDetail{{Type: detailCredential, Identifier: credID, Digests: [][]byte{digest}}},
			Params:  params,
		},
		Login: oauth.LoginPolicy{SSO: false},
	}, nil
}

// decodeHashParam decodes one base64url hash of the authorize request,
// with or without padding, and requires the size of a SHA-256, SHA-384 or
// SHA-512 digest (signHash checks it against the signature's hash).
func decodeHashParam(s string) ([]byte, bool) {
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
	if err != nil || len(b) != sha256.Size && len(b) != sha512.Size384 && len(b) != sha512.Size {
		return nil, false
	}
	return b, true
}

// errCredentialRefused is the one answer for every credential the user may
// not sign with: unknown, someone else's, pending, disabled, or with a
// certificate that is not valid now. It does not tell them apart.
var errCredentialRefused = &oauth.Error{
	Code: oauth.CodeAccessDenied, Status: http.StatusForbidden,
	Description: "The credential is unknown or cannot be used for signing",
}

// credential returns the request's credential and its leaf certificate if
// the user may sign with it now, else errCredentialRefused.
func (p *CredentialProfile) credential(ctx context.Context, r *oauth.Request) (*store.Credential, *x509.Certificate, error) {
	var cred *store.Credential
	err := p.Store.View(ctx, func(tx store.CredentialReader) (err error) {
		cred, err = tx.Credential(credentialDetail(r.Binding).Identifier)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, errCredentialRefused
	}
	if err != nil {
		return nil, nil, err
	}
	if cred.Owner != r.User.Username || cred.Status != store.CredentialEnabled || len(cred.Chain) == 0 {
		return nil, nil, errCredentialRefused
	}
	leaf, err := x509.ParseCertificate(cred.Chain[0])
	if err != nil {
		return nil, nil, errCredentialRefused
	}
	now := time.Now
	if p.Now != nil {
		now = p.Now
	}
	if t := now(); t.Before(leaf.NotBefore) || t.After(leaf.NotAfter) {
		return nil, nil, errCredentialRefused
	}
	if revoked(p.Revocation, cred.Chain, leaf) {
		return nil, nil, errCredentialRefused
	}
	return cred, leaf, nil
}

// CheckUser implements oauth.Profile: the credential must be the user's,
// enabled, with a certificate valid now (access_denied otherwise, the same
// answer whether the ID exists or not).
func (p *CredentialProfile) CheckUser(ctx context.Context, r *oauth.Request) error {
	_, _, err := p.credential(ctx, r)
	return err
}

// Consent implements oauth.Profile: the credential's label and certificate
// subject, the hash in hex, the client's description if any, and the
// signing PIN.
func (p *CredentialProfile) Consent(ctx context.Context, r *oauth.Request) (*oauth.Consent, error) {
	cred, leaf, err := p.credential(ctx, r)
	if err != nil {
		return nil, err
	}
	label := cred.Label
	if cred.Description != "" {
		label = cred.Description + " (" + cred.Label + ")"
	}
	c := &oauth.Consent{
		Title: oauth.Text{NL: "Ondertekenen met uw sleutel", EN: "Sign with your key"},
		Permissions: []oauth.Text{{
			NL: "één handtekening zetten met de sleutel hieronder, over de getoonde hash",
			EN: "create one signature with the key below, over the hash shown",
		}},
		Items: []oauth.ConsentItem{
			{Label: oauth.Text{NL: "Sleutel", EN: "Key"}, Value: label},
			{Label: oauth.Text{NL: "Certificaathouder", EN: "Certificate subject"}, Value: leaf.Subject.String()},
		},
		RequirePIN: true,
	}
	for _, h := range credentialDetail(r.Binding).Digests {
		c.Items = append(c.Items, oauth.ConsentItem{
			Label: oauth.Text{NL: "Hash (SHA-256, hex)", EN: "Hash (SHA-256, hex)"},
			Value: hex.EncodeToString(h), Code: true,
		})
	}
	if d := r.Binding.Params[profileParamDesc]; d != "" {
		c.Items = append(c.Items, oauth.ConsentItem{Label: oauth.Text{NL: "Omschrijving", EN: "Description"}, Value: d})
	}
	return c, nil
}

// Issue implements oauth.Profile: a SAD, bound by the server to the
// code's credential detail (the credential and the hash).
func (p *CredentialProfile) Issue(*oauth.Request) (*oauth.Issuance, error) {
	return &oauth.Issuance{Kind: store.TokenSAD, TokenType: "SAD"}, nil
}

// TokenResponse implements oauth.Profile: nothing beyond the SAD.
func (p *CredentialProfile) TokenResponse(context.Context, *oauth.Request, *oauth.IssuedToken) (map[string]any, error) {
	return nil, nil
}
