package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/signd/signd/oauth/oauthtest"
	"github.com/signd/signd/store"
	"github.com/signd/signd/store/storetest"
)

// TestPINLockoutThroughDaemon locks alice's signing PIN with a burst of
// wrong PINs fired at once against the real daemon (oauth.max_failures 3),
// and shows that no signature is possible afterwards: a code her right PIN
// obtained before the lock does not turn into a SAD, and the right PIN on a
// consent page shown before the lock gets access_denied.
func TestPINLockoutThroughDaemon(t *testing.T) {
	e := newEnv(t, "oauth:\n  max_failures: 3\n")
	const password, pin = journeyPassword, journeyPIN
	cred, base, stop := startJourney(t, e)

	conf, ctx := journeyClient(base)
	digest := sha256.Sum256([]byte("%PDF-1.7 the contract alice signs"))
	// consent logs in in a new browser and returns it at the consent page.
	consent := func(scope string) (*oauthtest.Browser, *oauthtest.Step) {
		t.Helper()
		c := conf
		c.Scopes = []string{scope}
		opts := []oauth2.AuthCodeOption{oauth2.SetAuthURLParam("lang", "en")}
		if scope == "credential" {
			opts = append(opts, oneSignature(cred, digest[:])...)
		}
		b := oauthtest.NewBrowser(nil)
		s, err := b.Get(c.AuthCodeURL("st", opts...))
		if err == nil {
			s, err = b.Submit(s.Form, map[string]string{"username": "alice", "password": password}, "approve")
		}
		if err != nil || s.Form == nil {
			t.Fatalf("%s: no consent page: %v %+v", scope, err, s)
		}
		return b, s
	}
	codeOf := func(s *oauthtest.Step) string {
		t.Helper()
		if q := s.Query(); q.Get("code") != "" {
			return q.Get("code")
		}
		t.Fatalf("no code: %d %v %s", s.Status, s.Location, oauthtest.Text(s.Body))
		return ""
	}

	// A service token to call signHash with, and a code for one
	// signature, obtained with the right PIN before the lock.
	b, s := consent("service")
	s, _ = b.Submit(s.Form, nil, "approve")
	svcConf := conf
	svcConf.Scopes = []string{"service"}
	service, err := svcConf.Exchange(ctx, codeOf(s))
	if err != nil {
		t.Fatal(err)
	}
	b, s = consent("credential")
	s, _ = b.Submit(s.Form, map[string]string{"pin": pin}, "approve")
	earlyCode := codeOf(s)

	// Thirteen consent pages; twelve get a wrong PIN at once.
	const n = 12
	browsers, pages := make([]*oauthtest.Browser, n+1), make([]*oauthtest.Step, n+1)
	for i := range browsers {
		browsers[i], pages[i] = consent("credential")
	}
	// Evaluated guesses that settle before the third one see the page
	// again ("wrong PIN"); every other answer ends the flow.
	if wrongPages := guessPINsAtOnce(t, browsers[:n], pages[:n], func(int) string { return "" }); wrongPages > 2 {
		t.Errorf("%d wrong PINs were answered \"wrong PIN\": more than max_failures-1 were evaluated", wrongPages)
	}

	// The code from before the lock: no SAD, so nothing to sign with.
	credConf := conf
	credConf.Scopes = []string{"credential"}
	if sad, err := credConf.Exchange(ctx, earlyCode); err == nil {
		status, res := postJSON(t, base+"/csc/v1/signatures/signHash", service.AccessToken, signHashBody(cred, sad.AccessToken, digest[:]))
		t.Fatalf("a SAD was issued after the PIN locked; signHash answered %d %v", status, res)
	} else if re := (*oauth2.RetrieveError)(nil); !errors.As(err, &re) || re.ErrorCode != "invalid_grant" || re.ErrorDescription != "The signing PIN is locked" {
		t.Errorf("redeeming the early code: %v", err)
	}

	// The right PIN on a page shown before the lock.
	s, _ = browsers[n].Submit(pages[n].Form, map[string]string{"pin": pin}, "approve")
	if q := s.Query(); q.Get("code") != "" || q.Get("error") != "access_denied" || q.Get("error_description") != "The signing PIN is locked" {
		t.Errorf("right PIN after the lock: %d %v", s.Status, s.Location)
	}

	stop()
	db := e.openStore()
	var u *store.User
	if err := db.View(context.Background(), func(tx store.Tx) (err error) { u, err = tx.User("alice"); return err }); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if u.FailedPINs != 3 || !u.PINLocked {
		t.Errorf("alice after %d wrong PINs at once: %d failures counted, locked %v; want 3, true", n, u.FailedPINs, u.PINLocked)
	}

	// The password's unlock (the administrator's) leaves the PIN locked;
	// the PIN's (the security officer's) lifts it.
	if out := e.must("", "user", "unlock", "alice"); !strings.Contains(out, "locked:          PIN\n") || !strings.Contains(out, "failed PINs:     3\n") {
		t.Errorf("user unlock lifted the PIN lock:\n%s", out)
	}
	if out := e.must("", "user", "unlock-pin", "alice"); !strings.Contains(out, "locked:          no\n") || !strings.Contains(out, "failed PINs:     0\n") {
		t.Errorf("user unlock-pin:\n%s", out)
	}
}

// guessPINsAtOnce submits a different wrong PIN on each of the PIN pages
// at once (the i-th with browsers[i]) and checks each answer is the PIN
// page again ("wrong PIN") or access_denied "The signing PIN is locked";
// where(i) names the i-th guess's node in a failure. It returns how many
// answers were the PIN page.
func guessPINsAtOnce(t *testing.T, browsers []*oauthtest.Browser, pages []*oauthtest.Step, where func(i int) string) int {
	t.Helper()
	answers := make([]*oauthtest.Step, len(pages))
	storetest.AtOnce(len(pages), func(i int) {
		var err error
		if answers[i], err = browsers[i].Submit(pages[i].Form, map[string]string{"pin": fmt.Sprintf("wrong-%02d", i)}, "approve"); err != nil {
			t.Error(err)
			answers[i] = &oauthtest.Step{}
		}
	})
	wrongPages := 0
	for i, a := range answers {
		switch q := a.Query(); {
		case a.Form != nil && a.Form.Has("pin"):
			wrongPages++
		case q.Get("error") != "access_denied" || q.Get("error_description") != "The signing PIN is locked":
			t.Errorf("wrong PIN %d%s: want access_denied or the PIN page, got %d %v %.200s", i, where(i), a.Status, a.Location, oauthtest.Text(a.Body))
		}
	}
	return wrongPages
}
