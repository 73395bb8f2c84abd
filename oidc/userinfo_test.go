package oidc_test

import (
	"encoding/base64"
	"encoding/json"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/signd/signd/oauth"
	"github.com/signd/signd/store"
	"github.com/signd/signd/store/storetest"
)

// fullClaims is a user with every identity attribute.
var fullClaims = map[string]string{
	"given_name": "Anne", "last_name": "Jansen", "birthdate": "1990-02-03", "birthplace": "Utrecht",
	"nationality": "NLD", "document_type": "passport", "id_number": "NX1234567",
	"nl_brp_voornaam": "Anne", "nl_brp_voorvoegsel": "van", "nl_brp_geslachtsnaam": "van Jansen",
	"nl_brp_geslachtsnaam_zonder_voorvoegsel": "Jansen",
	"id_document_issuance_date":               "2020-05-01", "id_document_issuance_place": "Utrecht",
}

// pngProof is a tiny PNG file.
var pngProof = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89")

// addUser stores a user; claims nil gives a user without identity data.
func (f *fixture) addUser(username, email string, verified bool, claims map[string]string, proofs ...store.Proof) *store.User {
	f.t.Helper()
	id, err := store.NewID()
	if err != nil {
		f.t.Fatal(err)
	}
	u := &store.User{ID: id, Username: username, Status: store.UserActive, Email: email, EmailVerified: verified, Claims: maps.Clone(claims)}
	f.update(func(tx store.Tx) error {
		if err := tx.CreateUser(u); err != nil {
			return err
		}
		for _, p := range proofs {
			if err := tx.PutProof(username, p); err != nil {
				return err
			}
		}
		return nil
	})
	return u
}

func (f *fixture) addClient(id string, scopes []string, uris ...string) *store.Client {
	f.t.Helper()
	c := &store.Client{ID: id, Name: id, SecretHash: store.HashSecret("secret-of-" + id + "-0123456789abcdef"), RedirectURIs: uris, Scopes: scopes}
	f.update(func(tx store.Tx) error { return tx.CreateClient(c) })
	return c
}

// mint stores an access token as the token endpoint would after the user
// approved a consent page showing their current data for scopes.
func (f *fixture) mint(value, client, user string, scopes []string, expires time.Duration) {
	f.t.Helper()
	f.update(func(tx store.Tx) error {
		u, err := tx.User(user)
		if err != nil {
			return err
		}
		record, err := (&oauth.Consent{Items: f.p.Claims.Shared(u, scopes)}).Record()
		if err != nil {
			return err
		}
		return tx.CreateToken(f.token(value, client, user, scopes, expires, record))
	})
}

// token is an access token record with the given consent record.
func (f *fixture) token(value, client, user string, scopes []string, expires time.Duration, record store.ConsentRecord) *store.Token {
	now := f.clock.Now()
	return &store.Token{
		Hash: store.Fingerprint(value), Kind: store.TokenAccess, ClientID: client, Username: user,
		Scopes: scopes, AuthTime: now.Add(-2 * time.Minute), RequestedAt: now.Add(-3 * time.Minute),
		ExpiresAt: now.Add(expires), Consented: record,
	}
}

func bearer(tok string) http.Header { return http.Header{"Authorization": {"Bearer " + tok}} }

// userinfo calls GET /userinfo and decodes a 200 answer.
func (f *fixture) userinfo(tok string) map[string]any {
	f.t.Helper()
	rec := f.do(http.MethodGet, "/userinfo", "", "", bearer(tok))
	if rec.Code != http.StatusOK {
		f.t.Fatalf("userinfo: %d %s", rec.Code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json;charset=UTF-8" {
		f.t.Errorf("Content-Type %q", ct)
	}
	if cc := rec.Header().Get("Cache-Control"); cc != "no-store" {
		f.t.Errorf("Cache-Control %q", cc)
	}
	var got map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		f.t.Fatal(err)
	}
	return got
}

var protocolKeys = []string{"sub", "aud", "auth_time", "iat", "iss", "rat"}

var scopeClaims = map[string][]string{
	"email": {"email", "email_verified"},
	"com.vendor.personal_info": {
		"given_name", "com.vendor.last_name", "birthdate", "com.vendor.birthplace", "com.vendor.nationality",
		"com.vendor.document.type", "com.vendor.nl_brp_voornaam", "com.vendor.nl_brp_voorvoegsel",
		"com.vendor.nl_brp_geslachtsnaam", "com.vendor.nl_brp_geslachtsnaam_zonder_voorvoegsel",
		"com.vendor.id_document_issuance_date", "com.vendor.id_document_issuance_place",
	},
	"com.vendor.id_number": {"com.vendor.id_number"},
	"com.vendor.proof":     {"com.vendor.proof"},
}

