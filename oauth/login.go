package oauth

import (
	"context"
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
	w := func(tx store.Tx) error {
		u, err := tx.User(user.Username)
		if err != nil {
			return err
		}
		if u.PasswordLocked || u.Status != store.UserActive { // changed while the hash ran
			return Errorf(CodeAccessDenied, http.StatusForbidden, "The account is locked or disabled")
		}
		if u.FailedPasswords != 0 {
			u.FailedPasswords = 0
			if err := tx.PutUser(u); err != nil {
				return err
			}
		}
		return session(tx)
	}
	f.req.Username, f.req.AuthTime = user.Username, now
	c.SetCookie(cookie) // the header goes out with whatever page or redirect follows
	return s.proceed(c, f, user, w)
}

// checkLogin checks a username, password and one-time code. An unknown,
// disabled or locked user, or one without a password, costs a dummy hash
// so the answer takes as long as for a wrong password, and all get the
// same answer (ok false). A wrong password or code of an active user counts
// a failure; MaxFailures in a row lock the account. The returned user is
// set only when ok.
func (s *Server) checkLogin(ctx context.Context, username, password, code string, now time.Time) (*store.User, bool, error) {
	user, err := s.loadUser(ctx, username)
	if err != nil {
		return nil, false, err
	}
	usable := user != nil && user.Status == store.UserActive && !user.PasswordLocked && user.PasswordHash != ""
	ok := false
	var herr error
	if err := s.limiter.do(ctx, func() {
		if !usable {
			s.hasher.Dummy([]byte(password))
			return
		}
		ok, herr = s.hasher.Check(user.PasswordHash, []byte(password))
	}); err != nil {
		return nil, false, err
	}
	if herr != nil {
		return nil, false, herr
	}
	if !usable {
		// A counted failure costs a write transaction (an fsync): so does
		// this answer, so that timing does not tell the cases apart.
		if err := s.store.Update(ctx, func(store.Tx) error { return nil }); err != nil {
			return nil, false, err
		}
		s.log.Info("login failed", "user_known", user != nil)
		return nil, false, nil
	}
	if ok && user.TOTPSecret != "" {
		ok, err = totp.ValidateCustom(code, user.TOTPSecret, now, totp.ValidateOpts{
			Period: 30, Skew: 1, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1,
		})
		if err != nil {
			ok = false // a malformed code is a wrong code
		}
	}
	if ok {
		return user, true, nil
	}
	locked := false
	err = s.store.Update(ctx, func(tx store.Tx) error {
		u, err := tx.User(username)
		if err != nil {
			return err
		}
		if u.PasswordLocked {
			return nil
		}
		u.FailedPasswords++
		if u.FailedPasswords >= s.cfg.MaxFailures {
			u.PasswordLocked, locked = true, true
		}
		return tx.PutUser(u)
	})
	if err != nil {
		return nil, false, err
	}
	if locked {
		s.log.Warn("account locked after failed logins", "username", username, "failures", s.cfg.MaxFailures)
	} else {
		s.log.Info("login failed", "user_known", true, "username", username)
	}
	return nil, false, nil
}
