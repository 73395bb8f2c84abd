package passwords

import (
	"context"
	"crypto/subtle"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"

	"github.com/signd/signd/store"
)

// Login checks a username, password and one-time code. A failure is
// reserved before the password is hashed (see reserve), so no more than
// MaxFailures wrong passwords or codes in a row are ever evaluated, however
// many arrive at once; reaching that locks the account (for a while, see
// Checker.lock). An unknown, disabled or locked user, one without a password, or one whose remaining
// guesses are all in flight, costs the same (a write transaction, a dummy
// hash, a write transaction) so that timing does not tell the cases apart,
// and all get the same answer (ok false). The returned user is set only
// when ok; it is the user as the check read it, and the caller's write
// transaction that acts on the login (a session, tokens) must refuse when
// its SecretGeneration is no longer the stored one (oauth.RecheckLogin).
// A password replaced while it was hashed is not accepted and not counted.
// A TOTP code is accepted once per user (settleStep): a replayed code is
// a wrong code.
func (c *Checker) Login(ctx context.Context, username, password, code string, now time.Time) (*store.User, bool, error) {
	return c.checkCredentials(ctx, username, password, code, now, false)
}

// LoginWithoutCode is Login for a login that cannot carry a one-time code
// (CSC auth/login); see checkCredentials.
func (c *Checker) LoginWithoutCode(ctx context.Context, username, password string, now time.Time) (*store.User, bool, error) {
	return c.checkCredentials(ctx, username, password, "", now, true)
}

// answerUnevaluated answers a login whose password was not evaluated
// (unknown, disabled or locked account) as a wrong one is answered: the
// same argon2id work, a write transaction with its audit entry.
func (c *Checker) answerUnevaluated(ctx context.Context, res reservation, user *store.User, lockedNow bool, username, password string, pageless bool) error {
	if err := c.limiter.do(ctx, func() { c.hasher.Dummy([]byte(password)) }); err != nil {
		return err
	}
	// A settled guess costs a write transaction (an fsync) and an
	// audit entry: so does this answer.
	outcome, reason := unevaluated(res, user)
	entry := c.loginEntry(ctx, user, pageless, outcome, reason)
	if err := c.store.Update(ctx, func(tx Tx) error { return tx.AppendAudit(entry) }); err != nil {
		return err
	}
	c.observeLogin(user, pageless, refusedResult(res, user))
	switch {
	case lockedNow:
		c.observeLockout(secretPassword)
		c.log.WarnContext(ctx, "account locked after failed logins", "username", username, "failures", c.cfg.MaxFailures)
	case res == refusedLocked:
		c.log.WarnContext(ctx, "account locked: login refused without checking the password", "username", username)
	default:
		c.log.InfoContext(ctx, "login failed", "user_known", user != nil)
	}
	return nil
}

// loginAudit is the guard's audit of a settled password guess: the login
// entry, and the lock entry when the guess locked the account.
func (c *Checker) loginAudit(ctx context.Context, pageless bool) func(tx Tx, u *store.User, s settlement) error {
	return func(tx Tx, u *store.User, s settlement) error {
		outcome := store.AuditFailed
		switch {
		case s.accepted:
			outcome = store.AuditOK
		case s.why == whyLockedMeanwhile, s.why == whySecretChanged:
			outcome = store.AuditRefused
		}
		if err := tx.AppendAudit(c.loginEntry(ctx, u, pageless, outcome, s.why)); err != nil {
			return err
		}
		if s.lockedNow {
			return tx.AppendAudit(c.lockEntry(ctx, secretPassword, u))
		}
		return nil
	}
}

