package oidc

import (
	"encoding/base64"
	"slices"
	"strings"

	"github.com/signd/signd/oauth"
	"github.com/signd/signd/store"
)

// Scopes signd releases claims for, besides the namespaced ones.
const (
	ScopeOpenID = "openid"
	ScopeEmail  = "email"
)

// Suffixes of the namespaced scopes: <namespace>.personal_info and so on.
const (
	suffixPersonalInfo = ".personal_info"
	suffixIDNumber     = ".id_number"
	suffixProof        = ".proof"
)

// attribute maps one identity attribute of store.User.Claims to the claim
// it is released as. ns marks a claim name that gets the namespace prefix;
// label is what the consent page calls it.
type attribute struct {
	key   string // key in store.User.Claims
	claim string // claim name, without the namespace when ns
	ns    bool
	label oauth.Text
}

// personalInfo is what <ns>.personal_info releases, in consent-page order.
var personalInfo = []attribute{
	{"given_name", "given_name", false, oauth.Text{NL: "Voornamen", EN: "Given names"}},
	{"last_name", "last_name", true, oauth.Text{NL: "Achternaam", EN: "Last name"}},
	{"birthdate", "birthdate", false, oauth.Text{NL: "Geboortedatum", EN: "Date of birth"}},
	{"birthplace", "birthplace", true, oauth.Text{NL: "Geboorteplaats", EN: "Place of birth"}},
	{"nationality", "nationality", true, oauth.Text{NL: "Nationaliteit", EN: "Nationality"}},
	{"document_type", "document.type", true, oauth.Text{NL: "Soort identiteitsbewijs", EN: "Type of identity document"}},
	{"nl_brp_voornaam", "nl_brp_voornaam", true, oauth.Text{NL: "Voornamen volgens de BRP", EN: "Given names (BRP)"}},
	{"nl_brp_voorvoegsel", "nl_brp_voorvoegsel", true, oauth.Text{NL: "Voorvoegsel volgens de BRP", EN: "Surname prefix (BRP)"}},
	{"nl_brp_geslachtsnaam", "nl_brp_geslachtsnaam", true, oauth.Text{NL: "Geslachtsnaam volgens de BRP", EN: "Surname (BRP)"}},
	{"nl_brp_geslachtsnaam_zonder_voorvoegsel", "nl_brp_geslachtsnaam_zonder_voorvoegsel", true,
		oauth.Text{NL: "Geslachtsnaam zonder voorvoegsel volgens de BRP", EN: "Surname without prefix (BRP)"}},
	{"id_document_issuance_date", "id_document_issuance_date", true,
		oauth.Text{NL: "Datum van afgifte van het identiteitsbewijs", EN: "Issue date of the identity document"}},
	{"id_document_issuance_place", "id_document_issuance_place", true,
		oauth.Text{NL: "Plaats van afgifte van het identiteitsbewijs", EN: "Place of issue of the identity document"}},
}

var idNumber = attribute{"id_number", "id_number", true,
	oauth.Text{NL: "Documentnummer van het identiteitsbewijs", EN: "Number of the identity document"}}

var (
	labelEmail = oauth.Text{NL: "E-mailadres", EN: "Email address"}
	labelProof = oauth.Text{NL: "Bewijsstukken", EN: "Proof documents"}
)

// Protocol claims: in the ID token and in every /userinfo answer.
var protocolClaims = []string{"sub", "iss", "aud", "exp", "iat", "auth_time", "nonce", "at_hash", "rat"}

// Claims maps scopes to claims under a namespace (oidc.claim_namespace,
// com.vendor in the seed). Scope → claims (DESIGN.md "OIDC claims"):
//
//	openid               sub, aud, auth_time, iat, iss, rat
//	email                email, email_verified
//	<ns>.personal_info   given_name, <ns>.last_name, birthdate, <ns>.birthplace,
//	                     <ns>.nationality, <ns>.document.type, <ns>.nl_brp_*,
//	                     <ns>.id_document_issuance_date, <ns>.id_document_issuance_place
//	<ns>.id_number       <ns>.id_number
//	<ns>.proof           <ns>.proof: [{id, content_type, base64_encoded_content}]
//
// A claim the user lacks is omitted, never null or "".
type Claims struct {
	Namespace string
}

func (c Claims) ns(name string) string { return c.Namespace + "." + name }

