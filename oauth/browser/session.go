package browser

import (
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/oauth"
	"github.com/signd/signd/oauth/forms"
	"github.com/signd/signd/oauth/passwords"
	"github.com/signd/signd/store"
)

// The login session (SSO): a login on the login page or the account page
// opens one, a random cookie whose fingerprint names a store.Session; the
// authorization flows skip the login page while it lasts, and the account
// page (oauth/account, through the exported methods below, its Sessions)
// shows the credentials of its user.
//
// The cookie is the key to an account, so a cookie the browser was made
// to hold must not count (login CSRF, session fixation: a victim signed in
// as the attacker, by a plain GET /oauth2/authorize). Under https it is
// __Host-signd_session with Path=/ (forms.PageCookie): neither a sibling
// subdomain (Domain=) nor a response over plain http can set a cookie of
// that name. A request that carries the name more than once is refused as
// having no session (sessionValue): it is ambiguous, and browsers send the
// longer path first, so a planted cookie would win over the browser's own.
// The unprefixed signd_session of plain-http development is as exposed as
// everything else on an unencrypted connection.

// sessionValue returns the browser's one well-formed login session cookie
// value, "" when it has none: no cookie, the name sent more than once
// (logged as a warning, without the values) or a value NewSecret cannot
// have made.
func (h *Handler) sessionValue(r *http.Request) string {
	value, n := forms.OneCookie(r, h.sessionName)
	if n > 1 {
		h.log.WarnContext(r.Context(), "login session cookie refused: sent more than once", "path", r.URL.Path, "count", n)
		return ""
	}
	if !wellFormedSecret(value) {
		return ""
	}
	return value
}

// sessionUser returns the user of a valid login session cookie and the
// time they logged in, or nil: the session must exist and be unexpired, the
// user active and not locked.
func (h *Handler) sessionUser(c echo.Context, now time.Time) (*store.User, time.Time, error) {
	value := h.sessionValue(c.Request())
	if value == "" {
		return nil, time.Time{}, nil
	}
	var sess *store.Session
	var user *store.User
	err := h.store.View(c.Request().Context(), func(tx oauth.Tx) (err error) {
		if sess, err = tx.Session(store.Fingerprint(value)); err != nil {
			return err
		}
		user, err = tx.User(sess.Username)
		return err
	})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, time.Time{}, nil
	case err != nil:
		return nil, time.Time{}, err
	case !now.Before(sess.ExpiresAt), user.Status != store.UserActive, user.PasswordLocked:
		return nil, time.Time{}, nil
	}
	return user, sess.AuthTime, nil
}

// sessionStands returns the writes that refuse, in the transaction that
// writes a step single sign-on took for user, a login session of the
// request's that is gone or another user's, or an account a reset moved on
// (oauth.RecheckLogin).
func (h *Handler) sessionStands(c echo.Context, user *store.User) writes {
	fp := store.Fingerprint(h.sessionValue(c.Request()))
	return func(tx oauth.Tx) error {
		s, err := tx.Session(fp)
		switch {
		case errors.Is(err, store.ErrNotFound) || err == nil && s.Username != user.Username:
			return oauth.SecretChanged("login session ended meanwhile: step refused")
		case err != nil:
			return err
		}
		return oauth.RecheckLogin(tx, user)
	}
}

// newSession returns the writes that store a new login session for
// username and the cookie to set once they committed. A session the
// browser already had is removed (no fixation).
func (h *Handler) newSession(c echo.Context, username string, now time.Time) (writes, *http.Cookie, error) {
	value, err := oauth.NewSecret()
	if err != nil {
		return nil, nil, err
	}
	var old []byte
	if v := h.sessionValue(c.Request()); v != "" {
		old = store.Fingerprint(v)
	}
	sess := &store.Session{Hash: store.Fingerprint(value), Username: username, AuthTime: now, ExpiresAt: now.Add(h.cfg.SessionTTL)}
	w := func(tx oauth.Tx) error {
		if old != nil {
			if err := tx.DeleteSession(old); err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
		}
		return tx.CreateSession(sess)
	}
	cookie := &http.Cookie{
		Name: h.sessionName, Value: value, Path: h.sessionPath,
		MaxAge: int(h.cfg.SessionTTL / time.Second), Expires: now.Add(h.cfg.SessionTTL),
		HttpOnly: true, Secure: h.cfg.SecureCookies, SameSite: http.SameSiteLaxMode,
	}
	return w, cookie, nil
}

// SessionUser returns the user of the browser's valid login session at the
// handler's now, or nil (sessionUser).
func (h *Handler) SessionUser(c echo.Context) (*store.User, error) {
	u, _, err := h.sessionUser(c, h.now())
	return u, err
}

// OpenSession opens a login session for user, who logged in at now (the
// user as the password check read it), in one write transaction that
// first re-checks the account (a lock, a disabling or a new password since
// the password was checked refuses, and nothing is written:
// oauth.RecheckLogin), and sets its cookie once committed. A browser's
// earlier session is removed.
func (h *Handler) OpenSession(c echo.Context, user *store.User, now time.Time) error {
	session, cookie, err := h.newSession(c, user.Username, now)
	if err != nil {
		return err
	}
	err = h.store.Update(c.Request().Context(), func(tx oauth.Tx) error {
		if err := oauth.RecheckLogin(tx, user); err != nil {
			return err
		}
		return session(tx)
	})
	if err != nil {
		return err
	}
	c.SetCookie(cookie)
	return nil
}

// EndSession removes the browser's login session from the store (the
// flows' single sign-on ends with it), with a logout audit entry in the
// same transaction, and expires its cookie. It returns
// the session's user, "" when there was none.
func (h *Handler) EndSession(c echo.Context) (string, error) {
	value := h.sessionValue(c.Request())
	if value == "" {
		return "", nil
	}
	hash := store.Fingerprint(value)
	username := ""
	ip := passwords.AuditIP(c.RealIP())
	err := h.store.Update(c.Request().Context(), func(tx oauth.Tx) error {
		sess, err := tx.Session(hash)
		if err != nil {
			return err
		}
		username = sess.Username
		if err := tx.DeleteSession(hash); err != nil {
			return err
		}
		return tx.AppendAudit(&store.AuditEntry{Time: h.now(), Kind: store.AuditLogout, User: sess.Username,
			Actor: "user:" + sess.Username, Target: "user:" + sess.Username,
			IP: ip, Outcome: store.AuditOK})
	})
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return "", err
	}
	c.SetCookie(&http.Cookie{Name: h.sessionName, Path: h.sessionPath, MaxAge: -1,
		HttpOnly: true, Secure: h.cfg.SecureCookies, SameSite: http.SameSiteLaxMode})
	return username, nil
}

// SessionCookie returns the value of the browser's login session cookie,
// "" when it has none (sessionValue: also when it sent the name twice).
func (h *Handler) SessionCookie(c echo.Context) string {
	return h.sessionValue(c.Request())
}

// CookiePath is the path of the flow's cookies without the __Host- prefix
// (forms.PageCookie): server.base_url's path followed by /oauth2/.
func (h *Handler) CookiePath() string { return h.cookiePath }

// SecureCookies reports whether the flow's cookies are Secure and carry
// the __Host- prefix (Config.SecureCookies).
func (h *Handler) SecureCookies() bool { return h.cfg.SecureCookies }