// checkCredentials is Login; pageless is a login that cannot carry a
// one-time code (CSC auth/login). A user with TOTP cannot log in that way,
// and the refusal is a success of nothing: a right password returns its
// reservation (the counter stays as it was, neither reset nor raised) and
// is answered like a wrong one, after the same argon2id work and a write
// transaction, so that neither the answer nor its timing tells that the
// password was right. A wrong password counts as on the login page.
func (c *Checker) checkCredentials(ctx context.Context, username, password, code string, now time.Time, pageless bool) (*store.User, bool, error) {
	g, res, user, lockedNow, err := c.reserve(ctx, secretPassword, username)
	if err != nil {
		return nil, false, err
	}
	defer g.release()
	if res != reserved {
		return nil, false, c.answerUnevaluated(ctx, res, user, lockedNow, username, password, pageless)
	}
	g.audit = c.loginAudit(ctx, pageless)
	ok, err := g.evaluate(ctx, []byte(password))
	if err != nil {
		return nil, false, err
	}
	if ok && user.TOTPSecret != "" && pageless {
		if err := g.cancelAudited(ctx, "the account requires a one-time code"); err != nil {
			return nil, false, err
		}
		c.log.InfoContext(ctx, "password login refused: the account requires a one-time code", "username", username)
		c.observeLogin(user, pageless, LoginFailed)
		return nil, false, nil
	}
	var step int64
	why := "wrong password"
	if ok && user.TOTPSecret != "" {
		step, ok = totpStep(code, user.TOTPSecret, now)
		why = "wrong one-time code"
	}
	ok, locked, lockedNow, err := g.settleStep(ctx, ok, step, why)
	if err != nil {
		return nil, false, err
	}
	switch {
	case ok:
		c.observeLogin(user, pageless, LoginOK)
		return user, true, nil
	case lockedNow:
		c.observeLogin(user, pageless, LoginLocked)
		c.observeLockout(secretPassword)
		c.log.WarnContext(ctx, "account locked after failed logins", "username", username, "failures", c.cfg.MaxFailures)
	case g.changed:
		c.observeLogin(user, pageless, LoginFailed)
		c.log.InfoContext(ctx, "login refused: the password was changed while it was checked", "username", username)
	case locked:
		c.observeLogin(user, pageless, LoginLocked)
		c.log.InfoContext(ctx, "login failed; the account is locked", "username", username)
	default:
		c.observeLogin(user, pageless, LoginFailed)
		c.log.InfoContext(ctx, "login failed", "user_known", true, "username", username)
	}
	return nil, false, nil
}

// unevaluated is the audit outcome and reason of a login whose password
// was not evaluated (reserve's refusal res; user nil when unknown).
func unevaluated(res reservation, user *store.User) (outcome, reason string) {
	switch {
	case user == nil:
		return store.AuditFailed, "unknown user"
	case res == refusedLocked, user.PasswordLocked:
		return store.AuditRefused, "account locked"
	case user.Status != store.UserActive:
		return store.AuditRefused, "account disabled"
	}
	return store.AuditRefused, "no password set"
}

// TOTP parameters (RFC 6238 with the defaults authenticator apps use).
const (
	totpPeriod = 30 // seconds
	totpSkew   = 1  // steps accepted either side of now
)

var totpOpts = totp.ValidateOpts{Period: totpPeriod, Skew: totpSkew, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1}

// TOTPStep is totpStep for the pages that enroll a second factor (the
// enrollment page confirms the user's authenticator app with one code).
func TOTPStep(code, secret string, now time.Time) (int64, bool) { return totpStep(code, secret, now) }

// totpStep reports whether code is the one-time code of secret for a time
// step within the skew of now, and which step (Unix time / period) it is:
// settleStep accepts each step once per user. A malformed code is a wrong
// code.
func totpStep(code, secret string, now time.Time) (int64, bool) {
	if len(code) != 6 {
		return 0, false
	}
	for d := -totpSkew; d <= totpSkew; d++ {
		at := now.Add(time.Duration(d*totpPeriod) * time.Second)
		want, err := totp.GenerateCodeCustom(secret, at, totpOpts)
		if err != nil {
			return 0, false
		}
		if subtle.ConstantTimeCompare([]byte(want), []byte(code)) == 1 {
			return at.Unix() / totpPeriod, true
		}
	}
	return 0, false
}
