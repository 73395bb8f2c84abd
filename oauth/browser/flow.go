package browser

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/oauth"
	"github.com/signd/signd/oauth/pages"
	"github.com/signd/signd/store"
)

// flow is one authorization request being answered.
type flow struct {
	req     *store.AuthRequest
	stored  bool   // req exists in the store
	handle  string // raw request handle (hidden input), "" when not stored yet
	csrf    string // raw CSRF token (hidden input)
	client  *store.Client
	profile oauth.Profile
	target  oauth.Target
	// binding is the browser binding cookie to set when a new request is
	// stored (nil for a posted form: its browser has the cookie).
	binding *http.Cookie
	// cookie is the new login session's cookie: it goes out only once the
	// step's final transaction (which stores the session) committed.
	cookie *http.Cookie
	// checked is the user as this step's password or PIN check read it
	// (nil when the step checked none): the code is issued only while the
	// user's secret generation is still checked's (recheck).
	checked *store.User
}

// writes is extra work for the write transaction that ends a step (reset
// a failure counter, create a login session).
type writes func(tx oauth.Tx) error

func (w writes) run(tx oauth.Tx) error {
	if w == nil {
		return nil
	}
	return w(tx)
}

// Form field names of the login and consent pages.
const (
	fieldRequest  = "request"
	fieldCSRF     = "csrf_token"
	fieldUsername = "username"
	fieldPassword = "password"
	fieldOTP      = "otp"
	fieldPIN      = "pin"
	fieldDecision = "decision"
)

// loadFlow reads a posted login or consent form's request: the handle must
// name a pending request, the browser must be the one the request is bound
// to (binding.go) and the CSRF token must be the request's own (kept as
// defence in depth: it also ties the post to the page the server rendered).
// Failures are error pages (there is no trustworthy redirect URI) and
// change nothing.
func (h *Handler) loadFlow(c echo.Context) (*flow, error) {
	r := c.Request()
	if err := r.ParseForm(); err != nil {
		return nil, oauth.NewPageError(http.StatusBadRequest, h.pages.RequestLang(r), "errorpage.request")
	}
	for _, k := range []string{fieldRequest, fieldCSRF, fieldUsername, fieldPassword, fieldOTP, fieldPIN, fieldDecision} {
		if len(r.PostForm[k]) > 1 {
			return nil, oauth.NewPageError(http.StatusBadRequest, h.pages.RequestLang(r), "errorpage.request")
		}
	}
	handle, csrf := r.PostForm.Get(fieldRequest), r.PostForm.Get(fieldCSRF)
	if handle == "" || csrf == "" {
		return nil, oauth.NewPageError(http.StatusBadRequest, h.pages.RequestLang(r), "errorpage.request")
	}
	var req *store.AuthRequest
	var client *store.Client
	err := h.store.View(r.Context(), func(tx oauth.Tx) (err error) {
		if req, err = tx.AuthRequest(store.Fingerprint(handle)); err != nil {
			return err
		}
		client, err = tx.Client(req.ClientID)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, oauth.NewPageError(http.StatusBadRequest, h.pages.RequestLang(r), "errorpage.unknown")
	}
	if err != nil {
		return nil, err
	}
	if err := h.checkBinding(r, req); err != nil {
		return nil, err
	}
	if !oauth.MatchesFingerprint(csrf, req.CSRFHash) {
		h.log.WarnContext(c.Request().Context(), "oauth form with a wrong CSRF token", "client_id", req.ClientID)
		return nil, oauth.NewPageError(http.StatusBadRequest, req.Lang, "errorpage.csrf")
	}
	profile, err := h.core.ProfileOf(req.Profile)
	if err != nil {
		return nil, err
	}
	return &flow{
		req: req, stored: true, handle: handle, csrf: csrf, client: client, profile: profile,
		target: oauth.Target{
			RedirectURI: req.RedirectURI, State: req.State, Status: http.StatusSeeOther,
			Lang: req.Lang, Page: h.core.InfoOf(req.Profile).ErrorPage,
		},
	}, nil
}

// expired returns the timeout that ends f at now, or nil: the step's own
// timeout first (login or consent), then the whole process.
func (h *Handler) expired(f *flow, now time.Time) *oauth.Error {
	denied := func(desc string) *oauth.Error {
		return oauth.Errorf(oauth.CodeAccessDenied, http.StatusForbidden, "%s", desc)
	}
	switch {
	case f.req.Stage == store.StageLogin && now.Sub(f.req.RequestedAt) > h.cfg.LoginTimeout:
		return denied("authentication challenge expired")
	case f.req.Stage == store.StageConsent && now.Sub(f.req.ConsentShownAt) > h.cfg.ConsentTimeout:
		return denied("consent request expired")
	case now.Sub(f.req.RequestedAt) > h.cfg.ProcessTimeout:
		return denied("process expired")
	}
	return nil
}

// finish ends f with err: one transaction runs w and deletes the stored
// request, then the client gets the error redirect.
func (h *Handler) finish(c echo.Context, f *flow, err error, w writes) error {
	var oe *oauth.Error
	if errors.As(err, &oe) {
		h.log.InfoContext(c.Request().Context(), "authorization ended", "client_id", f.req.ClientID, "profile", f.req.Profile,
			"error", oe.Code, "error_description", oe.Description)
	}
	if f.stored || w != nil {
		uerr := h.store.Update(c.Request().Context(), func(tx oauth.Tx) error {
			if err := w.run(tx); err != nil {
				return err
			}
			if f.stored {
				if err := tx.DeleteAuthRequest(f.req.Hash); err != nil && !errors.Is(err, store.ErrNotFound) {
					return err
				}
			}
			return nil
		})
		if lr := asLockRefusal(uerr); lr != nil {
			return h.refuse(c, f, lr)
		}
		if uerr != nil {
			return h.core.RedirectError(f.target, uerr)
		}
		h.setCookie(c, f)
	}
	return h.core.RedirectError(f.target, err)
}

// recheck is the lock check of the transaction that issues a code: the
// account must still be usable and, when the consent checked the signing
// PIN, the PIN must not have been locked since; when the step checked a
// password or PIN (checked, the user as the check read it), the user's
// secret generation must still be the one checked against (a reset that
// committed while the secret was hashed wins).
func recheck(tx oauth.Tx, g *store.Grant, checked *store.User) error {
	u, err := tx.User(g.Username)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return oauth.AccountLocked("account locked or disabled: no code issued")
	case err != nil:
		return err
	case u.Status != store.UserActive || u.PasswordLocked:
		return oauth.AccountLocked("account locked or disabled: no code issued")
	case g.PINVerified && u.PINLocked:
		return &oauth.LockRefusal{Err: pinLocked(), Msg: "signing PIN locked: no code issued"}
	case checked != nil && (u.ID != checked.ID || u.SecretGeneration != checked.SecretGeneration):
		return oauth.SecretChanged("password or PIN changed meanwhile: no code issued")
	}
	return nil
}

