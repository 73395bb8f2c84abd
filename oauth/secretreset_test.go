package oauth_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/signd/signd/oauth"
	"github.com/signd/signd/oauth/authlogin"
	"github.com/signd/signd/oauth/browser"
	"github.com/signd/signd/oauth/oauthtest"
	"github.com/signd/signd/oauth/passwords"
	"github.com/signd/signd/store"
	"github.com/signd/signd/store/storetest"
)

// afterCheck is the password checker with a hook: then runs once, after
// a password or PIN check has settled and before the step's final
// transaction (the one that opens the session, issues the code or the
// tokens).
type afterCheck struct {
	*passwords.Checker
	once sync.Once
	then func()
}

func (a *afterCheck) settled() {
	if a.then != nil {
		a.once.Do(a.then)
	}
}

func (a *afterCheck) Login(ctx context.Context, username, password, code string, now time.Time) (*store.User, bool, error) {
	defer a.settled()
	return a.Checker.Login(ctx, username, password, code, now)
}

func (a *afterCheck) LoginWithoutCode(ctx context.Context, username, password string, now time.Time) (*store.User, bool, error) {
	defer a.settled()
	return a.Checker.LoginWithoutCode(ctx, username, password, now)
}

func (a *afterCheck) CheckPIN(ctx context.Context, username, pin string, otp *string) (passwords.PINResult, *store.User, error) {
	defer a.settled()
	return a.Checker.CheckPIN(ctx, username, pin, otp)
}

// afterCheckEnv is an env whose login, consent and account pages check
// secrets through an afterCheck.
func afterCheckEnv(t *testing.T) (*env, *afterCheck) {
	ac := &afterCheck{}
	ev := buildEnvWith(t, memoryStore(t), false, envOptions{account: true, browser: func(c *browser.Config) {
		ac.Checker = c.Passwords.(*passwords.Checker)
		c.Passwords = ac
	}})
	return ev, ac
}

// setPIN and setPassword are an admin's set-pin and set-password (admin/users):
// the new hash, the lock and counter cleared, and the revocation, in one
// transaction.
func (ev *env) setPIN(name, pin string) {
	ev.t.Helper()
	h := ev.hash(pin)
	ev.update(func(tx store.Tx) error {
		if err := storetest.EditUser(tx, name, func(u *store.User) { u.PINHash, u.PINLocked, u.FailedPINs = h, false, 0 }); err != nil {
			return err
		}
		_, err := tx.RevokeUserSigning(name)
		return err
	})
}

func (ev *env) setPassword(name, password string) {
	ev.t.Helper()
	h := ev.hash(password)
	ev.update(func(tx store.Tx) error {
		err := storetest.EditUser(tx, name, func(u *store.User) {
			u.PasswordHash, u.PasswordLocked, u.PasswordLockedUntil, u.PasswordLockouts, u.FailedPasswords = h, false, time.Time{}, 0, 0
		})
		if err != nil {
			return err
		}
		_, err = tx.RevokeUser(name)
		return err
	})
}

// secretChangedDesc is the refusal of a step whose password or PIN was
// replaced after its check settled.
const secretChangedDesc = "The password or signing PIN was changed meanwhile"

