package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pquerna/otp/totp"
	"golang.org/x/oauth2"

	"github.com/signd/signd/oauth/oauthtest"
)

// loginAnswer is an auth/login answer as the client sees it: the status,
// the headers a client acts on and the body, byte for byte.
type loginAnswer struct {
	status  int
	headers string
	body    []byte
}

// authLoginRaw posts auth/login with HTTP Basic for user and password.
func authLoginRaw(t *testing.T, base, user, password string) loginAnswer {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/csc/v1/auth/login", strings.NewReader(`{"rememberMe":true}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", basic(user, password))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	var h strings.Builder
	for _, name := range []string{"Content-Type", "Content-Length", "WWW-Authenticate", "Cache-Control", "Retry-After", "Set-Cookie"} {
		h.WriteString(name + ": " + strings.Join(res.Header.Values(name), ", ") + "\n")
	}
	return loginAnswer{res.StatusCode, h.String(), body}
}

// sameAnswer requires got to be want, byte for byte.
func sameAnswer(t *testing.T, what string, got, want loginAnswer) {
	t.Helper()
	if got.status != want.status || got.headers != want.headers || !bytes.Equal(got.body, want.body) {
		t.Errorf("%s: %d\n%s%s\nwant a wrong password's answer: %d\n%s%s", what, got.status, got.headers, got.body, want.status, want.headers, want.body)
	}
}

// userShow is what `signd user show --json` says of a user's password lock.
type userShow struct {
	FailedPasswords int        `json:"failed_passwords"`
	PasswordLocked  bool       `json:"password_locked"`
	LockedUntil     *time.Time `json:"password_locked_until"`
}

func (e *env) showUser(name string) userShow {
	e.t.Helper()
	var u userShow
	if err := json.Unmarshal([]byte(e.must("", "--json", "user", "show", name)), &u); err != nil {
		e.t.Fatal(err)
	}
	return u
}

// TestTOTPGuessesThroughAuthLoginDaemon: against the real daemon, someone
// who knows bob's password but not his one-time codes alternates wrong
// codes on the login page with auth/login. auth/login's answer to bob's
// right password is a wrong password's, byte for byte, and resets
// nothing: the account locks after max_failures wrong codes.
func TestTOTPGuessesThroughAuthLoginDaemon(t *testing.T) {
	e := newEnv(t, authLoginConfig+"oauth:\n  max_failures: 3\n")
	_, base, _ := startJourney(t, e)
	const bobPassword = "bob's long password"
	e.must(bobPassword+"\n", "user", "add", "bob", "--password-file", "-")
	var en struct{ Secret string }
	if err := json.Unmarshal([]byte(e.must("", "--json", "user", "totp", "enroll", "bob")), &en); err != nil || en.Secret == "" {
		t.Fatalf("totp enroll --json: %v %+v", err, en)
	}
	wrongCode := func() string {
		for i := 0; ; i++ {
			c := []byte("123456")
			c[5] = byte('0' + i)
			ok := true
			for _, d := range []time.Duration{-30 * time.Second, 0, 30 * time.Second} {
				if v, _ := totp.GenerateCode(en.Secret, time.Now().Add(d)); v == string(c) {
					ok = false
				}
			}
			if ok {
				return string(c)
			}
		}
	}
	conf, _ := journeyClient(base)
	conf.Scopes = []string{"service"}
	b := oauthtest.NewBrowser(nil)
	s, err := b.Get(conf.AuthCodeURL("st", oauth2.SetAuthURLParam("lang", "en")))
	if err != nil || s.Form == nil {
		t.Fatalf("authorize: %v", err)
	}
	loginPage := func(otp string) *oauthtest.Step {
		t.Helper()
		next, err := b.Submit(s.Form, map[string]string{"username": "bob", "password": bobPassword, "otp": otp}, "approve")
		if err != nil {
			t.Fatal(err)
		}
		return next
	}

	// A wrong password (counted: the first failure) is the reference.
	wrongPassword := authLoginRaw(t, base, "bob", "not bob's password")
	if wrongPassword.status != http.StatusUnauthorized {
		t.Fatalf("wrong password: %d %s", wrongPassword.status, wrongPassword.body)
	}
	for i := 1; i <= 2; i++ {
		sameAnswer(t, "auth/login with bob's right password", authLoginRaw(t, base, "bob", bobPassword), wrongPassword)
		if u := e.showUser("bob"); u.FailedPasswords != i {
			t.Errorf("after %d wrong guesses and bob's right password on auth/login: %d failures, want %d", i, u.FailedPasswords, i)
		}
		if s = loginPage(wrongCode()); s.Form == nil || !s.Form.Has("password") {
			t.Fatalf("a wrong code let bob in: %d %v", s.Status, s.Location)
		}
	}
	if u := e.showUser("bob"); u.FailedPasswords != 3 || !u.PasswordLocked || u.LockedUntil == nil {
		t.Errorf("after a wrong password and 2 wrong codes between auth/logins: %+v; want the account locked for a while", u)
	}
	code, _ := totp.GenerateCode(en.Secret, time.Now())
	if s = loginPage(code); s.Form == nil || !s.Form.Has("password") {
		t.Errorf("the locked account logged in with the right password and code: %d %v", s.Status, s.Location)
	}
	sameAnswer(t, "auth/login of the locked account", authLoginRaw(t, base, "bob", bobPassword), wrongPassword)
}