// refuse ends f after a lock refusal in the step's final transaction: no
// login session, no code; the request is deleted and the client gets
// access_denied.
func (h *Handler) refuse(c echo.Context, f *flow, lr *oauth.LockRefusal) error {
	h.log.WarnContext(c.Request().Context(), lr.Msg, "username", f.req.Username, "client_id", f.req.ClientID, "profile", f.req.Profile)
	f.cookie = nil
	return h.finish(c, f, lr.Err, nil)
}

// setCookie sets the login session cookie once its session is stored.
func (h *Handler) setCookie(c echo.Context, f *flow) {
	if f.cookie != nil {
		c.SetCookie(f.cookie)
		f.cookie = nil
	}
}

// proceed continues f once user authenticated (f.req.Username and AuthTime
// are set): the profile checks the user, then the consent page is shown or
// the code issued. w runs in the step's final transaction.
func (h *Handler) proceed(c echo.Context, f *flow, user *store.User, w writes) error {
	ctx := c.Request().Context()
	pr := h.core.Request(f.client, user, &f.req.Grant)
	if err := f.profile.CheckUser(ctx, pr); err != nil {
		return h.finish(c, f, err, w)
	}
	consent, err := f.profile.Consent(ctx, pr)
	if err != nil {
		return h.finish(c, f, err, w)
	}
	if consent == nil {
		// No page, no consent: the code records nothing approved.
		f.req.Consented = nil
		return h.issueCode(c, f, w)
	}
	record, err := consent.Record()
	if err != nil {
		return h.finish(c, f, err, w)
	}
	if pr.Login.Prompt == oauth.PromptNone {
		return h.finish(c, f, oauth.Errorf(oauth.CodeConsentRequired, http.StatusForbidden, "Consent is required"), w)
	}
	if consent.RequirePIN {
		if err := h.pinUsable(user); err != nil {
			return h.finish(c, f, err, w)
		}
	}
	// What the page shows is what the user approves: the record is stored
	// with the request and copied to the code and its tokens.
	f.req.Stage, f.req.ConsentShownAt, f.req.Consented = store.StageConsent, h.now(), record
	err = h.store.Update(ctx, func(tx oauth.Tx) error {
		if err := w.run(tx); err != nil {
			return err
		}
		if f.stored {
			return tx.PutAuthRequest(f.req)
		}
		return tx.CreateAuthRequest(f.req)
	})
	if lr := asLockRefusal(err); lr != nil {
		return h.refuse(c, f, lr)
	}
	if err != nil {
		return h.core.RedirectError(f.target, err)
	}
	f.stored = true
	sendBinding(c, f)
	h.setCookie(c, f)
	return h.renderConsent(c, f, consent, "")
}

