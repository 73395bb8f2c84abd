package oauth_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/signd/signd/oauth"
	"github.com/signd/signd/oauth/oauthtest"
	"github.com/signd/signd/store"
)

// recordProfile shows the user's email as a named consent item whose
// digest is SHA-256 of the address; bad makes Consent describe a broken
// record (two items with one name, or a name without a digest).
type recordProfile struct {
	quietProfile
	bad string
}

func (recordProfile) Info() oauth.ProfileInfo { return oauth.ProfileInfo{Name: "record"} }

func (recordProfile) Match(scopes []string) bool { return slices.Contains(scopes, "record") }

func (p *recordProfile) Consent(_ context.Context, r *oauth.Request) (*oauth.Consent, error) {
	item := oauth.ConsentItem{Label: oauth.Text{NL: "E-mail", EN: "Email"}, Value: r.User.Email, Name: "mail", Digest: mailDigest(r.User.Email)}
	c := &oauth.Consent{Title: oauth.Text{NL: "Delen", EN: "Share"}, Items: []oauth.ConsentItem{
		item, {Label: oauth.Text{NL: "Vast", EN: "Fixed"}, Value: "not recorded"},
	}}
	switch p.bad {
	case "duplicate":
		c.Items = append(c.Items, item)
	case "no digest":
		c.Items[0].Digest = nil
	}
	return c, nil
}

func mailDigest(email string) []byte {
	sum := sha256.Sum256([]byte(email))
	return sum[:]
}

func recordEnv(t *testing.T, p *recordProfile) *env {
	ev := newEnv(t, func(c *oauth.Config) { c.Profiles = append(c.Profiles, p) })
	ev.update(func(tx store.Tx) error {
		return tx.CreateClient(&store.Client{ID: "rec", Name: "Recorder", SecretHash: store.HashSecret(rpSecret),
			RedirectURIs: []string{rpRedirect}, Scopes: []string{"record", "quiet"}})
	})
	return ev
}

func recordParams(scope string) url.Values {
	return with(serviceParams(), "client_id", "rec", "scope", scope)
}

// tokenRecord redeems code for client rec and returns the stored token.
func (ev *env) tokenRecord(code string) *store.Token {
	ev.t.Helper()
	_, body := ev.tokenRequest(url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {rpRedirect}}, "rec", rpSecret)
	value, _ := body["access_token"].(string)
	if value == "" {
		ev.t.Fatalf("token response %v", body)
	}
	var tok *store.Token
	ev.update(func(tx store.Tx) (err error) { tok, err = tx.Token(store.Fingerprint(value)); return err })
	return tok
}

// The named items of the consent page that was shown travel from the
// pending request to the code to the token; unnamed items are not
// recorded, and a flow without a consent page records nothing.
func TestConsentRecordTravels(t *testing.T) {
	ev := recordEnv(t, &recordProfile{})
	b := ev.browser()
	p := recordParams("record")
	s := ev.approve(b, ev.login(b, ev.must(b.Get(ev.authorizeURL(p))), "alice", alicePassword), "")
	code := ev.codeOf(s, rpRedirect, p.Get("state"))
	var ac *store.AuthCode
	ev.update(func(tx store.Tx) (err error) { ac, err = tx.Code(store.Fingerprint(code)); return err })
	want := store.ConsentRecord{"mail": mailDigest("alice@example.com")}
	if len(ac.Consented) != 1 || !bytes.Equal(ac.Consented["mail"], want["mail"]) {
		t.Errorf("code records %v, want %v", ac.Consented, want)
	}
	if tok := ev.tokenRecord(code); len(tok.Consented) != 1 || !tok.Consented.Equal("mail", want["mail"]) {
		t.Errorf("token records %v, want %v", tok.Consented, want)
	}

	// No consent page (the quiet profile): nothing recorded.
	p = recordParams("quiet")
	s = ev.must(b.Get(ev.authorizeURL(p)))
	if tok := ev.tokenRecord(ev.codeOf(s, rpRedirect, p.Get("state"))); tok.Consented != nil {
		t.Errorf("a flow without a consent page records %v", tok.Consented)
	}
}

// Data that changes while the consent page is open: the answer shows the
// page again with the new value and a notice, and only the second
// approval issues a code, recording the value shown the second time.
func TestConsentRecordChangedBeforeAnswer(t *testing.T) {
	ev := recordEnv(t, &recordProfile{})
	b := ev.browser()
	p := recordParams("record")
	s := ev.login(b, ev.must(b.Get(ev.authorizeURL(p))), "alice", alicePassword)
	page(t, s)
	ev.updateUser("alice", func(u *store.User) {
		u.Email = "alice@new.example"
	})
	s = ev.approve(b, s, "")
	page(t, s)
	if text := oauthtest.Text(s.Body); !strings.Contains(text, "alice@new.example") || !strings.Contains(text, "Uw gegevens zijn zojuist gewijzigd") {
		t.Fatalf("want the consent page again with the new value and the notice: %.600s", text)
	}
	if !strings.Contains(ev.logs.String(), "consent page shown again") {
		t.Error("the second showing is not logged")
	}
	s = ev.approve(b, s, "")
	tok := ev.tokenRecord(ev.codeOf(s, rpRedirect, p.Get("state")))
	if !tok.Consented.Equal("mail", mailDigest("alice@new.example")) || len(tok.Consented) != 1 {
		t.Errorf("token records %v, want the second page's value", tok.Consented)
	}
}

// A profile whose consent items cannot be recorded is a server bug: the
// flow ends with server_error and no code.
func TestConsentRecordProfileBug(t *testing.T) {
	for _, bad := range []string{"duplicate", "no digest"} {
		t.Run(bad, func(t *testing.T) {
			ev := recordEnv(t, &recordProfile{bad: bad})
			b := ev.browser()
			s := ev.login(b, ev.must(b.Get(ev.authorizeURL(recordParams("record")))), "alice", alicePassword)
			if code, _ := errorOf(t, s); code != "server_error" {
				t.Errorf("error %q, want server_error", code)
			}
		})
	}
}
