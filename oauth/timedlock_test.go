package oauth_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pquerna/otp/totp"

	"github.com/signd/signd/oauth/authlogin"
	"github.com/signd/signd/oauth/passwords"
	"github.com/signd/signd/store"
)

// timedLock reports whether u's password is locked for d from now on the
// test clock, and not permanently.
func (ev *env) timedLock(u *store.User, d time.Duration) bool {
	return !u.PasswordLocked && u.PasswordLockedUntil.Equal(ev.clock.Now().Add(d))
}

// wrongCode is a six-digit code that is no one-time code of bob's within
// the skew window of the test clock.
func (ev *env) wrongCode() string {
	ev.t.Helper()
	valid := map[string]bool{}
	for _, d := range []time.Duration{-30 * time.Second, 0, 30 * time.Second} {
		c, err := totp.GenerateCode(bobTOTP, ev.clock.Now().Add(d))
		if err != nil {
			ev.t.Fatal(err)
		}
		valid[c] = true
	}
	for i := 0; ; i++ {
		if c := fmt.Sprintf("%06d", 123456+i); !valid[c] {
			return c
		}
	}
}

// TestTOTPGuessesThroughPasswordLogin: someone who knows bob's password
// but not his one-time codes alternates wrong codes on the login page with
// the pageless login (CSC auth/login), which has no field for the code.
// The pageless answer is a wrong password's, its argon2id work is done
// all the same, and it resets nothing: the account locks after
// max_failures wrong codes, whatever comes between.
func TestTOTPGuessesThroughPasswordLogin(t *testing.T) {
	ev, ph := lockoutEnv(t) // max_failures 3
	pl := passwordLogin(t, ev, "rp")
	ctx := context.Background()
	pwHash := ev.user("bob").PasswordHash
	b := ev.browser()
	s := page(t, ev.must(b.Get(ev.authorizeURL(serviceParams()))))

	for i := range 3 {
		s = ev.must(b.Submit(s.Form, map[string]string{"username": "bob", "password": bobPassword, "otp": ev.wrongCode()}, "approve"))
		if s.Redirected() || !strings.Contains(s.Body, genericLoginError) {
			t.Fatalf("wrong code %d: want the generic login error, got %d %v", i+1, s.Status, s.Location)
		}
		if i == 2 {
			break
		}
		evals := ph.evaluations(pwHash)
		_, err := pl.Login(ctx, "bob", bobPassword, false)
		if !errors.Is(err, authlogin.ErrLoginFailed) {
			t.Errorf("pageless login of a TOTP user with the right password = %v, want ErrLoginFailed (a wrong password's answer)", err)
		}
		if got := ph.evaluations(pwHash); got != evals+1 {
			t.Errorf("the pageless login evaluated the password %d times, want 1 (as for a wrong one)", got-evals)
		}
		if u := ev.user("bob"); u.FailedPasswords != i+1 {
			t.Errorf("after %d wrong codes and a pageless login: %d failures counted, want %d", i+1, u.FailedPasswords, i+1)
		}
	}
	u := ev.user("bob")
	if u.FailedPasswords != 3 || u.PasswordLockedUntil.IsZero() && !u.PasswordLocked {
		t.Errorf("after 3 wrong codes between pageless logins: %d failures, locked until %v; want the account locked",
			u.FailedPasswords, u.PasswordLockedUntil)
	}
	// Locked: the password with the right code gets the same answer, and
	// the pageless login neither evaluates nor unlocks anything.
	evals := ph.evaluations(pwHash)
	code, err := totp.GenerateCode(bobTOTP, ev.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pl.Login(ctx, "bob", bobPassword, false); !errors.Is(err, authlogin.ErrLoginFailed) {
		t.Errorf("pageless login of the locked account = %v", err)
	}
	s = ev.must(b.Submit(s.Form, map[string]string{"username": "bob", "password": bobPassword, "otp": code}, "approve"))
	if s.Redirected() || !strings.Contains(s.Body, genericLoginError) || len(s.Header.Values("Set-Cookie")) != 0 {
		t.Errorf("the right password and code after the lock: %d %v %v", s.Status, s.Location, s.Header.Values("Set-Cookie"))
	}
	if got := ph.evaluations(pwHash); got != evals {
		t.Errorf("the locked account's password was evaluated %d times", got-evals)
	}
	if strings.Contains(ev.logs.String(), bobPassword) {
		t.Error("the log holds the password")
	}
}

// TestTimedLockout: max_failures wrong passwords lock the account for
// oauth.lockout.base, each further lock without a successful login
// between twice as long, at most oauth.lockout.max (NIST SP 800-63B
// §5.2.2). While locked the right password is answered like a wrong one,
// unevaluated; the lock ends on the clock, to the nanosecond; a successful
// login forgets the locks before it.
func TestTimedLockout(t *testing.T) {
	ev, ph := lockoutEnv(t, func(c *passwords.Config) { c.Lockout = passwords.Lockout{Base: time.Minute, Max: 4 * time.Minute} })
	pl := passwordLogin(t, ev, "rp")
	ctx := context.Background()
	pwHash := ev.user("dave").PasswordHash
	wrong := func(round int) {
		t.Helper()
		for i := range 3 {
			if _, err := pl.Login(ctx, "dave", fmt.Sprintf("wrong-%d-%d", round, i), false); !errors.Is(err, authlogin.ErrLoginFailed) {
				t.Fatalf("round %d, wrong password %d: %v", round, i, err)
			}
		}
	}
	for round, d := range []time.Duration{time.Minute, 2 * time.Minute, 4 * time.Minute, 4 * time.Minute} {
		wrong(round)
		u := ev.user("dave")
		if !ev.timedLock(u, d) || u.PasswordLockouts != round+1 || u.FailedPasswords != 3 {
			t.Fatalf("round %d: locked until %v (permanently %v), %d lockouts, %d failures; want %v from now, %d lockouts, 3 failures",
				round, u.PasswordLockedUntil, u.PasswordLocked, u.PasswordLockouts, u.FailedPasswords, d, round+1)
		}
		evals, dummies := ph.evaluations(pwHash), ph.dummyCount()
		ev.clock.Advance(d - time.Nanosecond)
		if _, err := pl.Login(ctx, "dave", davePassword, false); !errors.Is(err, authlogin.ErrLoginFailed) {
			t.Errorf("round %d: the right password a nanosecond before the lock ends = %v, want ErrLoginFailed", round, err)
		}
		b := ev.browser()
		s := ev.login(b, page(t, ev.must(b.Get(ev.authorizeURL(serviceParams())))), "dave", davePassword)
		if s.Redirected() || !strings.Contains(s.Body, genericLoginError) || len(s.Header.Values("Set-Cookie")) != 0 {
			t.Errorf("round %d: the login page let the locked account in: %d %v", round, s.Status, s.Location)
		}
		if ph.evaluations(pwHash) != evals || ph.dummyCount() != dummies+2 {
			t.Errorf("round %d: %d evaluations and %d dummy hashes while locked, want 0 and 2",
				round, ph.evaluations(pwHash)-evals, ph.dummyCount()-dummies)
		}
		ev.clock.Advance(time.Nanosecond)
	}
	// The lock is over: the right password logs in, the counter and the
	// locks before are forgotten, and the next lock is short again.
	if _, err := pl.Login(ctx, "dave", davePassword, false); err != nil {
		t.Fatalf("the right password once the lock ended: %v", err)
	}
	if u := ev.user("dave"); u.FailedPasswords != 0 || u.PasswordLockouts != 0 || !u.PasswordLockedUntil.IsZero() || u.PasswordLocked {
		t.Errorf("after the login: %d failures, %d lockouts, until %v, permanent %v; want all cleared",
			u.FailedPasswords, u.PasswordLockouts, u.PasswordLockedUntil, u.PasswordLocked)
	}
	wrong(4)
	if u := ev.user("dave"); !ev.timedLock(u, time.Minute) || u.PasswordLockouts != 1 {
		t.Errorf("the first lock after a login: until %v, %d lockouts; want a minute, 1", u.PasswordLockedUntil, u.PasswordLockouts)
	}
	logs := ev.logs.String()
	if strings.Contains(logs, davePassword) || strings.Contains(logs, "wrong-0-") {
		t.Error("the log holds a password")
	}
}

// TestPermanentLockAfter: with oauth.lockout.permanent_after 2, two timed
// locks in a row are followed by a permanent one, which no clock ends and
// the right password does not lift; only an admin does.
func TestPermanentLockAfter(t *testing.T) {
	ev, ph := lockoutEnv(t, func(c *passwords.Config) {
		c.Lockout = passwords.Lockout{Base: time.Minute, Max: time.Hour, PermanentAfter: 2}
	})
	pl := passwordLogin(t, ev, "rp")
	ctx := context.Background()
	for round := range 3 {
		for i := range 3 {
			pl.Login(ctx, "dave", fmt.Sprintf("wrong-%d-%d", round, i), false)
		}
		u := ev.user("dave")
		switch {
		case round < 2 && !ev.timedLock(u, time.Minute<<round):
			t.Fatalf("lock %d: until %v, permanent %v; want a timed lock", round+1, u.PasswordLockedUntil, u.PasswordLocked)
		case round == 2 && (!u.PasswordLocked || !u.PasswordLockedUntil.IsZero()):
			t.Fatalf("lock 3: until %v, permanent %v; want the permanent lock", u.PasswordLockedUntil, u.PasswordLocked)
		}
		ev.clock.Advance(time.Minute << round)
	}
	evals := ph.evaluations(ev.user("dave").PasswordHash)
	ev.clock.Advance(30 * 24 * time.Hour)
	if _, err := pl.Login(ctx, "dave", davePassword, false); !errors.Is(err, authlogin.ErrLoginFailed) {
		t.Errorf("the right password 30 days into the permanent lock = %v, want ErrLoginFailed", err)
	}
	if got := ph.evaluations(ev.user("dave").PasswordHash); got != evals {
		t.Errorf("the permanently locked password was evaluated")
	}
	ev.updateUser("dave", func(u *store.User) { u.PasswordLocked, u.FailedPasswords, u.PasswordLockouts = false, 0, 0 }) // signd user unlock
	if _, err := pl.Login(ctx, "dave", davePassword, false); err != nil {
		t.Errorf("the right password after the unlock: %v", err)
	}
}

// TestLockExpiryUnderConcurrency fires wrong passwords at once on both
// sides of the end of a timed lock: a nanosecond before it none is
// evaluated; at its end exactly max_failures are (the rest cost a dummy
// hash each), and they lock the account again, for twice as long.
func TestLockExpiryUnderConcurrency(t *testing.T) {
	const n = 24
	ev, ph := lockoutEnv(t)
	pl := passwordLogin(t, ev, "rp")
	pwHash := ev.user("dave").PasswordHash
	for i := range 3 {
		pl.Login(context.Background(), "dave", fmt.Sprintf("wrong-%d", i), false)
	}
	if u := ev.user("dave"); !ev.timedLock(u, time.Minute) {
		t.Fatalf("not locked for a minute: %+v", u)
	}

	ev.clock.Advance(time.Minute - time.Nanosecond)
	evals, dummies := ph.evaluations(pwHash), ph.dummyCount()
	wrongLoginsAtOnce(t, pl, n, "before", false)
	if got := ph.evaluations(pwHash) - evals; got != 0 {
		t.Errorf("%d wrong passwords at once a nanosecond before the lock ends: %d evaluated, want 0", n, got)
	}
	if got := ph.dummyCount() - dummies; got != n {
		t.Errorf("%d dummy hashes, want %d", got, n)
	}

	ev.clock.Advance(time.Nanosecond)
	evals, dummies = ph.evaluations(pwHash), ph.dummyCount()
	// The three evaluations wait for each other, so that all are in
	// flight together while the rest arrive.
	ph.holdUntil(pwHash, 3)
	wrongLoginsAtOnce(t, pl, n, "at the end", false)
	if got := ph.evaluations(pwHash) - evals; got != 3 {
		t.Errorf("%d wrong passwords at once when the lock ends: %d evaluated, want exactly max_failures = 3", n, got)
	}
	if got := ph.dummyCount() - dummies; got != n-3 {
		t.Errorf("%d dummy hashes, want %d", got, n-3)
	}
	if u := ev.user("dave"); !ev.timedLock(u, 2*time.Minute) || u.PasswordLockouts != 2 || u.FailedPasswords != 3 {
		t.Errorf("after the burst: until %v, %d lockouts, %d failures; want 2 minutes from now, 2, 3",
			u.PasswordLockedUntil, u.PasswordLockouts, u.FailedPasswords)
	}
}

// TestPINLockOutlastsTheClock: the signing PIN keeps the smart card's
// rule: locked after max_failures wrong PINs until an admin unlocks it,
// however much time passes.
func TestPINLockOutlastsTheClock(t *testing.T) {
	ev, _ := lockoutEnv(t)
	b, s := ev.consentPage()
	for i := range 2 {
		s = page(t, ev.approve(b, s, fmt.Sprintf("wrong-pin-%d", i)))
	}
	deniedWith(t, "third wrong PIN", ev.approve(b, s, "wrong-pin-2"), pinLockedDesc)
	ev.clock.Advance(12 * time.Hour) // longer than any password lock; the certificate is still valid
	b = ev.browser()
	s = ev.login(b, page(t, ev.must(b.Get(ev.authorizeURL(credentialParams(credAlice))))), "alice", alicePassword)
	deniedWith(t, "a credential flow 12 hours later", s, pinLockedDesc)
	if u := ev.user("alice"); !u.PINLocked || !u.PasswordLockedUntil.IsZero() || u.PasswordLockouts != 0 {
		t.Errorf("alice: PIN locked %v, password locked until %v, %d lockouts", u.PINLocked, u.PasswordLockedUntil, u.PasswordLockouts)
	}
}

// writeCounter counts the store writes (PutUser) a Checker makes: on etcd
// every transaction that writes is a raft commit, one that only reads is
// not, so two answers that must take the same time must write as often.
type writeCounter struct {
	passwords.Store
	puts atomic.Int64
}

type putCountingTx struct {
	passwords.Tx
	puts *atomic.Int64
}

func (c putCountingTx) PutUser(u *store.User) error {
	c.puts.Add(1)
	return c.Tx.PutUser(u)
}

func (w *writeCounter) Update(ctx context.Context, fn func(passwords.Tx) error) error {
	return w.Store.Update(ctx, func(tx passwords.Tx) error { return fn(putCountingTx{tx, &w.puts}) })
}

// TestPagelessRefusalWritesLikeAWrongPassword: a TOTP user's right password
// at auth/login writes the store as often as a wrong password does, so that
// on a store whose reads cost no commit (etcd) its timing does not tell the
// password was right.
func TestPagelessRefusalWritesLikeAWrongPassword(t *testing.T) {
	var wc *writeCounter
	ev, _ := lockoutEnv(t, func(c *passwords.Config) {
		wc = &writeCounter{Store: c.Store}
		c.Store = wc
	})
	pl := passwordLogin(t, ev, "rp")
	ctx := context.Background()
	writes := func(password string) int64 {
		t.Helper()
		before := wc.puts.Load()
		if _, err := pl.Login(ctx, "bob", password, false); !errors.Is(err, authlogin.ErrLoginFailed) {
			t.Fatalf("pageless login of bob: %v, want ErrLoginFailed", err)
		}
		return wc.puts.Load() - before
	}
	wrong, right := writes("not bob's password"), writes(bobPassword)
	if wrong != right {
		t.Errorf("a wrong password writes the store %d times, bob's right password %d times: the timing on etcd tells them apart", wrong, right)
	}
}
