package oauth_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pquerna/otp/totp"

	"github.com/signd/signd/oauth/browser"
	"github.com/signd/signd/oauth/oauthtest"
	"github.com/signd/signd/store"
)

const genericLoginError = "De inloggegevens zijn onjuist, of het account is geblokkeerd."

// TestLogin checks the login page's rules, one case per rule.
func TestLogin(t *testing.T) {
	ev := newEnv(t)
	start := func(b *oauthtest.Browser) *oauthtest.Step {
		return page(t, ev.must(b.Get(ev.authorizeURL(serviceParams()))))
	}
	submit := func(b *oauthtest.Browser, s *oauthtest.Step, set map[string]string) *oauthtest.Step {
		return ev.must(b.Submit(s.Form, set, "approve"))
	}
	failsGenerically := func(t *testing.T, s *oauthtest.Step) {
		t.Helper()
		page(t, s)
		if !strings.Contains(s.Body, genericLoginError) || !s.Form.Has("password") {
			t.Fatalf("want the login page with the generic error, got %.500s", oauthtest.Text(s.Body))
		}
	}

	t.Run("wrong_password_shows_the_generic_error", func(t *testing.T) {
		b := ev.browser()
		s := submit(b, start(b), map[string]string{"username": "alice", "password": "nope"})
		failsGenerically(t, s)
		if s.Form.Fields.Get("username") != "alice" {
			t.Errorf("username not kept: %q", s.Form.Fields.Get("username"))
		}
		// The same form can be answered again.
		ev.codeOf(ev.approve(b, ev.login(b, s, "alice", alicePassword), ""), rpRedirect, "state-123")
		if u := ev.user("alice"); u.FailedPasswords != 0 {
			t.Errorf("a successful login keeps %d failures", u.FailedPasswords)
		}
	})
	t.Run("unknown_user_gets_the_same_answer", func(t *testing.T) {
		b := ev.browser()
		failsGenerically(t, submit(b, start(b), map[string]string{"username": "nobody", "password": "nope"}))
	})
	t.Run("disabled_user_gets_the_same_answer", func(t *testing.T) {
		b := ev.browser()
		failsGenerically(t, submit(b, start(b), map[string]string{"username": "carol", "password": carolPassword}))
	})
	t.Run("totp_user_needs_the_code", func(t *testing.T) {
		b := ev.browser()
		s := start(b)
		s = submit(b, s, map[string]string{"username": "bob", "password": bobPassword})
		failsGenerically(t, s)
		s = submit(b, s, map[string]string{"username": "bob", "password": bobPassword, "otp": "000000"})
		failsGenerically(t, s)
		code, err := totp.GenerateCode(bobTOTP, ev.clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		s = submit(b, s, map[string]string{"username": "bob", "password": bobPassword, "otp": code})
		if page(t, s).Form.Has("password") {
			t.Fatalf("TOTP login failed: %s", oauthtest.Text(s.Body))
		}
		if u := ev.user("bob"); u.FailedPasswords != 0 {
			t.Errorf("bob keeps %d failures", u.FailedPasswords)
		}
	})
	t.Run("lockout_after_5_wrong_passwords", func(t *testing.T) {
		b := ev.browser()
		s := start(b)
		for i := range 5 {
			s = submit(b, s, map[string]string{"username": "dave", "password": "wrong"})
			failsGenerically(t, s)
			u := ev.user("dave")
			if locked := ev.clock.Now().Before(u.PasswordLockedUntil); u.FailedPasswords != i+1 || locked != (i == 4) || u.PasswordLocked {
				t.Fatalf("after %d failures: %d counted, locked until %v, permanently %v", i+1, u.FailedPasswords, u.PasswordLockedUntil, u.PasswordLocked)
			}
		}
		// Locked: the right password gets the same answer.
		failsGenerically(t, submit(b, s, map[string]string{"username": "dave", "password": davePassword}))
		// An admin unlocks (signd user unlock), and the right password works.
		ev.update(func(tx store.Tx) error {
			u, _ := tx.User("dave")
			u.FailedPasswords, u.PasswordLockedUntil = 0, time.Time{}
			return tx.PutUser(u)
		})
		s = submit(b, s, map[string]string{"username": "dave", "password": davePassword})
		if page(t, s).Form.Has("password") {
			t.Fatal("unlocked user cannot log in")
		}
	})
	t.Run("cancel_is_access_denied", func(t *testing.T) {
		b := ev.browser()
		s := ev.must(b.Submit(start(b).Form, nil, "deny"))
		if e, _ := errorOf(t, s); e != "access_denied" {
			t.Errorf("cancel: %s", e)
		}
	})
	t.Run("wrong_csrf_token_shows_error_page", func(t *testing.T) {
		b := ev.browser()
		s := ev.must(b.Submit(start(b).Form, map[string]string{"csrf_token": "forged", "username": "alice", "password": alicePassword}, "approve"))
		if s.Redirected() || s.Status != http.StatusBadRequest {
			t.Errorf("forged CSRF: %d %v", s.Status, s.Location)
		}
	})
	t.Run("unknown_request_shows_error_page", func(t *testing.T) {
		b := ev.browser()
		s := ev.must(b.Submit(start(b).Form, map[string]string{"request": "unknown", "username": "alice", "password": alicePassword}, "approve"))
		if s.Redirected() || s.Status != http.StatusBadRequest || !strings.Contains(s.Body, "onbekend of verlopen") {
			t.Errorf("unknown request: %d %v", s.Status, s.Location)
		}
	})
	t.Run("answered_request_cannot_be_answered_again", func(t *testing.T) {
		b := ev.browser()
		s := start(b)
		ev.login(b, s, "alice", alicePassword)
		s2 := ev.must(b.Submit(s.Form, map[string]string{"username": "alice", "password": alicePassword}, "approve"))
		if s2.Redirected() || s2.Status != http.StatusBadRequest {
			t.Errorf("second login answer: %d %v", s2.Status, s2.Location)
		}
	})
}

// TestConsent checks the consent page's rules: Deny, the PIN, its lock,
// and the credential checks after login.
func TestConsent(t *testing.T) {
	t.Run("deny_is_access_denied", func(t *testing.T) {
		ev := newEnv(t)
		b := ev.browser()
		s := ev.login(b, page(t, ev.must(b.Get(ev.authorizeURL(serviceParams())))), "alice", alicePassword)
		s = ev.must(b.Submit(s.Form, nil, "deny"))
		if e, d := errorOf(t, s); e != "access_denied" || d != "Resource owner rejected consent" {
			t.Errorf("deny: %s %q", e, d)
		}
		if s.Query().Get("state") != "state-123" || s.Status != http.StatusSeeOther {
			t.Errorf("deny redirect %d %s", s.Status, s.Location)
		}
	})
	t.Run("wrong_pin_shows_the_page_again", func(t *testing.T) {
		ev := newEnv(t)
		b := ev.browser()
		s := ev.login(b, page(t, ev.must(b.Get(ev.authorizeURL(credentialParams(credAlice))))), "alice", alicePassword)
		s = ev.approve(b, s, "000000")
		if !page(t, s).Form.Has("pin") || !strings.Contains(s.Body, "De PIN is onjuist") {
			t.Fatalf("wrong PIN: %s", oauthtest.Text(s.Body))
		}
		if u := ev.user("alice"); u.FailedPINs != 1 {
			t.Errorf("failed PINs %d", u.FailedPINs)
		}
		ev.codeOf(ev.approve(b, s, alicePIN), rpRedirect, "state-123")
		if u := ev.user("alice"); u.FailedPINs != 0 {
			t.Errorf("failed PINs after success %d", u.FailedPINs)
		}
	})
	t.Run("pin_lockout_after_5_wrong_pins", func(t *testing.T) {
		ev := newEnv(t)
		b := ev.browser()
		s := ev.login(b, page(t, ev.must(b.Get(ev.authorizeURL(credentialParams(credAlice))))), "alice", alicePassword)
		for range 4 {
			s = page(t, ev.approve(b, s, "000000"))
		}
		s = ev.approve(b, s, "000000")
		if e, d := errorOf(t, s); e != "access_denied" || !strings.Contains(d, "PIN is locked") {
			t.Errorf("fifth wrong PIN: %s %q", e, d)
		}
		if u := ev.user("alice"); !u.PINLocked || u.FailedPINs != 5 {
			t.Errorf("user after 5 wrong PINs: locked %v, %d", u.PINLocked, u.FailedPINs)
		}
		// A new flow: right after login, access_denied.
		s = ev.login(b, page(t, ev.must(b.Get(ev.authorizeURL(credentialParams(credAlice))))), "alice", alicePassword)
		if e, d := errorOf(t, s); e != "access_denied" || !strings.Contains(d, "PIN is locked") {
			t.Errorf("locked PIN at login: %s %q", e, d)
		}
		// The password still works for the service scope.
		ev.codeOf(ev.approve(b, ev.must(b.Get(ev.authorizeURL(serviceParams()))), ""), rpRedirect, "state-123")
	})
	t.Run("user_without_pin_is_access_denied", func(t *testing.T) {
		ev := newEnv(t)
		b := ev.browser()
		s := ev.login(b, page(t, ev.must(b.Get(ev.authorizeURL(credentialParams("cred-erin"))))), "erin", davePassword)
		if e, d := errorOf(t, s); e != "access_denied" || !strings.Contains(d, "PIN") {
			t.Errorf("no PIN: %s %q", e, d)
		}
	})
	// The credential must be the user's and enabled; every refusal is the
	// same answer.
	var answers []string
	for _, tc := range []struct{ name, cred string }{
		{"unknown_credential_is_access_denied", "cred-nope"},
		{"another_users_credential_is_access_denied", credDave},
		{"disabled_credential_is_access_denied", credDisabled},
		{"pending_credential_is_access_denied", credPending},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := newEnv(t)
			b := ev.browser()
			s := ev.login(b, page(t, ev.must(b.Get(ev.authorizeURL(credentialParams(tc.cred))))), "alice", alicePassword)
			e, d := errorOf(t, s)
			if e != "access_denied" {
				t.Errorf("error %s", e)
			}
			answers = append(answers, e+" "+d)
		})
	}
	for _, a := range answers {
		if a != answers[0] {
			t.Errorf("credential refusals differ: %q", answers)
		}
	}
	t.Run("credential_disabled_while_consenting_is_access_denied", func(t *testing.T) {
		ev := newEnv(t)
		b := ev.browser()
		s := ev.login(b, page(t, ev.must(b.Get(ev.authorizeURL(credentialParams(credAlice))))), "alice", alicePassword)
		ev.update(func(tx store.Tx) error {
			c, _ := tx.Credential(credAlice)
			c.Status = store.CredentialDisabled
			return tx.PutCredential(c)
		})
		if e, _ := errorOf(t, ev.approve(b, s, alicePIN)); e != "access_denied" {
			t.Errorf("error %s", e)
		}
		if u := ev.user("alice"); u.FailedPINs != 0 {
			t.Error("PIN checked for a refused credential")
		}
	})
	t.Run("expired_certificate_is_access_denied", func(t *testing.T) {
		ev := newEnv(t)
		ev.clock.Advance(25 * time.Hour) // past the leaf's NotAfter
		b := ev.browser()
		s := ev.login(b, page(t, ev.must(b.Get(ev.authorizeURL(credentialParams(credAlice))))), "alice", alicePassword)
		if e, _ := errorOf(t, s); e != "access_denied" {
			t.Errorf("error %s", e)
		}
	})
}

