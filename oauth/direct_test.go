package oauth_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pquerna/otp/totp"

	"github.com/signd/signd/oauth"
	"github.com/signd/signd/oauth/authlogin"
	"github.com/signd/signd/oauth/oauthtest"
	"github.com/signd/signd/store"
	"github.com/signd/signd/store/storetest"
)

// authLogin builds the pageless login of cfg over the env's store,
// password checker and clock.
func (ev *env) authLogin(cfg authlogin.Config) (*authlogin.Login, error) {
	cfg.Store, cfg.Passwords, cfg.Logger, cfg.Now = ev.cfg.Store, ev.passwords, ev.cfg.Logger, ev.cfg.Now
	return authlogin.New(cfg)
}

func passwordLogin(t *testing.T, ev *env, client string) *authlogin.Login {
	t.Helper()
	pl, err := ev.authLogin(authlogin.Config{ClientID: client, Scope: "service", RefreshTTL: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

// token returns the stored token with value v, nil when there is none.
func (ev *env) token(v string) *store.Token {
	ev.t.Helper()
	var tok *store.Token
	err := ev.db.View(context.Background(), func(tx store.Tx) (err error) {
		tok, err = tx.Token(store.Fingerprint(v))
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		ev.t.Fatal(err)
	}
	return tok
}

// TestPasswordLoginConfig: the client and the scope are required.
func TestPasswordLoginConfig(t *testing.T) {
	ev := newEnv(t)
	for _, cfg := range []authlogin.Config{{Scope: "service"}, {ClientID: "rp"}} {
		if _, err := ev.authLogin(cfg); err == nil {
			t.Errorf("PasswordLogin(%+v) accepted", cfg)
		}
	}
}

// TestPasswordLoginTokens: a password login issues a service access token
// (and with rememberMe a refresh token); refresh rotates; the rotated
// refresh token presented again revokes the whole family.
func TestPasswordLoginTokens(t *testing.T) {
	ev := newEnv(t)
	pl := passwordLogin(t, ev, "rp")
	ctx := context.Background()

	plain, err := pl.Login(ctx, "alice", alicePassword, false)
	if err != nil {
		t.Fatal(err)
	}
	if plain.RefreshToken != "" || plain.ExpiresIn != 3600 {
		t.Errorf("login without rememberMe: %+v", plain)
	}
	at := ev.token(plain.AccessToken)
	if at == nil || at.Kind != store.TokenAccess || at.ClientID != "rp" || at.Username != "alice" ||
		len(at.Scopes) != 1 || at.Scopes[0] != "service" || len(at.CodeHash) != 0 {
		t.Fatalf("stored access token %+v", at)
	}

	first, err := pl.Login(ctx, "alice", alicePassword, true)
	if err != nil {
		t.Fatal(err)
	}
	rt := ev.token(first.RefreshToken)
	if rt == nil || rt.Kind != store.TokenRefresh || len(rt.CodeHash) != 32 || !rt.RotatedAt.IsZero() {
		t.Fatalf("stored refresh token %+v", rt)
	}
	if a := ev.token(first.AccessToken); a == nil || string(a.CodeHash) != string(rt.CodeHash) {
		t.Fatalf("the access token is not of the refresh token's family: %+v", a)
	}

	ev.clock.Advance(time.Hour)
	second, err := pl.Refresh(ctx, first.RefreshToken)
	if err != nil {
		t.Fatal(err)
	}
	if second.RefreshToken == "" || second.RefreshToken == first.RefreshToken || second.AccessToken == first.AccessToken {
		t.Fatalf("refresh did not rotate: %+v", second)
	}
	if old := ev.token(first.RefreshToken); old == nil || old.RotatedAt.IsZero() {
		t.Fatalf("the used refresh token is not marked rotated: %+v", old)
	}
	if nrt := ev.token(second.RefreshToken); nrt == nil || !nrt.ExpiresAt.Equal(rt.ExpiresAt) || !nrt.AuthTime.Equal(rt.AuthTime) {
		t.Errorf("the rotated refresh token extends the login: %+v, first %+v", nrt, rt)
	}

	// Reuse of the rotated token: refused, and the family is gone.
	if _, err := pl.Refresh(ctx, first.RefreshToken); !errors.Is(err, authlogin.ErrRefreshInvalid) {
		t.Fatalf("reuse of a rotated refresh token = %v, want ErrRefreshInvalid", err)
	}
	for name, v := range map[string]string{
		"first access": first.AccessToken, "second access": second.AccessToken,
		"second refresh": second.RefreshToken, "first refresh": first.RefreshToken,
	} {
		if ev.token(v) != nil {
			t.Errorf("%s token survived the reuse", name)
		}
	}
	if ev.token(plain.AccessToken) == nil {
		t.Error("the reuse revoked a token of another login")
	}
	if !ev.logged("refresh token used twice: its family is revoked", "alice") {
		t.Error("the reuse is not logged")
	}
	if logs := ev.logs.String(); strings.Contains(logs, first.RefreshToken) || strings.Contains(logs, alicePassword) {
		t.Error("the log holds a secret")
	}

	// Refusals.
	third, err := pl.Login(ctx, "alice", alicePassword, true)
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]string{
		"unknown": "no-such-token", "access token": third.AccessToken, "empty": "",
	} {
		if _, err := pl.Refresh(ctx, v); !errors.Is(err, authlogin.ErrRefreshInvalid) {
			t.Errorf("refresh with %s = %v, want ErrRefreshInvalid", name, err)
		}
	}
	if _, err := passwordLogin(t, ev, "rp2").Refresh(ctx, third.RefreshToken); !errors.Is(err, authlogin.ErrRefreshInvalid) {
		t.Errorf("another client's refresh token = %v, want ErrRefreshInvalid", err)
	}
	if ev.token(third.RefreshToken) == nil || !ev.token(third.RefreshToken).RotatedAt.IsZero() {
		t.Error("a refused refresh spent the token")
	}
	ev.clock.Advance(25 * time.Hour)
	if _, err := pl.Refresh(ctx, third.RefreshToken); !errors.Is(err, authlogin.ErrRefreshInvalid) {
		t.Errorf("expired refresh token = %v, want ErrRefreshInvalid", err)
	}
}

// TestPasswordLoginRefusals: wrong, unknown, disabled and TOTP users, and a
// configured client that is missing or lacks the scope.
func TestPasswordLoginRefusals(t *testing.T) {
	ev := newEnv(t)
	pl := passwordLogin(t, ev, "rp")
	ctx := context.Background()
	for _, tc := range []struct{ user, password string }{
		{"alice", "wrong password"}, {"nobody", alicePassword}, {"carol", carolPassword}, {"bob", "wrong password"},
	} {
		if _, err := pl.Login(ctx, tc.user, tc.password, true); !errors.Is(err, authlogin.ErrLoginFailed) {
			t.Errorf("Login(%s, %s) = %v, want ErrLoginFailed", tc.user, tc.password, err)
		}
	}
	// bob has TOTP: the right password is answered like a wrong one and
	// leaves the counter (one wrong password above) as it was.
	if _, err := pl.Login(ctx, "bob", bobPassword, false); !errors.Is(err, authlogin.ErrLoginFailed) {
		t.Errorf("TOTP user with the right password = %v, want ErrLoginFailed", err)
	}
	if u := ev.user("bob"); u.FailedPasswords != 1 {
		t.Errorf("bob has %d failures after the right password, want the 1 from before", u.FailedPasswords)
	}
	for _, client := range []string{"nope"} {
		if _, err := passwordLogin(t, ev, client).Login(ctx, "alice", alicePassword, false); err == nil ||
			errors.Is(err, authlogin.ErrLoginFailed) {
			t.Errorf("client %s: %v, want a configuration error", client, err)
		}
	}
	// A refresh token stops working when its user is disabled.
	tok, err := pl.Login(ctx, "dave", davePassword, true)
	if err != nil {
		t.Fatal(err)
	}
	ev.updateUser("dave", func(u *store.User) {
		u.PasswordLocked = true
	})
	if _, err := pl.Refresh(ctx, tok.RefreshToken); !errors.Is(err, authlogin.ErrRefreshInvalid) {
		t.Errorf("refresh of a locked user = %v, want ErrRefreshInvalid", err)
	}
}

// wrongLoginsAtOnce sends n wrong passwords for dave at once through the
// pageless login (each "wrong-<round>-<i>"), with remember as the refresh
// token request; every one must fail with the answer that tells nothing,
// ErrLoginFailed.
func wrongLoginsAtOnce(t *testing.T, pl *authlogin.Login, n int, round string, remember bool) {
	t.Helper()
	errs := make([]error, n)
	storetest.AtOnce(n, func(i int) {
		_, errs[i] = pl.Login(context.Background(), "dave", fmt.Sprintf("wrong-%s-%02d", round, i), remember)
	})
	for i, err := range errs {
		if !errors.Is(err, authlogin.ErrLoginFailed) {
			t.Errorf("%s, wrong password %d: %v, want ErrLoginFailed", round, i, err)
		}
	}
}

// TestPasswordLoginLockoutUnderConcurrency: wrong passwords at once
// through the pageless login are bounded by the same reservation as the
// login page: exactly MaxFailures are evaluated and the account locks, for
// the login page too.
func TestPasswordLoginLockoutUnderConcurrency(t *testing.T) {
	const n = 24
	ev, ph := lockoutEnv(t)
	pl := passwordLogin(t, ev, "rp")
	pwHash := ev.user("dave").PasswordHash
	ph.holdUntil(pwHash, 3)
	wrongLoginsAtOnce(t, pl, n, "password", true)
	if got := ph.evaluations(pwHash); got != 3 {
		t.Errorf("%d wrong passwords at once: %d evaluated, want exactly max_failures = 3", n, got)
	}
	if u := ev.user("dave"); u.FailedPasswords != 3 || !ev.timedLock(u, time.Minute) {
		t.Errorf("after the burst: %d failures, locked until %v; want 3, a minute from now", u.FailedPasswords, u.PasswordLockedUntil)
	}
	if _, err := pl.Login(context.Background(), "dave", davePassword, false); !errors.Is(err, authlogin.ErrLoginFailed) {
		t.Errorf("right password after the lock = %v, want ErrLoginFailed", err)
	}
	b := ev.browser()
	s := ev.login(b, page(t, ev.must(b.Get(ev.authorizeURL(serviceParams())))), "dave", davePassword)
	if s.Redirected() || !strings.Contains(s.Body, genericLoginError) {
		t.Errorf("the login page after the pageless lock: %d %v", s.Status, s.Location)
	}
	if got := ph.evaluations(pwHash); got != 3 {
		t.Errorf("a locked account's password was evaluated (%d evaluations)", got)
	}
}

// TestRevokeOwn: the bearer revokes its own access token, SAD or refresh
// token (with its family); another user's or client's token, or an
// unknown one, is left alone with the same answer.
func TestRevokeOwn(t *testing.T) {
	ev := newEnv(t)
	pl := passwordLogin(t, ev, "rp")
	ctx := context.Background()
	alice, err := pl.Login(ctx, "alice", alicePassword, true)
	if err != nil {
		t.Fatal(err)
	}
	dave, err := pl.Login(ctx, "dave", davePassword, true)
	if err != nil {
		t.Fatal(err)
	}
	grant := func(user, client string) *oauth.Grant { return &oauth.Grant{Username: user, ClientID: client} }

	for name, g := range map[string]*oauth.Grant{"another user": grant("alice", "rp"), "another client": grant("dave", "rp2")} {
		if err := ev.srv.RevokeOwn(ctx, g, dave.AccessToken); err != nil {
			t.Fatal(err)
		}
		if ev.token(dave.AccessToken) == nil {
			t.Fatalf("%s revoked dave's token", name)
		}
	}
	if err := ev.srv.RevokeOwn(ctx, grant("alice", "rp"), "no-such-token"); err != nil {
		t.Errorf("unknown token: %v", err)
	}
	if err := ev.srv.RevokeOwn(ctx, nil, alice.AccessToken); err == nil {
		t.Error("revocation without a bearer accepted")
	}
	if err := ev.srv.RevokeOwn(ctx, grant("dave", "rp"), dave.AccessToken); err != nil {
		t.Fatal(err)
	}
	if ev.token(dave.AccessToken) != nil || ev.token(dave.RefreshToken) == nil {
		t.Error("revoking the access token: want it gone and the refresh token kept")
	}
	if err := ev.srv.RevokeOwn(ctx, grant("alice", "rp"), alice.RefreshToken); err != nil {
		t.Fatal(err)
	}
	if ev.token(alice.RefreshToken) != nil || ev.token(alice.AccessToken) != nil {
		t.Error("revoking the refresh token: want it and its access token gone (RFC 7009 §2.1)")
	}
}

// TestParallelRefreshReuse: one refresh token presented by many at once:
// exactly one exchange succeeds; the others are reuses and revoke the
// family, the winner's new tokens included.
func TestParallelRefreshReuse(t *testing.T) {
	const n = 8
	ev := newEnv(t)
	pl := passwordLogin(t, ev, "rp")
	first, err := pl.Login(context.Background(), "alice", alicePassword, true)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]*authlogin.Tokens, n)
	errs := make([]error, n)
	storetest.AtOnce(n, func(i int) {
		out[i], errs[i] = pl.Refresh(context.Background(), first.RefreshToken)
	})
	wins := 0
	for i := range n {
		switch {
		case errs[i] == nil:
			wins++
			if ev.token(out[i].AccessToken) != nil || ev.token(out[i].RefreshToken) != nil {
				t.Error("the winner's tokens survived the reuse")
			}
		case !errors.Is(errs[i], authlogin.ErrRefreshInvalid):
			t.Errorf("refresh %d: %v", i, errs[i])
		}
	}
	if wins != 1 {
		t.Errorf("%d of %d parallel refreshes with one token succeeded, want exactly 1", wins, n)
	}
}

// TestTOTPCodeAcceptedOnce: a one-time code opens one login; the same code
// again (sequentially, or several at once) is a wrong code.
func TestTOTPCodeAcceptedOnce(t *testing.T) {
	ev := newEnv(t)
	code, err := totp.GenerateCode(bobTOTP, ev.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	open := func() (*oauthtest.Browser, *oauthtest.Step) {
		b := ev.browser()
		return b, page(t, ev.must(b.Get(ev.authorizeURL(serviceParams()))))
	}
	fields := map[string]string{"username": "bob", "password": bobPassword, "otp": code}
	loggedIn := func(s *oauthtest.Step) bool { return s.Form != nil && !s.Form.Has("password") }

	const n = 4 // below max_failures: the replays must not lock bob
	flows := openForms(n, open)
	answers := burst(n, func(i int) (*oauthtest.Step, error) { return flows[i].submit(fields) })
	wins := 0
	for i, a := range answers {
		if a.err != nil {
			t.Fatal(a.err)
		}
		if loggedIn(a.s) {
			wins++
		} else if !strings.Contains(a.s.Body, genericLoginError) {
			t.Errorf("replay %d: want the generic login error, got %d %.300s", i, a.s.Status, oauthtest.Text(a.s.Body))
		}
	}
	if wins != 1 {
		t.Errorf("%d of %d logins with one code at once succeeded, want exactly 1", wins, n)
	}
	u := ev.user("bob")
	if u.FailedPasswords != n-1 || u.PasswordLocked {
		t.Errorf("after the replays: %d failures, locked %v; want %d, false", u.FailedPasswords, u.PasswordLocked, n-1)
	}
	// Later, within the skew window: still refused.
	ev.clock.Advance(20 * time.Second)
	b, s := open()
	if s = ev.must(b.Submit(s.Form, fields, "approve")); loggedIn(s) {
		t.Error("the used code was accepted again 20 s later")
	}
	// The next step's code is accepted.
	ev.clock.Advance(30 * time.Second)
	next, _ := totp.GenerateCode(bobTOTP, ev.clock.Now())
	b, s = open()
	if s = ev.must(b.Submit(s.Form, map[string]string{"username": "bob", "password": bobPassword, "otp": next}, "approve")); !loggedIn(s) {
		t.Errorf("the next code was refused: %.300s", oauthtest.Text(s.Body))
	}
}
