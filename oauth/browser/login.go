package browser

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/oauth"
	"github.com/signd/signd/oauth/passwords"
	"github.com/signd/signd/store"
)

// Decisions posted by the buttons of the login and consent pages.
const (
	decisionApprove = "approve"
	decisionDeny    = "deny"
)

// login is POST /oauth2/login: check the password (and TOTP), count
// failures, open a login session and continue to the consent page.
func (h *Handler) login(c echo.Context) error {
	f, err := h.loadFlow(c)
	if err != nil {
		return err
	}
	if f.req.Stage != store.StageLogin {
		return oauth.NewPageError(http.StatusBadRequest, f.req.Lang, "errorpage.answered")
	}
	now := h.now()
	if err := h.expired(f, now); err != nil {
		return h.finish(c, f, err, nil)
	}
	form := c.Request().PostForm
	if form.Get(fieldDecision) == decisionDeny {
		return h.finish(c, f, oauth.Errorf(oauth.CodeAccessDenied, http.StatusForbidden, "Resource owner cancelled the login"), nil)
	}
	username, password, code := form.Get(fieldUsername), form.Get(fieldPassword), form.Get(fieldOTP)
	ctx := passwords.WithOrigin(c.Request().Context(),
		passwords.Origin{Client: f.req.ClientID, IP: c.RealIP(), Door: passwords.DoorLoginPage})
	user, ok, err := h.passwords.Login(ctx, username, password, code, now)
	if errors.Is(err, passwords.ErrBusy) {
		return h.renderLogin(c, f, "error.busy", username)
	}
	if err != nil {
		return h.finish(c, f, err, nil)
	}
	if !ok {
		return h.renderLogin(c, f, "error.credentials", username)
	}
	h.log.InfoContext(c.Request().Context(), "login succeeded", "client_id", f.req.ClientID, "username", user.Username)
	session, cookie, err := h.newSession(c, user.Username, now)
	if err != nil {
		return h.finish(c, f, err, nil)
	}
	w := func(tx oauth.Tx) error {
		// The account may have been locked or disabled, or the password
		// replaced, since the password was checked.
		if err := oauth.RecheckLogin(tx, user); err != nil {
			return err
		}
		return session(tx)
	}
	f.req.Username, f.req.AuthTime = user.Username, now
	f.checked = user
	f.cookie = cookie // set once w committed, with whatever page or redirect follows
	return h.proceed(c, f, user, w)
}
