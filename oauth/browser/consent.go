package browser

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/oauth"
	"github.com/signd/signd/oauth/passwords"
	"github.com/signd/signd/store"
)

// consent is POST /oauth2/consent: Deny ends the flow; Approve checks that
// the login is still the browser's, asks the profile again (consentNow),
// checks the signing PIN when the profile asks for it (approvePIN) and
// issues the code.
func (h *Handler) consent(c echo.Context) error {
	f, err := h.loadFlow(c)
	if err != nil {
		return err
	}
	if f.req.Stage != store.StageConsent {
		return oauth.NewPageError(http.StatusBadRequest, f.req.Lang, "errorpage.answered")
	}
	ctx := c.Request().Context()
	now := h.now()
	if err := h.expired(f, now); err != nil {
		return h.finish(c, f, err, nil)
	}
	form := c.Request().PostForm
	switch form.Get(fieldDecision) {
	case decisionDeny:
		return h.finish(c, f, oauth.Errorf(oauth.CodeAccessDenied, http.StatusForbidden, "Resource owner rejected consent"), nil)
	case decisionApprove:
	default:
		return oauth.NewPageError(http.StatusBadRequest, f.req.Lang, "errorpage.request")
	}
	// AuthenticationFailure: the login this consent continues must still
	// be the browser's.
	if ok, err := h.sameLogin(c, f, now); err != nil || !ok {
		if err == nil {
			h.log.WarnContext(ctx, "consent refused: the login session is gone or another user's",
				"client_id", f.req.ClientID, "profile", f.req.Profile, "username", f.req.Username)
			err = authenticationFailure()
		}
		return h.finish(c, f, err, nil)
	}
	user, cons, err := h.consentNow(ctx, f)
	if err != nil {
		return h.finish(c, f, err, nil)
	}
	if cons == nil {
		// Nothing needs consent any more (the data the page showed is
		// gone): the code records nothing approved.
		f.req.Consented = nil
		return h.issueCode(c, f, nil)
	}
	record, err := cons.Record()
	if err != nil {
		return h.finish(c, f, err, nil)
	}
	if !sameRecord(record, f.req.Consented) {
		// The data changed after the page was shown: the user approves
		// only what they saw, so show the new values and ask again.
		return h.reshowConsent(c, f, cons, record)
	}
	if !cons.RequirePIN {
		return h.issueCode(c, f, nil)
	}
	notice, err := h.approvePIN(passwords.WithOrigin(ctx, passwords.Origin{IP: c.RealIP()}), f, user, form.Get(fieldPIN))
	switch {
	case err != nil:
		return h.finish(c, f, err, nil)
	case notice != "":
		return h.renderConsent(c, f, cons, notice)
	}
	// The code is refused if the PIN is locked by the time it is issued or
	// redeemed.
	f.req.PINVerified = true
	return h.issueCode(c, f, nil)
}

// consentNow loads the request's user and asks the profile, as the world
// is now, whether they may go on and what needs their consent (nil:
// nothing any more). The world may have changed since the page was shown.
// It has no HTTP in it; its errors end the flow.
func (h *Handler) consentNow(ctx context.Context, f *flow) (*store.User, *oauth.Consent, error) {
	user, err := h.loadUser(ctx, f.req.Username)
	if err != nil {
		return nil, nil, err
	}
	if user == nil || user.Status != store.UserActive || user.PasswordLocked {
		return nil, nil, oauth.Errorf(oauth.CodeAccessDenied, http.StatusForbidden, "The account is locked or disabled")
	}
	pr := h.core.Request(f.client, user, &f.req.Grant)
	if err := f.profile.CheckUser(ctx, pr); err != nil {
		return nil, nil, err
	}
	cons, err := f.profile.Consent(ctx, pr)
	if err != nil {
		return nil, nil, err
	}
	return user, cons, nil
}

// approvePIN checks the signing PIN of an approval that needs it, then
// that the consent still stands (consentStands: the PIN check takes a
// while, and what the page showed must still be what is approved when the
// code is issued). It has no HTTP in it. notice, when set, is the message
// the consent page is shown again with (a wrong PIN, or no hashing slot
// free); an error ends the flow.
func (h *Handler) approvePIN(ctx context.Context, f *flow, user *store.User, pin string) (notice string, err error) {
	if err := h.pinUsable(user); err != nil {
		return "", err
	}
	ctx = passwords.WithOrigin(ctx, passwords.Origin{Client: f.req.ClientID, Door: passwords.DoorConsentPage})
	checked, refusal, err := h.checkPIN(ctx, user.Username, pin)
	switch {
	case errors.Is(err, passwords.ErrBusy):
		return "error.busy", nil
	case err != nil:
		return "", err
	case refusal != nil:
		return "", refusal
	case checked == nil:
		return "error.pin", nil
	}
	f.checked = checked
	return "", h.consentStands(ctx, f)
}