// Every combination of the optional scopes yields exactly its claims, for
// a user with every attribute; a user without any gets only the protocol
// claims.
func TestScopeCombinations(t *testing.T) {
	f := newFixture(t)
	identity := []string{"email", "com.vendor.personal_info", "com.vendor.id_number", "com.vendor.proof"}
	f.addClient("rp", append([]string{"openid"}, identity...), "https://rp.example.com/cb")
	f.addUser("full", "anne@example.com", true, fullClaims, store.Proof{ProofRef: store.ProofRef{ID: "passport-scan", ContentType: store.ProofPNG}, Content: pngProof})
	f.addUser("bare", "", false, nil)
	for mask := 0; mask < 1<<len(identity); mask++ {
		scopes := []string{"openid"}
		want := slices.Clone(protocolKeys)
		for i, s := range identity {
			if mask&(1<<i) != 0 {
				scopes = append(scopes, s)
				want = append(want, scopeClaims[s]...)
			}
		}
		t.Run(strings.Join(scopes, "+"), func(t *testing.T) {
			tok := "full-" + strings.Join(scopes, "-")
			f.mint(tok, "rp", "full", scopes, time.Hour)
			got := f.userinfo(tok)
			if keys := slices.Sorted(maps.Keys(got)); !slices.Equal(keys, slices.Sorted(slices.Values(want))) {
				t.Errorf("claims %v, want %v", keys, slices.Sorted(slices.Values(want)))
			}
			tok = "bare-" + strings.Join(scopes, "-")
			f.mint(tok, "rp", "bare", scopes, time.Hour)
			got = f.userinfo(tok)
			if keys := slices.Sorted(maps.Keys(got)); !slices.Equal(keys, slices.Sorted(slices.Values(protocolKeys))) {
				t.Errorf("user without claims: %v, want only %v", keys, protocolKeys)
			}
		})
	}
}

// A user lacking some attributes gets exactly those omitted, never null
// or "".
func TestMissingClaimsOmitted(t *testing.T) {
	f := newFixture(t)
	f.addClient("rp", []string{"openid", "email", "com.vendor.personal_info", "com.vendor.id_number"}, "https://rp.example.com/cb")
	f.addUser("partial", "p@example.com", false, map[string]string{"given_name": "Piet", "birthdate": "1970-12-31"})
	f.mint("tok", "rp", "partial", []string{"openid", "email", "com.vendor.personal_info", "com.vendor.id_number"}, time.Hour)
	got := f.userinfo("tok")
	want := map[string]any{"email": "p@example.com", "email_verified": false, "given_name": "Piet", "birthdate": "1970-12-31"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %#v, want %#v", k, got[k], v)
		}
	}
	if len(got) != len(protocolKeys)+len(want) {
		t.Errorf("claims %v", got)
	}
}

