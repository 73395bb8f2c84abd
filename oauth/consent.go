package oauth

import (
	"context"
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/store"
)

// consent is POST /oauth2/consent: Deny ends the flow; Approve checks the
// signing PIN when the profile asks for it and issues the code.
func (s *Server) consent(c echo.Context) error {
	f, err := s.loadFlow(c)
	if err != nil {
		return err
	}
	if f.req.Stage != store.StageConsent {
		return newPageError(http.StatusBadRequest, f.req.Lang, "errorpage.answered")
	}
	ctx := c.Request().Context()
	now := s.now()
	if err := s.expired(f, now); err != nil {
		return s.finish(c, f, err, nil)
	}
	form := c.Request().PostForm
	switch form.Get(fieldDecision) {
	case decisionDeny:
		return s.finish(c, f, Errorf(CodeAccessDenied, http.StatusForbidden, "Resource owner rejected consent"), nil)
	case decisionApprove:
	default:
		return newPageError(http.StatusBadRequest, f.req.Lang, "errorpage.request")
	}
	user, err := s.loadUser(ctx, f.req.Username)
	if err != nil {
		return s.finish(c, f, err, nil)
	}
	if user == nil || user.Status != store.UserActive || user.PasswordLocked {
		return s.finish(c, f, Errorf(CodeAccessDenied, http.StatusForbidden, "The account is locked or disabled"), nil)
	}
	// The world may have changed since the page was shown.
	pr := s.request(f.client, user, &f.req.Grant)
	if err := f.profile.CheckUser(ctx, pr); err != nil {
		return s.finish(c, f, err, nil)
	}
	cons, err := f.profile.Consent(ctx, pr)
	if err != nil {
		return s.finish(c, f, err, nil)
	}
	if cons == nil {
		// Nothing needs consent any more (the data the page showed is
		// gone): the code records nothing approved.
		f.req.Consented = nil
		return s.issueCode(c, f, nil)
	}
	record, err := cons.Record()
	if err != nil {
		return s.finish(c, f, err, nil)
	}
	if !sameRecord(record, f.req.Consented) {
		// The data changed after the page was shown: the user approves
		// only what they saw, so show the new values and ask again.
		return s.reshowConsent(c, f, cons, record)
	}
	if !cons.RequirePIN {
		return s.issueCode(c, f, nil)
	}
	if err := pinUsable(user); err != nil {
		return s.finish(c, f, err, nil)
	}
	ok, locked, err := s.checkPIN(ctx, user, form.Get(fieldPIN))
	switch {
	case errors.Is(err, errBusy):
		return s.renderConsent(c, f, cons, "error.busy")
	case err != nil:
		return s.finish(c, f, err, nil)
	case locked:
		return s.finish(c, f, Errorf(CodeAccessDenied, http.StatusForbidden, "The signing PIN is locked"), nil)
	case !ok:
		return s.renderConsent(c, f, cons, "error.pin")
	}
	var reset writes
	if user.FailedPINs != 0 {
		reset = func(tx store.Tx) error {
			u, err := tx.User(user.Username)
			if err != nil {
				return err
			}
			u.FailedPINs = 0
			return tx.PutUser(u)
		}
	}
	return s.issueCode(c, f, reset)
}

// sameRecord reports whether two consent records name the same items with
// the same digests.
func sameRecord(a, b store.ConsentRecord) bool {
	if len(a) != len(b) {
		return false
	}
	for name, d := range a {
		if !b.Equal(name, d) {
			return false
		}
	}
	return true
}

// reshowConsent stores the record of the consent page as it is now and
// shows that page again with a notice that the details changed.
func (s *Server) reshowConsent(c echo.Context, f *flow, cons *Consent, record store.ConsentRecord) error {
	f.req.Consented = record
	err := s.store.Update(c.Request().Context(), func(tx store.Tx) error { return tx.PutAuthRequest(f.req) })
	if errors.Is(err, store.ErrNotFound) {
		return newPageError(http.StatusBadRequest, f.req.Lang, "errorpage.answered")
	}
	if err != nil {
		return s.finish(c, f, err, nil)
	}
	s.log.Info("consent page shown again: the details changed after it was shown",
		"client_id", f.req.ClientID, "profile", f.req.Profile, "username", f.req.Username)
	return s.renderConsent(c, f, cons, "error.changed")
}

// checkPIN checks the signing PIN of user. A wrong PIN counts a failure;
// MaxFailures in a row lock the PIN (locked is then true).
func (s *Server) checkPIN(ctx context.Context, user *store.User, pin string) (ok, locked bool, err error) {
	var herr error
	if err := s.limiter.do(ctx, func() {
		ok, herr = s.hasher.Check(user.PINHash, []byte(pin))
	}); err != nil {
		return false, false, err
	}
	if herr != nil {
		return false, false, herr
	}
	if ok {
		return true, false, nil
	}
	err = s.store.Update(ctx, func(tx store.Tx) error {
		u, err := tx.User(user.Username)
		if err != nil {
			return err
		}
		if u.PINLocked {
			locked = true
			return nil
		}
		u.FailedPINs++
		if u.FailedPINs >= s.cfg.MaxFailures {
			u.PINLocked, locked = true, true
		}
		return tx.PutUser(u)
	})
	if err != nil {
		return false, false, err
	}
	if locked {
		s.log.Warn("signing PIN locked after failed attempts", "username", user.Username, "failures", s.cfg.MaxFailures)
	} else {
		s.log.Info("wrong signing PIN", "username", user.Username)
	}
	return false, locked, nil
}
