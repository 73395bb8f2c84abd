package oauth

import (
	"context"
	"crypto/subtle"
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"

	"github.com/signd/signd/store"
)

// Decisions posted by the buttons of the login and consent pages.
const (
	decisionApprove = "approve"
	decisionDeny    = "deny"
)

// login is POST /oauth2/login: check the password (and TOTP), count
// failures, open a login session and continue to the consent page.
func (s *Server) login(c echo.Context) error {
	f, err := s.loadFlow(c)
	if err != nil {
		return err
	}
	if f.req.Stage != store.StageLogin {
		return newPageError(http.StatusBadRequest, f.req.Lang, "errorpage.answered")
	}
	now := s.now()
	if err := s.expired(f, now); err != nil {
		return s.finish(c, f, err, nil)
	}
	form := c.Request().PostForm
	if form.Get(fieldDecision) == decisionDeny {
		return s.finish(c, f, Errorf(CodeAccessDenied, http.StatusForbidden, "Resource owner cancelled the login"), nil)
	}
	username, password, code := form.Get(fieldUsername), form.Get(fieldPassword), form.Get(fieldOTP)
	user, ok, err := s.checkLogin(c.Request().Context(), username, password, code, now)
	if errors.Is(err, errBusy) {
		return s.renderLogin(c, f, "error.busy", username)
	}
	if err != nil {
		return s.finish(c, f, err, nil)
	}
	if !ok {
		return s.renderLogin(c, f, "error.credentials", username)
	}
	s.log.Info("login succeeded", "client_id", f.req.ClientID, "username", user.Username)
	session, cookie, err := s.newSession(c, user.Username, now)
	if err != nil {
		return s.finish(c, f, err, nil)
	}
	w := func(tx Tx) error {
		// The account may have been locked or disabled since the password
		// was checked.
		if err := recheckAccount(tx, user.Username); err != nil {
			return err
		}
		return session(tx)
	}
	f.req.Username, f.req.AuthTime = user.Username, now
	f.cookie = cookie // set once w committed, with whatever page or redirect follows
	return s.proceed(c, f, user, w)
}

// checkLogin checks a username, password and one-time code. A failure is
// reserved before the password is hashed (see reserve), so no more than
// MaxFailures wrong passwords or codes in a row are ever evaluated, however
// many arrive at once; reaching that locks the account (for a while, see
// Server.lock). An unknown, disabled or locked user, one without a password, or one whose remaining
// guesses are all in flight, costs the same (a write transaction, a dummy
// hash, a write transaction) so that timing does not tell the cases apart,
// and all get the same answer (ok false). The returned user is set only
// when ok. A TOTP code is accepted once per user (settleStep): a replayed
// code is a wrong code.
func (s *Server) checkLogin(ctx context.Context, username, password, code string, now time.Time) (*store.User, bool, error) {
	return s.checkCredentials(ctx, username, password, code, now, false)
}

// checkCredentials is checkLogin; pageless is a login that cannot carry a
// one-time code (CSC auth/login). A user with TOTP cannot log in that way,
// and the refusal is a success of nothing: a right password returns its
// reservation (the counter stays as it was, neither reset nor raised) and
// is answered like a wrong one, after the same argon2id work and a write
// transaction, so that neither the answer nor its timing tells that the
// password was right. A wrong password counts as on the login page.
func (s *Server) checkCredentials(ctx context.Context, username, password, code string, now time.Time, pageless bool) (*store.User, bool, error) {
	g, res, user, lockedNow, err := s.reserve(ctx, secretPassword, username)
	if err != nil {
		return nil, false, err
	}
	defer g.release()
	if res != reserved {
		if err := s.limiter.do(ctx, func() { s.hasher.Dummy([]byte(password)) }); err != nil {
			return nil, false, err
		}
		// A settled guess costs a write transaction (an fsync): so does
		// this answer.
		if err := s.store.Update(ctx, func(Tx) error { return nil }); err != nil {
			return nil, false, err
		}
		switch {
		case lockedNow:
			s.log.Warn("account locked after failed logins", "username", username, "failures", s.cfg.MaxFailures)
		case res == refusedLocked:
			s.log.Warn("account locked: login refused without checking the password", "username", username)
		default:
			s.log.Info("login failed", "user_known", user != nil)
		}
		return nil, false, nil
	}
	ok, err := g.evaluate(ctx, []byte(password))
	if err != nil {
		return nil, false, err
	}
	if ok && user.TOTPSecret != "" && pageless {
		if err := g.cancel(ctx); err != nil {
			return nil, false, err
		}
		s.log.Info("password login refused: the account requires a one-time code", "username", username)
		return nil, false, nil
	}
	var step int64
	if ok && user.TOTPSecret != "" {
		step, ok = totpStep(code, user.TOTPSecret, now)
	}
	ok, locked, lockedNow, err := g.settleStep(ctx, ok, step)
	if err != nil {
		return nil, false, err
	}
	switch {
	case ok:
		return user, true, nil
	case lockedNow:
		s.log.Warn("account locked after failed logins", "username", username, "failures", s.cfg.MaxFailures)
	case locked:
		s.log.Info("login failed; the account is locked", "username", username)
	default:
		s.log.Info("login failed", "user_known", true, "username", username)
	}
	return nil, false, nil
}

// TOTP parameters (RFC 6238 with the defaults authenticator apps use).
const (
	totpPeriod = 30 // seconds
	totpSkew   = 1  // steps accepted either side of now
)

var totpOpts = totp.ValidateOpts{Period: totpPeriod, Skew: totpSkew, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1}

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