// Item 17 of reference/oidc.md §8: /userinfo.
func TestItem17Userinfo(t *testing.T) {
	f := newFixture(t)
	f.addClient("rp", []string{"openid", "email", "com.vendor.personal_info", "com.vendor.id_number", "com.vendor.proof"}, "https://rp.example.com/cb")
	proof := store.Proof{ProofRef: store.ProofRef{ID: "passport-scan", ContentType: store.ProofPNG}, Content: pngProof}
	u := f.addUser("anne", "anne@example.com", true, fullClaims, proof)
	all := []string{"openid", "email", "com.vendor.personal_info", "com.vendor.id_number", "com.vendor.proof"}
	f.mint("good", "rp", "anne", all, time.Hour)
	f.mint("service", "rp", "anne", []string{"service"}, time.Hour)
	f.mint("short", "rp", "anne", []string{"openid"}, time.Minute)

	t.Run("claims", func(t *testing.T) {
		got := f.userinfo("good")
		sub, err := f.p.Subject(&store.Client{ID: "rp", RedirectURIs: []string{"https://rp.example.com/cb"}}, u)
		if err != nil {
			t.Fatal(err)
		}
		now := f.clock.Now()
		want := map[string]any{
			"sub": sub, "iss": testIssuer,
			"auth_time": float64(now.Add(-2 * time.Minute).Unix()), "rat": float64(now.Add(-3 * time.Minute).Unix()),
			"email": "anne@example.com", "email_verified": true,
			"given_name": "Anne", "birthdate": "1990-02-03", "com.vendor.last_name": "Jansen",
			"com.vendor.birthplace": "Utrecht", "com.vendor.nationality": "NLD", "com.vendor.document.type": "passport",
			"com.vendor.id_number": "NX1234567", "com.vendor.nl_brp_voornaam": "Anne", "com.vendor.nl_brp_voorvoegsel": "van",
			"com.vendor.nl_brp_geslachtsnaam": "van Jansen", "com.vendor.nl_brp_geslachtsnaam_zonder_voorvoegsel": "Jansen",
			"com.vendor.id_document_issuance_date": "2020-05-01", "com.vendor.id_document_issuance_place": "Utrecht",
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s = %#v, want %#v", k, got[k], v)
			}
		}
		if aud, _ := got["aud"].([]any); len(aud) != 1 || aud[0] != "rp" {
			t.Errorf("aud = %#v, want [rp]", got["aud"])
		}
		if iat, _ := got["iat"].(float64); iat < float64(time.Now().Add(-time.Minute).Unix()) {
			t.Errorf("iat = %v, want the token's issuance", got["iat"])
		}
		proofs, _ := got["com.vendor.proof"].([]any)
		if len(proofs) != 1 {
			t.Fatalf("proof = %#v", got["com.vendor.proof"])
		}
		p := proofs[0].(map[string]any)
		if p["id"] != "passport-scan" || p["content_type"] != "image/png" || p["base64_encoded_content"] != base64.StdEncoding.EncodeToString(pngProof) || len(p) != 3 {
			t.Errorf("proof = %#v", p)
		}
		if !regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`).MatchString(got["birthdate"].(string)) {
			t.Errorf("birthdate %v", got["birthdate"])
		}
		for k, v := range got {
			if v == nil || v == "" || v == "null" {
				t.Errorf("%s is %#v", k, v)
			}
		}
	})

	form := "application/x-www-form-urlencoded"
	tests := []struct {
		name        string
		method      string
		query       string
		contentType string
		body        string
		header      http.Header
		status      int
		code        string // error code in WWW-Authenticate and body; "" = none
	}{
		{"GET with bearer header", http.MethodGet, "", "", "", bearer("good"), 200, ""},
		{"POST with bearer header", http.MethodPost, "", "", "", bearer("good"), 200, ""},
		{"POST with form body token", http.MethodPost, "", form, url.Values{"access_token": {"good"}}.Encode(), nil, 200, ""},
		{"no token", http.MethodGet, "", "", "", nil, 401, ""},
		{"no token POST", http.MethodPost, "", form, "", nil, 401, ""},
		{"unknown token", http.MethodGet, "", "", "", bearer("nope"), 401, "invalid_token"},
		{"token from a service flow", http.MethodGet, "", "", "", bearer("service"), 403, "insufficient_scope"},
		{"token in the query is not read", http.MethodGet, "?access_token=good", "", "", nil, 401, ""},
		{"two credentials", http.MethodPost, "", form, url.Values{"access_token": {"good"}}.Encode(), bearer("good"), 400, "invalid_request"},
		{"basic scheme", http.MethodGet, "", "", "", http.Header{"Authorization": {"Basic cnA6c2VjcmV0"}}, 400, "invalid_request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := f.do(tt.method, "/userinfo"+tt.query, tt.contentType, tt.body, tt.header)
			if rec.Code != tt.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tt.status, rec.Body)
			}
			if tt.status == 200 {
				return
			}
			checkBearerError(t, rec.Header().Get("WWW-Authenticate"), rec.Body.Bytes(), rec.Header().Get("Content-Type"), tt.code)
		})
	}

	t.Run("expired token", func(t *testing.T) {
		f.clock.Advance(2 * time.Minute)
		defer f.clock.Advance(-2 * time.Minute)
		rec := f.do(http.MethodGet, "/userinfo", "", "", bearer("short"))
		if rec.Code != 401 {
			t.Fatalf("status %d", rec.Code)
		}
		checkBearerError(t, rec.Header().Get("WWW-Authenticate"), rec.Body.Bytes(), rec.Header().Get("Content-Type"), "invalid_token")
	})
	t.Run("revoked token", func(t *testing.T) {
		f.mint("revoked", "rp", "anne", all, time.Hour)
		f.update(func(tx store.Tx) error { return tx.DeleteToken(store.Fingerprint("revoked")) })
		rec := f.do(http.MethodGet, "/userinfo", "", "", bearer("revoked"))
		if rec.Code != 401 {
			t.Fatalf("status %d", rec.Code)
		}
		checkBearerError(t, rec.Header().Get("WWW-Authenticate"), rec.Body.Bytes(), rec.Header().Get("Content-Type"), "invalid_token")
	})
	t.Run("client removed", func(t *testing.T) {
		f.addClient("gone", []string{"openid"}, "https://gone.example.com/cb")
		f.mint("orphan", "gone", "anne", []string{"openid"}, time.Hour)
		f.update(func(tx store.Tx) error { return tx.DeleteClient("gone") })
		rec := f.do(http.MethodGet, "/userinfo", "", "", bearer("orphan"))
		if rec.Code != 401 {
			t.Fatalf("status %d", rec.Code)
		}
		checkBearerError(t, rec.Header().Get("WWW-Authenticate"), rec.Body.Bytes(), rec.Header().Get("Content-Type"), "invalid_token")
	})
	t.Run("disabled user", func(t *testing.T) {
		f.update(func(tx store.Tx) error {
			return storetest.EditUser(tx, "anne", func(u *store.User) { u.Status = store.UserDisabled })
		})
		rec := f.do(http.MethodGet, "/userinfo", "", "", bearer("good"))
		if rec.Code != 401 {
			t.Fatalf("status %d", rec.Code)
		}
	})
}

// checkBearerError checks an RFC 6750 error answer: a Bearer challenge
// with the realm and, when code is set, the error in the challenge and a
// JSON body; without a code, neither.
func checkBearerError(t *testing.T, challenge string, body []byte, contentType, code string) {
	t.Helper()
	if !strings.HasPrefix(challenge, `Bearer realm="`+testIssuer+`"`) {
		t.Errorf("WWW-Authenticate = %q", challenge)
	}
	if code == "" {
		if strings.Contains(challenge, "error") || len(body) != 0 {
			t.Errorf("no-credentials answer has an error: %q, body %q", challenge, body)
		}
		return
	}
	if !strings.Contains(challenge, `error="`+code+`"`) {
		t.Errorf("WWW-Authenticate = %q, want error %s", challenge, code)
	}
	var e struct{ Error, ErrorDescription string }
	if err := json.Unmarshal(body, &e); err != nil || e.Error != code {
		t.Errorf("body %q, want error %s", body, code)
	}
	if contentType != "application/json;charset=UTF-8" {
		t.Errorf("error Content-Type %q", contentType)
	}
	checkASCII(t, challenge)
	checkASCII(t, string(body))
}

// checkASCII requires the characters RFC 6749 allows in error and
// error_description: %x20-21 / %x23-5B / %x5D-7E (item 19) — here applied to
// the whole value, quotes of the JSON or header syntax aside.
func checkASCII(t *testing.T, s string) {
	t.Helper()
	for _, c := range []byte(s) {
		if c < 0x20 || c > 0x7e {
			t.Errorf("non-ASCII or control byte %#x in %q", c, s)
			return
		}
	}
}

// Parallel /userinfo calls with proofs (a smoke test for -race: proof bytes
// are copied out of the store's transaction).
func TestUserinfoParallel(t *testing.T) {
	f := newFixture(t)
	f.addClient("rp", []string{"openid", "com.vendor.proof"}, "https://rp.example.com/cb")
	f.addUser("anne", "anne@example.com", true, nil, store.Proof{ProofRef: store.ProofRef{ID: "p1", ContentType: store.ProofPNG}, Content: pngProof})
	f.mint("tok", "rp", "anne", []string{"openid", "com.vendor.proof"}, time.Hour)
	done := make(chan map[string]any, 8)
	for range 8 {
		go func() {
			rec := f.do(http.MethodGet, "/userinfo", "", "", bearer("tok"))
			var m map[string]any
			_ = json.Unmarshal(rec.Body.Bytes(), &m)
			done <- m
		}()
	}
	for range 8 {
		if m := <-done; m["com.vendor.proof"] == nil {
			t.Error("parallel userinfo lost the proof")
		}
	}
}
