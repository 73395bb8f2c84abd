package csc

import (
	"cmp"
	"context"
	"crypto/sha512"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/signd/signd/csc/protocol"
	"github.com/signd/signd/oauth"
	"github.com/signd/signd/store"
)

// The two CSC scope profiles of the authorization server (package oauth):
// "service" turns into a Bearer access token for credentials/list and
// credentials/info; "credential" turns into a SAD bound to one credential
// and its numSignatures hashes (up to the credential's multisign), for one
// signHash. The two are never combined with each
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
// numSignatures and as many SHA-256 hashes (up to the credential's
// multisign); after a fresh login (no single sign-on) and the signing PIN
// on the consent page, a SAD (oauth.sad_ttl) bound to the user, the
// client, the credential and the multiset of hashes (its credential
// authorization detail). Credentials whose authMode is explicit are
// authorized with credentials/authorize instead.
type CredentialProfile struct {
	Store CredentialStore
	Now   func() time.Time // nil = time.Now
	// Revocation refuses credentials whose certificate is revoked,
	// suspended or of unknown status (see Handler.Revocation). nil =
	// validity dates only.
	Revocation Revocation
	// MaxSignatures caps numSignatures whatever a credential's multisign
	// (csc.max_hashes_per_request: a SAD must fit one signHash request);
	// 0 means DefaultMaxHashes.
	MaxSignatures int
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
// numSignatures (1 up to MaxSignatures; CheckUser holds it to the
// credential's multisign) and hash: a comma-separated list of exactly
// numSignatures base64url SHA-256, SHA-384 or SHA-512 digests (32, 48
// or 64 bytes), padded or not, in any order and
// duplicates counted (CSC v1 §8.3.2). description (at most 500
// characters) is shown on the consent page; account_token, clientData and
// lang are accepted and not needed.
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
	limit := p.maxSignatures()
	n, err := strconv.Atoi(num)
	if err != nil || n < 1 || n > limit {
		if limit == 1 {
			return nil, bad("Invalid value for parameter numSignatures, it must be 1")
		}
		return nil, bad(fmt.Sprintf("Invalid value for parameter numSignatures, it must be 1 to %d", limit))
	}
	raw := r.Params.Get("hash")
	if raw == "" {
		return nil, bad("Missing parameter hash")
	}
	// Count the commas first: a list longer than numSignatures is refused
	// before it is split or decoded.
	if strings.Count(raw, ",")+1 != n {
		return nil, bad("The number of hashes must equal numSignatures")
	}
	digests := make([][]byte, 0, n)
	for part := range strings.SplitSeq(raw, ",") {
		digest, ok := decodeHashParam(part)
		if !ok {
			return nil, bad("Invalid parameter hash, it must be a base64url SHA-256, SHA-384 or SHA-512 digest (32, 48 or 64 bytes)")
		}
		digests = append(digests, digest)
	}
	params := map[string]string{}
	if d := r.Params.Get(profileParamDesc); d != "" {
		// The consent page shows it as the document's name: no control
		// or format character (a bidi override could reverse what the
		// user reads).
		if len(d) > profileMaxDescription || !utf8.ValidString(d) || strings.IndexFunc(d, unprintable) >= 0 {
			return nil, bad("Invalid parameter description")
		}
		params[profileParamDesc] = d
	} else {
		params = nil
	}
	return &oauth.Authorization{
		Binding: oauth.Binding{
			Details: []oauth.AuthorizationDetail{{Type: detailCredential, Identifier: credID, Digests: digests}},
			Params:  params,
		},
		Login: oauth.LoginPolicy{SSO: false},
	}, nil
}

// maxSignatures is the largest numSignatures of any authorization: what
// one signHash request may carry.
func (p *CredentialProfile) maxSignatures() int {
	if p.MaxSignatures > 0 {
		return p.MaxSignatures
	}
	return DefaultMaxHashes
}