// TestTimedLockoutDaemon: against the real daemon and its bbolt file, on a
// clock the test moves: max_failures wrong passwords lock alice for
// oauth.lockout.base, the next lock lasts twice as long, and after
// oauth.lockout.permanent_after timed locks the next is permanent. While
// locked the right password gets a wrong password's answer, byte for
// byte; the lock survives a restart; `user show` says until when, or
// "permanent"; `user unlock` lifts it.
func TestTimedLockoutDaemon(t *testing.T) {
	e := newEnv(t, authLoginConfig+"oauth:\n  max_failures: 3\n  lockout:\n    base: 1m\n    max: 90s\n    permanent_after: 2\n")
	journeyAlice(t, e)
	var skew atomic.Int64
	clock := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	start := func() (string, func()) {
		addr, stop := e.startDaemonWith(func(a *app) { a.now = clock })
		return "http://" + addr, stop
	}
	base, stop := start()
	wrong := authLoginRaw(t, base, "alice", "wrong-0")
	authLoginRaw(t, base, "alice", "wrong-1")
	authLoginRaw(t, base, "alice", "wrong-2")
	locked := e.showUser("alice")
	if !locked.PasswordLocked || locked.LockedUntil == nil || locked.FailedPasswords != 3 {
		t.Fatalf("after 3 wrong passwords: %+v; want locked for a while", locked)
	}
	if d := locked.LockedUntil.Sub(clock()); d <= 50*time.Second || d > time.Minute {
		t.Errorf("the first lock ends in %v, want a minute", d)
	}
	out := e.must("", "user", "show", "alice")
	if want := "locked:          password until " + locked.LockedUntil.UTC().Format(time.RFC3339) + "\n"; !strings.Contains(out, want) {
		t.Errorf("user show of the locked user lacks %q:\n%s", want, out)
	}
	sameAnswer(t, "the right password while locked", authLoginRaw(t, base, "alice", journeyPassword), wrong)

	// The lock is in the store: a restarted daemon keeps it.
	stop()
	base, _ = start() // stopped at cleanup
	sameAnswer(t, "the right password after a restart", authLoginRaw(t, base, "alice", journeyPassword), wrong)

	// The lock ends on the clock; the second one lasts longer (at most
	// oauth.lockout.max).
	skew.Add(int64(time.Minute))
	for i := range 3 {
		authLoginRaw(t, base, "alice", "wrong-again-"+string(rune('0'+i)))
	}
	second := e.showUser("alice")
	if second.LockedUntil == nil || second.LockedUntil.Sub(clock()) <= 80*time.Second || second.LockedUntil.Sub(clock()) > 90*time.Second {
		t.Errorf("the second lock: %+v, want 90s (twice a minute, capped by oauth.lockout.max)", second)
	}
	// After two timed locks the next is permanent.
	skew.Add(int64(90 * time.Second))
	for i := range 3 {
		authLoginRaw(t, base, "alice", "wrong-third-"+string(rune('0'+i)))
	}
	if u := e.showUser("alice"); !u.PasswordLocked || u.LockedUntil != nil {
		t.Errorf("the third lock: %+v, want the permanent lock", u)
	}
	if out := e.must("", "user", "show", "alice"); !strings.Contains(out, "locked:          password (permanent)\n") {
		t.Errorf("user show of the permanently locked user:\n%s", out)
	}
	skew.Add(int64(30 * 24 * time.Hour))
	sameAnswer(t, "the right password 30 days into the permanent lock", authLoginRaw(t, base, "alice", journeyPassword), wrong)

	// user unlock lifts it.
	if out := e.must("", "user", "unlock", "alice"); !strings.Contains(out, "locked:          no\n") {
		t.Errorf("user unlock:\n%s", out)
	}
	if ok := authLoginRaw(t, base, "alice", journeyPassword); ok.status != http.StatusOK {
		t.Errorf("the right password after user unlock: %d %s", ok.status, ok.body)
	}
	if u := e.showUser("alice"); u.PasswordLocked || u.LockedUntil != nil || u.FailedPasswords != 0 {
		t.Errorf("after the unlock and a login: %+v", u)
	}
	// The login forgot the locks before: the next one is a minute again,
	// and user unlock lifts a timed lock as well.
	for i := range 3 {
		authLoginRaw(t, base, "alice", "wrong-last-"+string(rune('0'+i)))
	}
	if u := e.showUser("alice"); u.LockedUntil == nil || u.LockedUntil.Sub(clock()) <= 50*time.Second || u.LockedUntil.Sub(clock()) > time.Minute {
		t.Errorf("the first lock after a login: %+v, want a minute", u)
	}
	e.must("", "user", "unlock", "alice")
	if ok := authLoginRaw(t, base, "alice", journeyPassword); ok.status != http.StatusOK {
		t.Errorf("the right password after user unlock of a timed lock: %d %s", ok.status, ok.body)
	}
}
