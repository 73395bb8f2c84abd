package oidc

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"slices"
	"strconv"
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
// com.vendor in the service specification). Scope → claims (DESIGN.md "OIDC claims"):
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
// item; the consent page says it in a sentence. Each item is named after
// its claim and carries the digest of what it stands for (ConsentDigest),
// so the grant records what the user approved.
func (c Claims) Shared(u *store.User, scopes []string) []oauth.ConsentItem {
	var out []oauth.ConsentItem
	for _, r := range c.releases(u, u.Proofs, scopes) {
		out = append(out, oauth.ConsentItem{Label: r.label, Value: r.shown, Code: r.code, Name: r.name, Digest: r.digest})
	}
	return out
}

// release is one consent-page item and the /userinfo members it stands
// for: the email address (email and email_verified), one personal_info
// attribute, the document number, or the list of proof documents.
type release struct {
	name    string // claim name; the key of the consent record
	label   oauth.Text
	shown   string // the value on the consent page
	code    bool
	digest  []byte   // ConsentDigest of the data released
	members []string // the /userinfo members it releases
}

// releases lists what scopes release about u, in consent-page order.
// proofs are the proof documents as digested: u.Proofs, or at /userinfo
// the references of the loaded documents (see Release).
func (c Claims) releases(u *store.User, proofs []store.ProofRef, scopes []string) []release {
	var out []release
	if slices.Contains(scopes, ScopeEmail) && u.Email != "" {
		out = append(out, release{
			name: "email", label: labelEmail, shown: u.Email,
			digest:  ConsentDigest("email", u.Email, strconv.FormatBool(u.EmailVerified)),
			members: []string{"email", "email_verified"},
		})
	}
	one := func(a attribute, code bool) {
		if v := u.Claims[a.key]; v != "" {
			n := c.name(a)
			out = append(out, release{name: n, label: a.label, shown: v, code: code,
				digest: ConsentDigest(n, v), members: []string{n}})
		}
	}
	if slices.Contains(scopes, c.ScopePersonalInfo()) {
		for _, a := range personalInfo {
			one(a, false)
		}
	}
	if slices.Contains(scopes, c.ScopeIDNumber()) {
		one(idNumber, true)
	}
	if c.WantsProofs(scopes) && len(proofs) > 0 {
		n := c.ns("proof")
		ids := make([]string, 0, len(proofs))
		var parts []string
		for _, p := range proofs {
			ids = append(ids, p.ID+" ("+p.ContentType+")")
			parts = append(parts, p.ID, p.ContentType, p.SHA256)
		}
		out = append(out, release{name: n, label: labelProof, shown: strings.Join(ids, ", "),
			digest: ConsentDigest(n, parts...), members: []string{n}})
	}
	return out
}

// consentDomain separates consent digests from every other SHA-256 input.
const consentDomain = "signd oidc consent v1"

// ConsentDigest is the digest a consent record keeps for one claim:
// SHA-256 over a domain label, the claim name and its value parts, each
// prefixed with its length as 8 bytes big-endian, so no two different
// (name, values) lists share an input. The values are, per claim:
//
//	email                         the address and email_verified ("true"/"false")
//	a personal_info claim         its value
//	<ns>.id_number                its value
//	<ns>.proof                    per document, in order: id, content type and
//	                              the lowercase hex SHA-256 of the content
func ConsentDigest(name string, values ...string) []byte {
	h := sha256.New()
	var n [8]byte
	for _, part := range append([]string{consentDomain, name}, values...) {
		binary.BigEndian.PutUint64(n[:], uint64(len(part)))
		h.Write(n[:])
		h.Write([]byte(part))
	}
	return h.Sum(nil)
}

// Withheld names a claim /userinfo left out although the token's scopes
// cover it and the user has it.
type Withheld struct {
	Claim string
	// Changed: the claim was on the consent page with another value (or,
	// for email, another verification state or, for proofs, other
	// documents). Otherwise it was not on the page at all: the user had no
	// value then, or no consent page was shown.
	Changed bool
}

// Release returns the identity claims of the granted scopes that the user
// approved as they are now: a claim is released only if consented records
// its name with the digest of its current value. proofs are the user's
// proof documents with content (loaded when WantsProofs); their digest is
// computed over the content released, not over the stored references.
// Everything else is withheld and listed, so the caller can log it.
func (c Claims) Release(u *store.User, proofs []store.Proof, scopes []string, consented store.ConsentRecord) (map[string]any, []Withheld) {
	all := c.Identity(u, proofs, scopes)
	refs := make([]store.ProofRef, 0, len(proofs))
	for _, p := range proofs {
		refs = append(refs, store.ProofRef{ID: p.ID, ContentType: p.ContentType, SHA256: store.ProofDigest(p.Content)})
	}
	out := map[string]any{}
	var withheld []Withheld
	for _, r := range c.releases(u, refs, scopes) {
		if !consented.Equal(r.name, r.digest) {
			_, seen := consented[r.name]
			for _, m := range r.members {
				if _, ok := all[m]; ok {
					withheld = append(withheld, Withheld{Claim: m, Changed: seen})
				}
			}
			continue
		}
		for _, m := range r.members {
			if v, ok := all[m]; ok {
				out[m] = v
			}
		}
	}
	return out, withheld
}
