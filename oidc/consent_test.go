package oidc_test

import (
	"encoding/base64"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/signd/signd/internal/logtest"
	"github.com/signd/signd/oauth/oauthtest"
	"github.com/signd/signd/oidc"
	"github.com/signd/signd/store"
	"github.com/signd/signd/store/storetest"
)

// What the user saw is what the relying party gets: /userinfo releases a
// claim only while its value is the one the consent page showed. These
// tests run the real authorization server, the consent page and /userinfo
// over HTTP, and change the user's data the way an admin does (a store
// update) after the user consented.

// loginUser adds a user with a verified email (or none) who logs in with
// alicePassword.
func (ev *flowEnv) loginUser(name, email string, claims map[string]string, proofs ...store.Proof) {
	ev.t.Helper()
	ev.addUser(name, email, true, claims, proofs...)
	hash, err := ev.hasher.Hash([]byte(alicePassword))
	if err != nil {
		ev.t.Fatal(err)
	}
	ev.editUser(name, func(u *store.User) { u.PasswordHash = hash })
}

// editUser changes a user as `signd user set` does.
func (ev *flowEnv) editUser(name string, change func(u *store.User)) {
	ev.t.Helper()
	ev.update(func(tx store.Tx) error {
		return storetest.EditUser(tx, name, change)
	})
}

// putProof adds or replaces a proof document as `signd user proof` does.
func (ev *flowEnv) putProof(name string, p store.Proof) {
	ev.t.Helper()
	ev.update(func(tx store.Tx) error { return tx.PutProof(name, p) })
}

// consentFlow runs an authorization request of rp for scope in browser b
// (logging user in when the login page comes), approves the consent page
// when one is shown, redeems the code and returns the access token and the
// text of the consent page ("" when none was shown).
func (ev *flowEnv) consentFlow(b *oauthtest.Browser, user, scope string) (token, consent string) {
	ev.t.Helper()
	p := params("rp", scope)
	s := ev.must(b.Get(ev.authorizeURL(p)))
	if !s.Redirected() && s.Form != nil && s.Form.Has("password") {
		s = ev.login(b, s, user, alicePassword)
	}
	if isConsent(s) {
		consent = oauthtest.Text(s.Body)
		s = ev.answer(b, s, "approve")
	}
	tr := ev.redeem("rp", ev.codeOf(s, p))
	token, _ = tr.Body["access_token"].(string)
	if tr.Status != http.StatusOK || token == "" {
		ev.t.Fatalf("token response %d %v", tr.Status, tr.Body)
	}
	return token, consent
}

// identity returns the identity claims of a /userinfo answer.
func (ev *flowEnv) identity(token string) map[string]any {
	ev.t.Helper()
	status, body := ev.userinfoHTTP(http.MethodGet, token)
	if status != http.StatusOK {
		ev.t.Fatalf("userinfo: %d %v", status, body)
	}
	for _, k := range protocolKeys {
		if _, ok := body[k]; !ok {
			ev.t.Errorf("userinfo lacks the protocol claim %s", k)
		}
		delete(body, k)
	}
	return body
}

var (
	personalOnly = func() map[string]string {
		m := maps.Clone(fullClaims)
		delete(m, "id_number")
		return m
	}()
	pdfProof   = []byte("%PDF-1.4\n% a letter\n")
	otherProof = []byte("%PDF-1.4\n% another letter\n")
)

func proofDoc(id, contentType string, content []byte) store.Proof {
	return store.Proof{ProofRef: store.ProofRef{ID: id, ContentType: contentType}, Content: content}
}

