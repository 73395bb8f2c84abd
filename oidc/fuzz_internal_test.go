package oidc

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/signd/signd/oauth"
	"github.com/signd/signd/store"
)

// fakeJWS is a compact JWS with payload claims and a signature that
// nothing checks, shaped like the ID tokens signd issues (RS256, kid).
func fakeJWS(claims any) string {
	payload, _ := json.Marshal(claims)
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"RS256","kid":"fuzzkid","typ":"JWT"}`)) + "." + enc(payload) + "." + enc(bytes.Repeat([]byte{7}, 256))
}

// An ID token as signd issues it (idtoken.go): the hint a relying party
// sends back.
var seedIDToken = fakeJWS(map[string]any{
	"iss": "https://op.example.com", "sub": "k4ULcHWF5ATklRo93B8Fo0s9T1_AgdYW9G2KLo8cjmg", "aud": "rp",
	"exp": 1767225600, "iat": 1767222000, "auth_time": 1767221990, "nonce": "n-0S6_WzA2Mj",
	"at_hash": "77QmUPtjPfzWtF2AnpK9RQ",
})

// FuzzHintSubject reads the sub of an id_token_hint. A hint built from a
// claims set whose aud names the client reads back its sub exactly (round
// trip); any token accepted is three dot-separated parts whose payload, as
// a JSON object with case-sensitive member names (RFC 7519 §4), has that
// non-empty sub and an aud naming the client.
func FuzzHintSubject(f *testing.F) {
	f.Add(seedIDToken, "rp", "sub-1", false)
	f.Add(fakeJWS(map[string]any{"sub": "s1", "aud": []string{"x", "rp"}}), "rp", "s1", true)
	f.Add(fakeJWS(map[string]any{"sub": "s1", "aud": "other"}), "rp", "", false)
	f.Add(fakeJWS(map[string]any{"SUB": "s1", "aud": "rp"}), "rp", "", false)
	f.Add(fakeJWS(map[string]any{"sub": 5, "aud": "rp"}), "rp", "x", false)
	f.Add("a.b", "rp", "", false)
	f.Add("..", "", "", false)
	f.Add("e30.e30.e30", "", "", true)
	f.Fuzz(func(t *testing.T, token, clientID, sub string, audArray bool) {
		if sub != "" && utf8.ValidString(sub) && utf8.ValidString(clientID) { // JSON strings are Unicode
			var aud any = clientID
			if audArray {
				aud = []string{"other", clientID}
			}
			built := fakeJWS(map[string]any{"sub": sub, "aud": aud, "iss": "https://op.example.com"})
			if got, ok := hintSubject(built, clientID); !ok || got != sub {
				t.Fatalf("hint for sub %q, aud %v read as %q, %v", sub, aud, got, ok)
			}
		}
		got, ok := hintSubject(token, clientID)
		if !ok {
			if got != "" {
				t.Fatalf("refused hint with sub %q", got)
			}
			return
		}
		parts := strings.Split(token, ".")
		if len(parts) != 3 {
			t.Fatalf("%q accepted with %d parts", token, len(parts))
		}
		payload, err := base64.RawURLEncoding.DecodeString(parts[1])
		var claims map[string]json.RawMessage
		if err == nil {
			err = json.Unmarshal(payload, &claims)
		}
		if err != nil {
			t.Fatalf("%q accepted: payload %q: %v", token, payload, err)
		}
		var want string
		var one string
		var many []string
		switch {
		case json.Unmarshal(claims["sub"], &want) != nil || want == "" || got != want:
			t.Fatalf("%q: sub %q, the payload %s has %s", token, got, payload, claims["sub"])
		case json.Unmarshal(claims["aud"], &one) == nil && one == clientID:
		case json.Unmarshal(claims["aud"], &many) == nil && slices.Contains(many, clientID):
		default:
			t.Fatalf("%q: accepted for %q, aud is %s", token, clientID, claims["aud"])
		}
	})
}

var fuzzClaims = Claims{Namespace: "com.vendor"}

// fuzzClient is a relying party registered for every scope.
var fuzzClient = &store.Client{
	ID: "rp", Name: "RP", SecretHash: store.HashSecret("x"), RedirectURIs: []string{"https://rp.example/cb"},
	Scopes: fuzzClaims.Scopes(),
}

// FuzzOIDCAuthorize runs the openid profile's part of /oauth2/authorize on
// any parameters (prompt, max_age, login_hint, id_token_hint,
// response_mode, request, scopes). A refusal is an *oauth.Error with an
// OIDC Core §3.1.2.6 code and a printable description; an authorization
// grants openid first, then only requested identity scopes the client may
// have, once each; its login policy is exactly what prompt and max_age
// say (max_age capped at a year), and the hint's sub is bound when and
// only when an id_token_hint was given.
func FuzzOIDCAuthorize(f *testing.F) {
	p := &Profile{Provider: &Provider{Claims: fuzzClaims}}
	for _, q := range []string{
		"scope=openid&prompt=login&max_age=3600&login_hint=alice%40example.com&ui_locales=nl&nonce=n-0S6_WzA2Mj",
		"scope=openid+email+com.vendor.personal_info+com.vendor.id_number+com.vendor.proof+profile&prompt=consent+login",
		"scope=openid&prompt=none&id_token_hint=" + url.QueryEscape(seedIDToken),
		"scope=openid&prompt=none+login", "scope=openid&prompt=select_account", "scope=openid&prompt=bogus",
		"scope=openid+service", "scope=openid&max_age=0", "scope=openid&max_age=-1", "scope=openid&max_age=99999999999999",
		"scope=openid&response_mode=fragment", "scope=openid&response_mode=query", "scope=openid&request=x",
		"scope=openid&request_uri=https%3A%2F%2Fx", "scope=openid&id_token_hint=x.y.z", "scope=openid&claims=%7B%7D&display=page&acr_values=1",
	} {
		f.Add(q, "")
	}
	f.Add("scope=openid", "https://rp.example/cb https://other.example/cb")
	f.Add("scope=openid", "com.example.app:/cb")
	f.Fuzz(func(t *testing.T, query, redirectURIs string) {
		raw, err := url.ParseQuery(query)
		if err != nil {
			return
		}
		params := url.Values{}
		for k, vs := range raw { // as readParams hands them over
			if len(vs) == 1 && vs[0] != "" {
				params.Set(k, vs[0])
			}
		}
		client := fuzzClient
		if redirectURIs != "" {
			c := *fuzzClient
			c.RedirectURIs = strings.Fields(redirectURIs)
			client = &c
		}
		var scopes []string
		for _, s := range strings.Split(params.Get("scope"), " ") {
			if s != "" && !slices.Contains(scopes, s) {
				scopes = append(scopes, s)
			}
		}
		az, err := p.Authorize(context.Background(), &oauth.AuthorizeRequest{
			Client: client, Scopes: scopes, RedirectURI: "https://rp.example/cb", Params: params,
			Lang: "en", RequestedAt: time.Unix(1767222000, 0),
		})
		if err != nil {
			var oe *oauth.Error
			codes := []string{oauth.CodeInvalidScope, oauth.CodeInvalidRequest, oauth.CodeUnauthorizedClient,
				"request_not_supported", "request_uri_not_supported"}
			if !errors.As(err, &oe) || !slices.Contains(codes, oe.Code) || oe.Description == "" ||
				strings.ContainsAny(oe.Description, "\"\\\n") || az != nil {
				t.Fatalf("%q: %v", query, err)
			}
			return
		}
		if _, serr := Sector(client); serr != nil {
			t.Fatalf("%q: authorized for a client without a sector: %v", query, serr)
		}
		if slices.Contains(scopes, "service") || slices.Contains(scopes, "credential") {
			t.Fatalf("%q: openid with CSC scopes authorized", query)
		}
		if len(az.Scopes) == 0 || az.Scopes[0] != ScopeOpenID || len(slices.Compact(slices.Clone(az.Scopes))) != len(az.Scopes) {
			t.Fatalf("%q: granted %q", query, az.Scopes)
		}
		for _, s := range az.Scopes[1:] {
			if !slices.Contains(scopes, s) || !fuzzClaims.IsScope(s) || !slices.Contains(client.Scopes, s) || s == ScopeOpenID {
				t.Fatalf("%q: granted %q", query, az.Scopes)
			}
		}
		prompt := strings.Fields(params.Get("prompt"))
		wantPrompt := oauth.PromptDefault
		switch {
		case slices.Contains(prompt, "none"):
			wantPrompt = oauth.PromptNone
			if len(prompt) != 1 {
				t.Fatalf("%q: prompt=none with others accepted", query)
			}
		case slices.Contains(prompt, "login"):
			wantPrompt = oauth.PromptLogin
		}
		if !az.Login.SSO || az.Login.Prompt != wantPrompt {
			t.Fatalf("%q: login policy %+v", query, az.Login)
		}
		if v := params.Get("max_age"); v != "" {
			n, perr := strconv.ParseUint(v, 10, 63)
			want := maxMaxAge
			if perr == nil && n < uint64(maxMaxAge/time.Second) {
				want = time.Duration(n) * time.Second
			}
			if perr != nil || !az.Login.HasMaxAge || az.Login.MaxAge != want {
				t.Fatalf("%q: max_age %q read as %+v", query, v, az.Login)
			}
		} else if az.Login.HasMaxAge {
			t.Fatalf("%q: max_age invented", query)
		}
		want := map[string]string{}
		if slices.Contains(prompt, "consent") {
			want[paramPromptConsent] = "1"
		}
		if hint := params.Get("id_token_hint"); hint != "" {
			sub, ok := hintSubject(hint, client.ID)
			if !ok {
				t.Fatalf("%q: a hint that is not the client's ID token accepted", query)
			}
			want[paramHintSubject] = sub
		}
		if len(want) == 0 {
			want = nil
		}
		if !maps.Equal(az.Binding.Params, want) || (want == nil) != (az.Binding.Params == nil) {
			t.Fatalf("%q: bound %v, want %v", query, az.Binding.Params, want)
		}
	})
}

// FuzzClaimsRelease runs the claims of a user record (the JSON object
// store.User.Claims is kept as) through consent and /userinfo: Identity
// releases only claims the provider supports, never an empty value, each
// as stored; what the consent page shows (Shared), once approved, releases
// exactly Identity with nothing withheld; a value changed after the
// approval is withheld as changed and everything else still released; and
// ConsentDigest never gives two (name, values) lists the same digest.
func FuzzClaimsRelease(f *testing.F) {
	for _, c := range []string{
		`{"given_name":"Alice","last_name":"Jansen","birthdate":"1990-02-03","birthplace":"Utrecht","nationality":"NL",` +
			`"document_type":"passport","id_number":"NXC8R1234","nl_brp_voornaam":"Alice","nl_brp_voorvoegsel":"van",` +
			`"nl_brp_geslachtsnaam":"van Dam","nl_brp_geslachtsnaam_zonder_voorvoegsel":"Dam",` +
			`"id_document_issuance_date":"2020-12-01","id_document_issuance_place":"Utrecht"}`,
		`{"given_name":"","shoe":"42"}`, `{}`, `null`, `{"id_number":"x"}`,
	} {
		f.Add([]byte(c), "alice@example.com", true, "openid email com.vendor.personal_info com.vendor.id_number com.vendor.proof",
			[]byte("%PDF-1.7 proof"), "given_name", "Alicia")
	}
	f.Add([]byte(`{"given_name":"A"}`), "", false, "openid com.vendor.personal_info", []byte(nil), "id_number", "new")
	f.Fuzz(func(t *testing.T, claimsJSON []byte, email string, verified bool, scope string, proof []byte, key, value string) {
		u := &store.User{ID: "u1", Username: "alice", Status: store.UserActive, Email: email, EmailVerified: verified}
		if json.Unmarshal(claimsJSON, &u.Claims) != nil {
			return
		}
		var proofs []store.Proof
		if len(proof) > 0 {
			proofs = []store.Proof{{ProofRef: store.ProofRef{ID: "p1", ContentType: store.ProofPDF, Size: int64(len(proof)), SHA256: store.ProofDigest(proof)}, Content: proof}}
			u.Proofs = []store.ProofRef{proofs[0].ProofRef}
		}
		scopes := strings.Fields(scope)

		all := fuzzClaims.Identity(u, proofs, scopes)
		supported := fuzzClaims.Supported()
		for name, v := range all {
			if !slices.Contains(supported, name) {
				t.Fatalf("claim %q is not in claims_supported", name)
			}
			if s, ok := v.(string); ok && s == "" {
				t.Fatalf("claim %q released empty", name)
			}
		}
		for _, a := range append(slices.Clone(personalInfo), idNumber) {
			if v, ok := all[fuzzClaims.name(a)]; ok && v != u.Claims[a.key] {
				t.Fatalf("claim %s released as %v, stored %q", a.key, v, u.Claims[a.key])
			}
		}

		// Approve what the consent page shows: /userinfo releases it all.
		consent := store.ConsentRecord{}
		for _, it := range fuzzClaims.Shared(u, scopes) {
			if _, dup := consent[it.Name]; dup || len(it.Digest) == 0 {
				t.Fatalf("consent item %q repeated or without a digest", it.Name)
			}
			consent[it.Name] = it.Digest
		}
		out, withheld := fuzzClaims.Release(u, proofs, scopes, consent)
		if len(withheld) != 0 || !sameJSON(out, all) {
			t.Fatalf("approved %v: released %v, withheld %v; identity %v", slices.Sorted(maps.Keys(consent)), out, withheld, all)
		}

		// Change one attribute after the approval.
		if value == "" || u.Claims[key] == value {
			return
		}
		changed := *u
		changed.Claims = maps.Clone(u.Claims)
		if changed.Claims == nil {
			changed.Claims = map[string]string{}
		}
		old, had := changed.Claims[key]
		changed.Claims[key] = value
		out, withheld = fuzzClaims.Release(&changed, proofs, scopes, consent)
		now := fuzzClaims.Identity(&changed, proofs, scopes)
		for name, v := range now {
			w := slices.IndexFunc(withheld, func(w Withheld) bool { return w.Claim == name })
			_, released := out[name]
			switch {
			case released && w >= 0:
				t.Fatalf("%s both released and withheld", name)
			case released && !sameJSON(out[name], v):
				t.Fatalf("%s released as %v, is %v", name, out[name], v)
			case !released && w < 0:
				t.Fatalf("%s neither released nor withheld", name)
			case released && !sameJSON(all[name], v):
				t.Fatalf("%s changed from %v to %v after the approval and was released", name, all[name], v)
			case w >= 0 && withheld[w].Changed != (had && old != "" && all[name] != nil):
				t.Fatalf("%s withheld with Changed %v (was %q)", name, withheld[w].Changed, old)
			}
		}

		// ConsentDigest is injective over (name, values).
		if bytes.Equal(ConsentDigest(key, value), ConsentDigest(key+value)) ||
			bytes.Equal(ConsentDigest(key, value, ""), ConsentDigest(key, value)) {
			t.Fatalf("ConsentDigest(%q, %q) collides with a regrouping", key, value)
		}
	})
}

func sameJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}