// TestResetWhileChecked: an admin's set-password or set-pin that commits
// while the old secret is checked (held in its hash), or after the check
// settled and before the step's final transaction, wins on every door:
// the login page opens no session and issues no code, the consent page's
// PIN issues no code, CSC auth/login issues no token. What the reset
// revoked was not there yet; nothing is written after it.
func TestResetWhileChecked(t *testing.T) {
	// noSession requires s to carry no session cookie and no code.
	noSession := func(t *testing.T, s *oauthtest.Step) {
		t.Helper()
		for _, ck := range s.Header.Values("Set-Cookie") {
			if strings.HasPrefix(ck, "signd_session=") {
				t.Errorf("a session cookie was set: %q", ck)
			}
		}
		if s.Redirected() && s.Query().Get("code") != "" {
			t.Errorf("a code was issued: %v", s.Location)
		}
	}
	t.Run("login_page_during", func(t *testing.T) {
		ev, _, _, got := daveWhileHashing(t, func(ev *env) { ev.setPassword("dave", "dave-new-Password-1") })
		if got.Redirected() || !strings.Contains(got.Body, genericLoginError) {
			t.Errorf("old password checked across set-password: want the generic login error, got %d %v", got.Status, got.Location)
		}
		noSession(t, got)
		if u := ev.user("dave"); u.FailedPasswords != 0 {
			t.Errorf("%d failures counted against the new password, want 0", u.FailedPasswords)
		}
	})
	t.Run("login_page_after", func(t *testing.T) {
		ev, ac := afterCheckEnv(t)
		ac.then = func() { ev.setPassword("dave", "dave-new-Password-1") }
		b := ev.browser()
		got := ev.login(b, page(t, ev.must(b.Get(ev.authorizeURL(serviceParams())))), "dave", davePassword)
		deniedWith(t, "old password settled before set-password", got, secretChangedDesc)
		noSession(t, got)
	})
	t.Run("account_page_after", func(t *testing.T) {
		ev, ac := afterCheckEnv(t)
		ac.then = func() { ev.setPassword("alice", "alice-new-Password-1") }
		b := ev.browser()
		s := ev.must(b.Get(ev.ts.URL + "/oauth2/account?lang=en"))
		v := s.Form.Values(map[string]string{"username": "alice", "password": alicePassword})
		got := ev.accountPost(b, "/oauth2/account/login", v, chromiumSameOrigin())
		if got.Status != http.StatusOK || !strings.Contains(oauthtest.Text(got.Body), "The sign-in details are wrong") {
			t.Errorf("account login with the old password settled before set-password: %d %v %.300s, want the login error",
				got.Status, got.Location, oauthtest.Text(got.Body))
		}
		noSession(t, got)
	})
	t.Run("consent_pin_during", func(t *testing.T) {
		ev, _, _, got := aliceWhileHashingPIN(t, func(ev *env) { ev.setPIN("alice", "135790") })
		if got.Redirected() {
			t.Errorf("old PIN checked across set-pin: want the consent page's wrong-PIN notice, got a redirect to %v", got.Location)
		}
		noSession(t, got)
		if u := ev.user("alice"); u.FailedPINs != 0 {
			t.Errorf("%d failures counted against the new PIN, want 0", u.FailedPINs)
		}
	})
	t.Run("consent_pin_after", func(t *testing.T) {
		ev, ac := afterCheckEnv(t)
		b, s := ev.consentPage() // alice's login settles first: no reset yet
		ac.then = func() { ev.setPIN("alice", "135790") }
		got := ev.approve(b, s, alicePIN)
		deniedWith(t, "old PIN settled before set-pin", got, secretChangedDesc)
		if !ev.logged("password or PIN changed meanwhile: no code issued", "alice") {
			t.Errorf("the refusal is not logged")
		}
	})
	t.Run("auth_login_during", func(t *testing.T) {
		ev, ph := lockoutEnv(t)
		pl := passwordLogin(t, ev, "rp")
		g := ph.hold(alicePassword)
		done := make(chan error, 1)
		go func() {
			tok, err := pl.Login(context.Background(), "alice", alicePassword, true)
			if err == nil && tok == nil {
				err = errors.New("no tokens and no error")
			}
			done <- err
		}()
		<-g.entered
		ev.setPassword("alice", "alice-new-Password-1")
		close(g.release)
		if err := <-done; !errors.Is(err, authlogin.ErrLoginFailed) {
			t.Errorf("auth/login with the old password across set-password: %v, want ErrLoginFailed", err)
		}
	})
	t.Run("auth_login_after", func(t *testing.T) {
		ev := newEnvWith(t, envOptions{})
		ac := &afterCheck{Checker: ev.passwords, then: func() { ev.setPassword("alice", "alice-new-Password-1") }}
		pl, err := authlogin.New(authlogin.Config{ClientID: "rp", Scope: "service", RefreshTTL: 24 * time.Hour,
			Store: ev.cfg.Store, Passwords: ac, Logger: ev.cfg.Logger, Now: ev.cfg.Now})
		if err != nil {
			t.Fatal(err)
		}
		if tok, err := pl.Login(context.Background(), "alice", alicePassword, true); !errors.Is(err, authlogin.ErrLoginFailed) {
			t.Errorf("auth/login with the old password settled before set-password: %+v, %v; want ErrLoginFailed", tok, err)
		}
	})
}

// overtakingProfile is quietProfile (no consent page: single sign-on issues
// the code at once) under the scope "overtaken", whose CheckUser — run
// after the login session was read and before the code is written — lets
// then commit first.
type overtakingProfile struct {
	quietProfile
	then func()
}

func (*overtakingProfile) Info() oauth.ProfileInfo {
	return oauth.ProfileInfo{Name: "overtaken", RedirectURIOptional: true, ErrorPage: true}
}

func (*overtakingProfile) Match(scopes []string) bool { return slices.Contains(scopes, "overtaken") }

func (p *overtakingProfile) CheckUser(ctx context.Context, r *oauth.Request) error {
	if p.then != nil {
		p.then()
		p.then = nil
	}
	return p.quietProfile.CheckUser(ctx, r)
}

// TestSSOOvertakenByReset: a set-password (the session revoked, the
// generation raised) or a logout that commits between single sign-on's
// read of the session and the write of the code wins: no code, so a
// stolen session cookie gets nothing past the reset meant to shut it out.
func TestSSOOvertakenByReset(t *testing.T) {
	for _, tc := range []struct {
		name string
		then func(ev *env, session []byte)
	}{
		{"set-password", func(ev *env, _ []byte) { ev.setPassword("alice", "alice-new-Password-1") }},
		{"set-pin", func(ev *env, _ []byte) { ev.setPIN("alice", "97531") }},
		// A logout elsewhere: the session deleted, the account unchanged.
		{"session ended", func(ev *env, session []byte) {
			ev.update(func(tx store.Tx) error { return tx.DeleteSession(session) })
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &overtakingProfile{}
			ev := newEnv(t, func(c *oauth.Config) { c.Profiles = append(c.Profiles, p) })
			ev.update(func(tx store.Tx) error {
				return tx.CreateClient(&store.Client{ID: "ov", Name: "Overtaken", SecretHash: store.HashSecret(rpSecret),
					RedirectURIs: []string{rpRedirect}, Scopes: []string{"overtaken"}})
			})
			_, b := ev.serviceCode(serviceParams()) // alice's login session
			u, _ := url.Parse(ev.authorizeURL(serviceParams()))
			var session []byte
			for _, ck := range b.HTTP.Jar.Cookies(u) {
				if ck.Name == "signd_session" {
					session = store.Fingerprint(ck.Value)
				}
			}
			if session == nil {
				t.Fatal("no login session cookie")
			}
			p.then = func() { tc.then(ev, session) }
			got := ev.must(b.Get(ev.authorizeURL(with(serviceParams(), "client_id", "ov", "scope", "overtaken"))))
			deniedWith(t, "single sign-on overtaken by "+tc.name, got, secretChangedDesc)
		})
	}
}