// ScopePersonalInfo returns <ns>.personal_info.
func (c Claims) ScopePersonalInfo() string { return c.Namespace + suffixPersonalInfo }

// ScopeIDNumber returns <ns>.id_number.
func (c Claims) ScopeIDNumber() string { return c.Namespace + suffixIDNumber }

// ScopeProof returns <ns>.proof.
func (c Claims) ScopeProof() string { return c.Namespace + suffixProof }

// Scopes returns every scope of the provider: openid first.
func (c Claims) Scopes() []string {
	return []string{ScopeOpenID, ScopeEmail, c.ScopePersonalInfo(), c.ScopeIDNumber(), c.ScopeProof()}
}

// IsScope reports whether s is one of Scopes.
func (c Claims) IsScope(s string) bool { return slices.Contains(c.Scopes(), s) }

// Supported returns claims_supported: the protocol claims and every
// identity claim.
func (c Claims) Supported() []string {
	out := slices.Clone(protocolClaims)
	out = append(out, "email", "email_verified")
	for _, a := range personalInfo {
		out = append(out, c.name(a))
	}
	return append(out, c.name(idNumber), c.ns("proof"))
}

func (c Claims) name(a attribute) string {
	if a.ns {
		return c.ns(a.claim)
	}
	return a.claim
}

// WantsProofs reports whether scopes release proof documents, so the
// caller knows to load their content.
func (c Claims) WantsProofs(scopes []string) bool { return slices.Contains(scopes, c.ScopeProof()) }

// Identity returns the identity claims that scopes release for u (proofs:
// the user's proof documents with content, loaded when WantsProofs). The
// protocol claims (sub, aud, ...) are the caller's.
func (c Claims) Identity(u *store.User, proofs []store.Proof, scopes []string) map[string]any {
	out := map[string]any{}
	if slices.Contains(scopes, ScopeEmail) && u.Email != "" {
		out["email"] = u.Email
		out["email_verified"] = u.EmailVerified
	}
	if slices.Contains(scopes, c.ScopePersonalInfo()) {
		for _, a := range personalInfo {
			if v := u.Claims[a.key]; v != "" {
				out[c.name(a)] = v
			}
		}
	}
	if slices.Contains(scopes, c.ScopeIDNumber()) {
		if v := u.Claims[idNumber.key]; v != "" {
			out[c.name(idNumber)] = v
		}
	}
	if c.WantsProofs(scopes) && len(proofs) > 0 {
		list := make([]proofClaim, 0, len(proofs))
		for _, p := range proofs {
			list = append(list, proofClaim{ID: p.ID, ContentType: p.ContentType, Content: base64.StdEncoding.EncodeToString(p.Content)})
		}
		out[c.ns("proof")] = list
	}
	return out
}

// proofClaim is one element of <ns>.proof.
type proofClaim struct {
	ID          string `json:"id"`
	ContentType string `json:"content_type"`
	Content     string `json:"base64_encoded_content"`
}

// Shared lists what scopes release about u, as the consent page shows it:
// each claim's label in both page languages with the user's value, so the
// user sees exactly what the client will receive. Claims the user lacks are
// left out, as they are from /userinfo. The pseudonymous sub is not an
// item; the consent page says it in a sentence.
func (c Claims) Shared(u *store.User, scopes []string) []oauth.ConsentItem {
	var out []oauth.ConsentItem
	if slices.Contains(scopes, ScopeEmail) && u.Email != "" {
		out = append(out, oauth.ConsentItem{Label: labelEmail, Value: u.Email})
	}
	if slices.Contains(scopes, c.ScopePersonalInfo()) {
		for _, a := range personalInfo {
			if v := u.Claims[a.key]; v != "" {
				out = append(out, oauth.ConsentItem{Label: a.label, Value: v})
			}
		}
	}
	if slices.Contains(scopes, c.ScopeIDNumber()) {
		if v := u.Claims[idNumber.key]; v != "" {
			out = append(out, oauth.ConsentItem{Label: idNumber.label, Value: v, Code: true})
		}
	}
	if c.WantsProofs(scopes) && len(u.Proofs) > 0 {
		ids := make([]string, 0, len(u.Proofs))
		for _, p := range u.Proofs {
			ids = append(ids, p.ID+" ("+p.ContentType+")")
		}
		out = append(out, oauth.ConsentItem{Label: labelProof, Value: strings.Join(ids, ", ")})
	}
	return out
}