// TestTimeouts checks the three timeouts with the injected clock.
func TestTimeouts(t *testing.T) {
	tests := []struct {
		name    string
		cfg     func(*browser.Config)
		atLogin time.Duration // wait before the login answer
		atPIN   time.Duration // wait before the consent answer
		desc    string
	}{
		{name: "login_timeout_is_authentication_challenge_expired", atLogin: 10*time.Minute + time.Second,
			cfg: func(c *browser.Config) { c.ProcessTimeout = time.Hour }, desc: "authentication challenge expired"},
		{name: "consent_timeout_is_consent_request_expired", atLogin: time.Minute, atPIN: 5*time.Minute + time.Second,
			desc: "consent request expired"},
		{name: "process_timeout_is_process_expired", atLogin: 9 * time.Minute, atPIN: 4 * time.Minute,
			desc: "process expired"},
		{name: "process_timeout_during_login", atLogin: 6 * time.Minute,
			cfg: func(c *browser.Config) { c.ProcessTimeout = 5 * time.Minute }, desc: "process expired"},
		{name: "within_every_timeout_succeeds", atLogin: 9 * time.Minute, atPIN: 59 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := newEnvWith(t, envOptions{browser: tt.cfg})
			b := ev.browser()
			s := page(t, ev.must(b.Get(ev.authorizeURL(credentialParams(credAlice)))))
			ev.clock.Advance(tt.atLogin)
			last := s.Form
			s = ev.login(b, s, "alice", alicePassword)
			if tt.atPIN != 0 || tt.desc == "" {
				page(t, s)
				last = s.Form
				ev.clock.Advance(tt.atPIN)
				s = ev.approve(b, s, alicePIN)
			}
			if tt.desc == "" {
				ev.codeOf(s, rpRedirect, "state-123")
				return
			}
			if e, d := errorOf(t, s); e != "access_denied" || d != tt.desc {
				t.Errorf("got %s %q, want access_denied %q", e, d, tt.desc)
			}
			// The request is gone: answering the page again is the
			// unknown-request page.
			s2 := ev.must(b.Submit(last, map[string]string{"username": "alice", "password": alicePassword, "pin": alicePIN}, "approve"))
			if s2.Redirected() || s2.Status != http.StatusBadRequest {
				t.Errorf("answer after the timeout: %d %v", s2.Status, s2.Location)
			}
		})
	}
}