// consentInvalidated is the error of a consent whose data or credential
// changed between the page and the code (server_error, the OpenID
// profile's ConsentInvalidated).
func consentInvalidated() *oauth.Error {
	return oauth.Errorf(oauth.CodeServerError, http.StatusInternalServerError, "consent invalidated")
}

// authenticationFailure is the error of a consent whose login session was
// invalidated or could not be verified (server_error, the OpenID profile's
// AuthenticationFailure).
func authenticationFailure() *oauth.Error {
	return oauth.Errorf(oauth.CodeServerError, http.StatusInternalServerError, "authentication failure")
}

// consentStands asks the profile again, after the PIN was checked, whether
// the user may still sign and what the consent page would show now:
// anything the profile refuses, or a record other than the one the user
// approved, is consentInvalidated. Errors that are not the profile's
// answer (an unavailable store) are returned as they are.
func (h *Handler) consentStands(ctx context.Context, f *flow) error {
	user, err := h.loadUser(ctx, f.req.Username)
	if err != nil {
		return err
	}
	if user == nil {
		return consentInvalidated()
	}
	pr := h.core.Request(f.client, user, &f.req.Grant)
	err = f.profile.CheckUser(ctx, pr)
	var cons *oauth.Consent
	if err == nil {
		cons, err = f.profile.Consent(ctx, pr)
	}
	var record store.ConsentRecord
	if err == nil {
		record, err = cons.Record()
	}
	switch {
	case errors.As(err, new(*oauth.Error)):
	case err != nil:
		return err
	case cons != nil && sameRecord(record, f.req.Consented):
		return nil
	}
	h.log.WarnContext(ctx, "consent refused: the data or credential changed after the page was shown",
		"client_id", f.req.ClientID, "profile", f.req.Profile, "username", f.req.Username)
	return consentInvalidated()
}

// sameLogin reports whether the browser's login session cookie names a
// live session of the request's user from the same login (the flow's
// AuthTime): a session that was removed, expired, replaced by another
// login or is missing cannot vouch for the consent.
func (h *Handler) sameLogin(c echo.Context, f *flow, now time.Time) (bool, error) {
	value := h.sessionValue(c.Request())
	if value == "" {
		return false, nil
	}
	var sess *store.Session
	err := h.store.View(c.Request().Context(), func(tx oauth.Tx) (err error) {
		sess, err = tx.Session(store.Fingerprint(value))
		return err
	})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return false, nil
	case err != nil:
		return false, err
	}
	return now.Before(sess.ExpiresAt) && sess.Username == f.req.Username && sess.AuthTime.Equal(f.req.AuthTime), nil
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
func (h *Handler) reshowConsent(c echo.Context, f *flow, cons *oauth.Consent, record store.ConsentRecord) error {
	f.req.Consented = record
	err := h.store.Update(c.Request().Context(), func(tx oauth.Tx) error { return tx.PutAuthRequest(f.req) })
	if errors.Is(err, store.ErrNotFound) {
		return oauth.NewPageError(http.StatusBadRequest, f.req.Lang, "errorpage.answered")
	}
	if err != nil {
		return h.finish(c, f, err, nil)
	}
	h.log.InfoContext(c.Request().Context(), "consent page shown again: the details changed after it was shown",
		"client_id", f.req.ClientID, "profile", f.req.Profile, "username", f.req.Username)
	return h.renderConsent(c, f, cons, "error.changed")
}

// checkPIN checks the signing PIN of username (passwords.Checker.CheckPIN:
// a failure is reserved before the PIN is hashed, so no more than
// MaxFailures wrong PINs in a row are ever evaluated, however many arrive
// at once; reaching that locks the PIN. A locked PIN, or one whose
// remaining guesses are all in flight, is refused without hashing). refusal ends the flow
// (access_denied). A right PIN returns the user as the check read it
// (checked): the code is issued only while the user's secret generation
// is still checked's. Neither a refusal nor checked is a wrong PIN, or one
// replaced while it was checked (the user tries the PIN stored now).
func (h *Handler) checkPIN(ctx context.Context, username, pin string) (checked *store.User, refusal *oauth.Error, err error) {
	res, user, err := h.passwords.CheckPIN(ctx, username, pin, nil)
	switch {
	case err != nil:
		return nil, nil, err
	case res == passwords.PINValid:
		return user, nil, nil
	case res == passwords.PINInvalid, res == passwords.PINChanged:
		return nil, nil, nil
	case res == passwords.PINLocked:
		return nil, pinLocked(), nil
	case user != nil && user.Status == store.UserActive && !user.PasswordLocked:
		return nil, pinUsable(user), nil // no PIN set (any more)
	}
	return nil, oauth.Errorf(oauth.CodeAccessDenied, http.StatusForbidden, "The account is locked or disabled"), nil
}