// decodeHashParam decodes one base64url hash of the authorize request,
// with or without padding, and requires the size of a SHA-256, SHA-384 or
// SHA-512 digest (signHash checks it against the signature's hash).
func decodeHashParam(s string) ([]byte, bool) {
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
	if err != nil || !protocol.DigestSize(len(b)) {
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
	if protocol.Revoked(p.Revocation, cred.Chain, leaf) {
		return nil, nil, errCredentialRefused
	}
	// The user may sign with it; now the request must fit it.
	if cred.AuthMode == store.AuthExplicit {
		return nil, nil, errExplicitOnly
	}
	if n := len(credentialDetail(r.Binding).Digests); n > cred.Multisign {
		// The CSC v1 description, word for word, as credentials/authorize
		// answers it; the limit is credentials/info's multisign.
		return nil, nil, profileError(oauth.CodeInvalidRequest, protocol.DescTooMany)
	}
	return cred, leaf, nil
}

// errExplicitOnly refuses the OAuth 2.0 code flow for a credential whose
// signatures are authorized with credentials/authorize (authMode explicit).
var errExplicitOnly = &oauth.Error{
	Code: oauth.CodeAccessDenied, Status: http.StatusForbidden,
	Description: "The credential is authorized with credentials/authorize (authMode explicit), not with scope credential",
}

// CheckUser implements oauth.Profile: the credential must be the user's,
// enabled, with a certificate valid now (access_denied otherwise, the same
// answer whether the ID exists or not); then its authMode must be
// oauth2code (access_denied) and numSignatures at most its multisign
// (invalid_request).
func (p *CredentialProfile) CheckUser(ctx context.Context, r *oauth.Request) error {
	_, _, err := p.credential(ctx, r)
	return err
}

// Consent implements oauth.Profile: the credential as its owner knows it
// (its description, else its certificate's CN; never the HSM label), the
// certificate holder (CN and organisation, not the raw DN), the document
// (the client's CSC description, if any), each hash in hex in groups of
// four, and the signing PIN. html/template escapes every value.
func (p *CredentialProfile) Consent(ctx context.Context, r *oauth.Request) (*oauth.Consent, error) {
	cred, leaf, err := p.credential(ctx, r)
	if err != nil {
		return nil, err
	}
	key := cmp.Or(cred.Description, leaf.Subject.CommonName, cred.ID)
	perm := oauth.Text{
		NL: "één handtekening zetten met de sleutel hieronder, over de getoonde hash",
		EN: "create one signature with the key below, over the hash shown",
	}
	if n := len(credentialDetail(r.Binding).Digests); n > 1 {
		perm = oauth.Text{
			NL: fmt.Sprintf("%d handtekeningen zetten met de sleutel hieronder, één over elke getoonde hash", n),
			EN: fmt.Sprintf("create %d signatures with the key below, one over each hash shown", n),
		}
	}
	c := &oauth.Consent{
		Title:       oauth.Text{NL: "Ondertekenen met uw sleutel", EN: "Sign with your key"},
		Permissions: []oauth.Text{perm},
		Items: []oauth.ConsentItem{
			{Label: oauth.Text{NL: "Sleutel", EN: "Key"}, Value: key},
			{Label: oauth.Text{NL: "Certificaathouder", EN: "Certificate holder"}, Value: holder(leaf.Subject)},
		},
		RequirePIN: true,
	}
	if d := r.Binding.Params[profileParamDesc]; d != "" {
		c.Items = append(c.Items, oauth.ConsentItem{Label: oauth.Text{NL: "Document", EN: "Document"}, Value: d})
	}
	for _, h := range credentialDetail(r.Binding).Digests {
		c.Items = append(c.Items, oauth.ConsentItem{
			Label: oauth.Text{NL: "Hash (" + hashName(h) + ")", EN: "Hash (" + hashName(h) + ")"},
			Value: hexGroups(h), Code: true,
		})
	}
	return c, nil
}

// holder names a certificate's subject as a person reads it: its CN and
// organisation ("Alice Example, Example BV"); the DN when it has neither.
func holder(n pkix.Name) string {
	parts := []string{}
	if n.CommonName != "" {
		parts = append(parts, n.CommonName)
	}
	parts = append(parts, n.Organization...)
	if len(parts) == 0 {
		return n.String()
	}
	return strings.Join(parts, ", ")
}

// hashName is the algorithm of a digest by its length (the authorize
// request accepts SHA-256, SHA-384 and SHA-512 digests).
func hashName(d []byte) string {
	switch len(d) {
	case sha512.Size384:
		return "SHA-384"
	case sha512.Size:
		return "SHA-512"
	}
	return "SHA-256"
}

// unprintable reports a character the consent page must not show: a
// control or format character (Unicode Cc, Cf) or a line or paragraph
// separator.
func unprintable(r rune) bool {
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp)
}

// hexGroups writes d in lower-case hex in groups of four characters, so a
// person can compare it with what their signing application shows.
func hexGroups(d []byte) string {
	h := hex.EncodeToString(d)
	var b strings.Builder
	for i := 0; i < len(h); i += 4 {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(h[i:min(i+4, len(h))])
	}
	return b.String()
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