// One case per claim scope and kind of change: after the change, the old
// token's /userinfo omits exactly the changed or new claims and still
// returns the unchanged ones, and the withheld claims are logged by name,
// never by value; the next authorization shows the consent page again with
// the new values (and prompt=none ends in consent_required); once the user
// approves that page, the new token releases the new values.
func TestReleaseOnlyWhatWasShown(t *testing.T) {
	ev := newFlowEnv(t)
	logs := &logtest.Buffer{}
	ev.p.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ns := func(names ...string) []string {
		out := make([]string, len(names))
		for i, n := range names {
			out[i] = "com.vendor." + n
		}
		return out
	}
	tests := []struct {
		name   string
		scope  string
		email  string
		claims map[string]string
		proofs []store.Proof
		change func(ev *flowEnv, user string)
		// withheld: claims the old token loses; kept: claims it keeps,
		// with their values (a proof list as rendered by proofText).
		withheld []string
		kept     map[string]any
		// fresh: what a new consent releases of the changed claims;
		// page: what the new consent page must show.
		fresh map[string]any
		page  []string
		// noLogin: the change leaves the user unable to log in
		// (unverified email), so there is no new consent.
		noLogin bool
	}{
		{
			name: "personal_info filled after a consent page that skipped it", scope: "openid email com.vendor.personal_info",
			email: "dora@example.com",
			change: func(ev *flowEnv, u string) {
				ev.editUser(u, func(u *store.User) { u.Claims = maps.Clone(personalOnly) })
			},
			withheld: scopeClaims["com.vendor.personal_info"],
			kept:     map[string]any{"email": "dora@example.com", "email_verified": true},
			fresh:    map[string]any{"given_name": "Anne", "com.vendor.last_name": "Jansen", "birthdate": "1990-02-03"},
			page:     []string{"Anne", "Jansen", "1990-02-03"},
		},
		{
			name: "no consent page at all, identity filled later", scope: "openid com.vendor.personal_info com.vendor.id_number com.vendor.proof",
			change: func(ev *flowEnv, u string) {
				ev.editUser(u, func(u *store.User) { u.Claims = maps.Clone(fullClaims) })
				ev.putProof(u, proofDoc("scan", store.ProofPDF, pdfProof))
			},
			withheld: append(slices.Clone(scopeClaims["com.vendor.personal_info"]), ns("id_number", "proof")...),
			kept:     map[string]any{},
			fresh:    map[string]any{"given_name": "Anne", "com.vendor.id_number": "NX1234567", "com.vendor.proof": "scan (application/pdf) " + b64(pdfProof)},
			page:     []string{"Anne", "NX1234567", "scan (application/pdf)"},
		},
		{
			name: "email changed", scope: "openid email com.vendor.personal_info",
			email: "a@x.example", claims: map[string]string{"given_name": "Eva"},
			change: func(ev *flowEnv, u string) {
				ev.editUser(u, func(u *store.User) { u.Email = "b@x.example" })
			},
			withheld: []string{"email", "email_verified"},
			kept:     map[string]any{"given_name": "Eva"},
			fresh:    map[string]any{"email": "b@x.example", "email_verified": true},
			page:     []string{"b@x.example"},
		},
		{
			name: "email no longer verified", scope: "openid email com.vendor.personal_info",
			email: "c@x.example", claims: map[string]string{"given_name": "Eva"},
			change: func(ev *flowEnv, u string) {
				ev.editUser(u, func(u *store.User) { u.EmailVerified = false })
			},
			withheld: []string{"email", "email_verified"},
			kept:     map[string]any{"given_name": "Eva"},
			noLogin:  true,
		},
		{
			name: "given_name changed", scope: "openid com.vendor.personal_info",
			email: "f@x.example", claims: personalOnly,
			change: func(ev *flowEnv, u string) {
				ev.editUser(u, func(u *store.User) { u.Claims["given_name"] = "Anna" })
			},
			withheld: []string{"given_name"},
			kept: func() map[string]any {
				m := map[string]any{}
				for _, a := range scopeClaims["com.vendor.personal_info"] {
					m[a] = nil // present, any value
				}
				delete(m, "given_name")
				m["com.vendor.last_name"], m["birthdate"] = "Jansen", "1990-02-03"
				return m
			}(),
			fresh: map[string]any{"given_name": "Anna"},
			page:  []string{"Anna"},
		},
		{
			name: "personal_info claims added beside one shown", scope: "openid com.vendor.personal_info",
			email: "g@x.example", claims: map[string]string{"given_name": "Gerda"},
			change: func(ev *flowEnv, u string) {
				ev.editUser(u, func(u *store.User) { u.Claims["last_name"], u.Claims["birthplace"] = "Bakker", "Zwolle" })
			},
			withheld: ns("last_name", "birthplace"),
			kept:     map[string]any{"given_name": "Gerda"},
			fresh:    map[string]any{"com.vendor.last_name": "Bakker", "com.vendor.birthplace": "Zwolle"},
			page:     []string{"Bakker", "Zwolle"},
		},
		{
			name: "id_number changed", scope: "openid email com.vendor.id_number",
			email: "h@x.example", claims: map[string]string{"id_number": "NX1111111"},
			change: func(ev *flowEnv, u string) {
				ev.editUser(u, func(u *store.User) { u.Claims["id_number"] = "NX2222222" })
			},
			withheld: ns("id_number"),
			kept:     map[string]any{"email": "h@x.example", "email_verified": true},
			fresh:    map[string]any{"com.vendor.id_number": "NX2222222"},
			page:     []string{"NX2222222"},
		},
		{
			name: "id_number filled", scope: "openid email com.vendor.id_number",
			email: "i@x.example",
			change: func(ev *flowEnv, u string) {
				ev.editUser(u, func(u *store.User) { u.Claims = map[string]string{"id_number": "NX3333333"} })
			},
			withheld: ns("id_number"),
			kept:     map[string]any{"email": "i@x.example", "email_verified": true},
			fresh:    map[string]any{"com.vendor.id_number": "NX3333333"},
			page:     []string{"NX3333333"},
		},
		{
			name: "proof added", scope: "openid email com.vendor.proof",
			email: "j@x.example", proofs: []store.Proof{proofDoc("passport", store.ProofPNG, pngProof)},
			change: func(ev *flowEnv, u string) {
				ev.putProof(u, proofDoc("letter", store.ProofPDF, pdfProof))
			},
			withheld: ns("proof"),
			kept:     map[string]any{"email": "j@x.example", "email_verified": true},
			fresh: map[string]any{"com.vendor.proof": "passport (image/png) " + b64(pngProof) +
				"; letter (application/pdf) " + b64(pdfProof)},
			page: []string{"passport (image/png), letter (application/pdf)"},
		},
		{
			name: "proof replaced under the same id", scope: "openid email com.vendor.proof",
			email: "k@x.example", proofs: []store.Proof{proofDoc("letter", store.ProofPDF, pdfProof)},
			change: func(ev *flowEnv, u string) {
				ev.putProof(u, proofDoc("letter", store.ProofPDF, otherProof))
			},
			withheld: ns("proof"),
			kept:     map[string]any{"email": "k@x.example", "email_verified": true},
			fresh:    map[string]any{"com.vendor.proof": "letter (application/pdf) " + b64(otherProof)},
			page:     []string{"letter (application/pdf)"},
		},
		{
			name: "proof filled", scope: "openid email com.vendor.proof",
			email: "l@x.example",
			change: func(ev *flowEnv, u string) {
				ev.putProof(u, proofDoc("scan", store.ProofPNG, pngProof))
			},
			withheld: ns("proof"),
			kept:     map[string]any{"email": "l@x.example", "email_verified": true},
			fresh:    map[string]any{"com.vendor.proof": "scan (image/png) " + b64(pngProof)},
			page:     []string{"scan (image/png)"},
		},
		{
			name: "nothing changed", scope: "openid email com.vendor.personal_info com.vendor.id_number com.vendor.proof",
			email: "m@x.example", claims: fullClaims, proofs: []store.Proof{proofDoc("passport", store.ProofPNG, pngProof)},
			change: func(ev *flowEnv, u string) {
				// Unrelated edits: the lockout counter, the TOTP secret.
				ev.editUser(u, func(u *store.User) { u.FailedPasswords, u.TOTPSecret = 2, "" })
			},
			kept: func() map[string]any {
				m := map[string]any{"email": "m@x.example", "email_verified": true,
					"com.vendor.proof": "passport (image/png) " + b64(pngProof)}
				for _, a := range scopeClaims["com.vendor.personal_info"] {
					m[a] = nil // present; the value is checked by TestItem17Userinfo
				}
				m["given_name"], m["com.vendor.id_number"] = "Anne", "NX1234567"
				return m
			}(),
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			user := "user" + string(rune('a'+i))
			email := tt.email
			if email == "" {
				email = user + "@example.com" // openid needs a verified email
			}
			ev.loginUser(user, email, tt.claims, tt.proofs...)
			b := ev.browser()
			token, _ := ev.consentFlow(b, user, tt.scope)
			checkClaims(t, "before the change", ev.identity(token), tt.kept, false)

			tt.change(ev, user)
			after := ev.identity(token)
			for _, k := range tt.withheld {
				if v, ok := after[k]; ok {
					t.Errorf("/userinfo with the old token releases %s = %v, which the consent page did not show", k, v)
				}
			}
			checkClaims(t, "/userinfo with the old token", after, tt.kept, true)
			log := logs.String()
			for _, k := range tt.withheld {
				if !strings.Contains(log, `"claim":"`+k+`"`) {
					t.Errorf("no log line names the withheld claim %s", k)
				}
			}
			for _, v := range tt.page {
				if strings.Contains(log, v) {
					t.Errorf("the log shows the value %q", v)
				}
			}
			if tt.noLogin {
				return
			}
			if len(tt.withheld) > 0 {
				// prompt=none must not release the changed data silently.
				p := params("rp", tt.scope, "prompt", "none")
				if code, _ := ev.errorOf(ev.must(b.Get(ev.authorizeURL(p))), p.Get("state")); code != "consent_required" {
					t.Errorf("prompt=none after the change: %s, want consent_required", code)
				}
			}
			// The next authorization shows the page again, with the new values.
			token2, page := ev.consentFlow(b, user, tt.scope)
			if len(tt.withheld) > 0 && page == "" {
				t.Fatal("no consent page after the data changed")
			}
			for _, v := range tt.page {
				if !strings.Contains(page, v) {
					t.Errorf("the new consent page does not show %q: %.600s", v, page)
				}
			}
			want := maps.Clone(tt.kept)
			maps.Copy(want, tt.fresh)
			checkClaims(t, "after a new consent", ev.identity(token2), want, len(tt.fresh) == len(tt.withheld))
			// The old token still gets only what its consent page showed.
			checkClaims(t, "the old token after a new consent", ev.identity(token), tt.kept, true)
		})
	}
}