func pinLocked() *oauth.Error {
	return oauth.Errorf(oauth.CodeAccessDenied, http.StatusForbidden, "The signing PIN is locked")
}

// pinUsable refuses a consent that needs a PIN the user cannot give; a
// locked PIN is logged.
func (h *Handler) pinUsable(u *store.User) *oauth.Error {
	if err := pinUsable(u); err != nil {
		if u.PINLocked {
			h.log.Warn("signing PIN locked: consent refused", "username", u.Username)
		}
		return err
	}
	return nil
}

func pinUsable(u *store.User) *oauth.Error {
	switch {
	case u.PINLocked:
		return pinLocked()
	case u.PINHash == "":
		return oauth.Errorf(oauth.CodeAccessDenied, http.StatusForbidden, "No signing PIN is set")
	}
	return nil
}

// issueCode ends f with a code: one transaction re-checks the locks (see
// recheck), runs w, deletes the request and stores the code's fingerprint;
// then the client gets the code. A lock found there ends the flow with
// access_denied instead.
func (h *Handler) issueCode(c echo.Context, f *flow, w writes) error {
	code, err := oauth.NewSecret()
	if err != nil {
		return h.finish(c, f, err, w)
	}
	now := h.now()
	ac := &store.AuthCode{Hash: store.Fingerprint(code), Grant: f.req.Grant, ExpiresAt: now.Add(h.cfg.CodeTTL)}
	err = h.store.Update(c.Request().Context(), func(tx oauth.Tx) error {
		if err := recheck(tx, &f.req.Grant, f.checked); err != nil {
			return err
		}
		if err := w.run(tx); err != nil {
			return err
		}
		if f.stored {
			if err := tx.DeleteAuthRequest(f.req.Hash); err != nil {
				return err // ErrNotFound: answered concurrently
			}
		}
		return tx.CreateCode(ac)
	})
	if lr := asLockRefusal(err); lr != nil {
		return h.refuse(c, f, lr)
	}
	if errors.Is(err, store.ErrNotFound) {
		return oauth.NewPageError(http.StatusBadRequest, f.req.Lang, "errorpage.answered")
	}
	if err != nil {
		return h.core.RedirectError(f.target, err)
	}
	h.setCookie(c, f)
	h.log.InfoContext(c.Request().Context(), "authorization code issued", "client_id", f.req.ClientID, "profile", f.req.Profile, "username", f.req.Username)
	return h.core.RedirectTo(c, f.target, url.Values{"code": {code}})
}

// renderLogin shows the login page of f, with an error message key and the
// username typed before.
func (h *Handler) renderLogin(c echo.Context, f *flow, errKey, username string) error {
	return h.pages.Render(c, pages.Status, "login", &pages.Data{
		Lang: f.req.Lang, Client: clientName(f.client), Action: "login",
		Request: f.handle, CSRF: f.csrf, Username: username, Error: errKey,
	}, f.req.RedirectURI)
}

// renderConsent shows the consent page of f.
func (h *Handler) renderConsent(c echo.Context, f *flow, consent *oauth.Consent, errKey string) error {
	return h.pages.Render(c, pages.Status, "consent", &pages.Data{
		Lang: f.req.Lang, TitleKey: "consent.title", Client: clientName(f.client), Action: "consent",
		Request: f.handle, CSRF: f.csrf, Error: errKey, Consent: consentView(consent, f.req.Lang),
	}, f.req.RedirectURI)
}

func clientName(c *store.Client) string {
	if c.Name != "" {
		return c.Name
	}
	return c.ID
}

// loadUser returns the user, or nil when there is none.
func (h *Handler) loadUser(ctx context.Context, username string) (*store.User, error) {
	var u *store.User
	err := h.store.View(ctx, func(tx oauth.Tx) (err error) {
		u, err = tx.User(username)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	return u, err
}

// consentView is the consent page's view of c in lang.
func consentView(c *oauth.Consent, lang string) *pages.ConsentView {
	v := &pages.ConsentView{Title: c.Title.In(lang), RequirePIN: c.RequirePIN}
	for _, p := range c.Permissions {
		v.Permissions = append(v.Permissions, p.In(lang))
	}
	for _, it := range c.Items {
		v.Items = append(v.Items, pages.ConsentItem{Label: it.Label.In(lang), Value: it.Value, Code: it.Code})
	}
	return v
}

func asLockRefusal(err error) *oauth.LockRefusal {
	var lr *oauth.LockRefusal
	if errors.As(err, &lr) {
		return lr
	}
	return nil
}