// checkClaims requires got to hold every claim of want with its value (nil
// in want: any value; a proof list is compared as proofText); exact also
// requires nothing else.
func checkClaims(t *testing.T, what string, got, want map[string]any, exact bool) {
	t.Helper()
	for k, v := range want {
		g, ok := got[k]
		if l, isList := g.([]any); isList {
			g = proofText(l)
		}
		if !ok || v != nil && g != v {
			t.Errorf("%s: %s = %#v, want %#v", what, k, g, v)
		}
	}
	if exact && len(got) != len(want) {
		t.Errorf("%s: claims %v, want only %v", what, slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
	}
}

// proofText renders a <ns>.proof list as "id (content type) base64; …".
func proofText(list []any) string {
	var parts []string
	for _, e := range list {
		m, _ := e.(map[string]any)
		parts = append(parts, fmt.Sprintf("%v (%v) %v", m["id"], m["content_type"], m["base64_encoded_content"]))
	}
	return strings.Join(parts, "; ")
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// The data changes while the consent page is open: approving the page
// approves what it showed, so the server shows the page again with the new
// values instead of issuing a code, and the client gets the new values only
// after that second approval.
func TestConsentChangedWhileShown(t *testing.T) {
	ev := newFlowEnv(t)
	ev.loginUser("nora", "a@x.example", map[string]string{"given_name": "Nora"})
	b := ev.browser()
	p := params("rp", "openid email com.vendor.personal_info")
	s := ev.login(b, ev.must(b.Get(ev.authorizeURL(p))), "nora", alicePassword)
	if !isConsent(s) || !strings.Contains(oauthtest.Text(s.Body), "a@x.example") {
		t.Fatalf("want the consent page with a@x.example: %.500s", oauthtest.Text(s.Body))
	}
	ev.editUser("nora", func(u *store.User) { u.Email = "b@x.example" })
	s = ev.must(b.Submit(s.Form, nil, "approve"))
	if !isConsent(s) {
		t.Fatalf("approving a page whose data changed: want the consent page again, got %d %v", s.Status, s.Location)
	}
	text := oauthtest.Text(s.Body)
	if !strings.Contains(text, "b@x.example") || strings.Contains(text, "a@x.example") {
		t.Errorf("the page shown again does not show the new email: %.500s", text)
	}
	if !strings.Contains(text, "zojuist gewijzigd") {
		t.Errorf("the page shown again does not say the details changed: %.500s", text)
	}
	s = ev.answer(b, s, "approve")
	tr := ev.redeem("rp", ev.codeOf(s, p))
	token, _ := tr.Body["access_token"].(string)
	got := ev.identity(token)
	if got["email"] != "b@x.example" || got["email_verified"] != true || got["given_name"] != "Nora" || len(got) != 3 {
		t.Errorf("userinfo %v, want the email approved on the second page", got)
	}
}

// An access token stored before consent records existed has none: it
// releases no identity claims, only sub and the protocol claims, until the
// user consents again.
func TestOldTokenRecordReleasesNoIdentity(t *testing.T) {
	dir := t.TempDir()
	db := openStore(t, dir)
	salt := make([]byte, oidc.SaltSize)
	f := newFixtureWith(t, db, salt, newClock())
	f.addClient("rp", allScopes, "https://rp.example.com/cb")
	f.addUser("anne", "anne@example.com", true, fullClaims, proofDoc("passport", store.ProofPNG, pngProof))
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	// The record as the store wrote it before: no "consented" member.
	now := f.clock.Now().UTC()
	old := fmt.Sprintf(`{"kind":"access","client_id":"rp","username":"anne",`+
		`"scopes":["openid","email","com.vendor.personal_info","com.vendor.id_number","com.vendor.proof"],`+
		`"auth_time":%q,"requested_at":%q,"expires_at":%q,"created_at":%q}`,
		now.Add(-time.Minute).Format(time.RFC3339Nano), now.Add(-2*time.Minute).Format(time.RFC3339Nano),
		now.Add(time.Hour).Format(time.RFC3339Nano), now.Format(time.RFC3339Nano))
	raw, err := bbolt.Open(filepath.Join(dir, "signd.db"), 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = raw.Update(func(tx *bbolt.Tx) error {
		return tx.Bucket([]byte("tokens")).Put(store.Fingerprint("old-token"), []byte(old))
	})
	raw.Close()
	if err != nil {
		t.Fatal(err)
	}

	f = newFixtureWith(t, openStore(t, dir), salt, f.clock)
	got := f.userinfo("old-token")
	for _, k := range protocolKeys {
		if _, ok := got[k]; !ok {
			t.Errorf("userinfo lacks %s", k)
		}
	}
	if len(got) != len(protocolKeys) {
		t.Errorf("an old token without a consent record releases %v", slices.Sorted(maps.Keys(got)))
	}
}
