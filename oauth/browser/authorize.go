package browser

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/oauth"
	"github.com/signd/signd/store"
)

// maxNonce bounds the nonce stored with a request and its code.
const maxNonce = 512

// readParams returns the request's parameters (the query of a GET, the form
// body of a POST), each with one non-empty value, and the names given more
// than once. Empty parameters count as omitted (RFC 6749 §3.1).
func readParams(r *http.Request) (url.Values, []string, error) {
	var raw url.Values
	if r.Method == http.MethodPost {
		if err := r.ParseForm(); err != nil {
			return nil, nil, err
		}
		raw = r.PostForm
	} else {
		var err error
		if raw, err = url.ParseQuery(r.URL.RawQuery); err != nil {
			return nil, nil, err
		}
	}
	params := url.Values{}
	var dups []string
	for k, vs := range raw {
		if len(vs) > 1 {
			dups = append(dups, k)
			continue
		}
		if vs[0] != "" {
			params.Set(k, vs[0])
		}
	}
	slices.Sort(dups)
	return params, dups, nil
}

// splitScopes splits a scope parameter on spaces, dropping empty entries
// and repeats.
func splitScopes(s string) []string {
	var out []string
	for _, f := range strings.Split(s, " ") {
		if f != "" && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// authorizeRequest is a parsed /oauth2/authorize request, checked in the
// order RFC 6749 §4.1.2.1 needs: the client and its redirect URI first
// (a problem there is the HTML error page, never a redirect), then the
// rest, whose problems go back to the client through target.
type authorizeRequest struct {
	params      url.Values
	dups        []string // the parameters given more than once
	lang        string
	client      *store.Client
	scopes      []string
	profile     oauth.Profile
	info        oauth.ProfileInfo
	scopeErr    *oauth.Error // Match's refusal, redirected in its turn
	redirectURI string
	sent        bool // redirect_uri was in the request
	target      oauth.Target
	state       string
	challenge   string
	nonce       string
}

// authorize is GET and POST /oauth2/authorize: parse the request, start
// the flow (startFlow, no HTTP in it), bind it to the browser, then show
// the login page, or (after single sign-on) the consent page, or redirect
// straight back.
func (h *Handler) authorize(c echo.Context) error {
	ctx := c.Request().Context()
	now := h.now()
	req, err := h.parseAuthorize(c)
	if err != nil {
		return err
	}
	f, policy, err := h.startFlow(ctx, req, now)
	if err != nil {
		return h.core.RedirectError(req.target, err)
	}
	if err := h.bindBrowser(c, f, now); err != nil {
		return h.core.RedirectError(req.target, err)
	}
	h.log.InfoContext(ctx, "authorization request", "client_id", req.client.ID, "profile", f.req.Profile)

	// Single sign-on, when the profile allows it and the session is fresh
	// enough.
	if policy.SSO && policy.Prompt != oauth.PromptLogin {
		user, authTime, err := h.sessionUser(c, now)
		if err != nil {
			return h.core.RedirectError(req.target, err)
		}
		if user != nil && !(policy.HasMaxAge && (policy.MaxAge == 0 || now.Sub(authTime) > policy.MaxAge)) {
			f.req.Username, f.req.AuthTime = user.Username, authTime
			h.log.InfoContext(ctx, "single sign-on", "client_id", req.client.ID, "username", user.Username)
			// The session and the account as read must still stand when the
			// code (or the consent's request) is written: a logout, or a
			// set-password that ends the session and raises the secret
			// generation, committing in between wins.
			f.checked = user
			return h.proceed(c, f, user, h.sessionStands(c, user))
		}
	}
	if policy.Prompt == oauth.PromptNone {
		return h.core.RedirectError(req.target, oauth.Errorf(oauth.CodeLoginRequired, http.StatusBadRequest, "The user is not logged in"))
	}
	if err := h.store.Update(ctx, func(tx oauth.Tx) error { return tx.CreateAuthRequest(f.req) }); err != nil {
		return h.core.RedirectError(req.target, err)
	}
	sendBinding(c, f)
	return h.renderLogin(c, f, "", "")
}

// parseAuthorize reads and checks an authorization request. Until the
// redirect URI is validated its errors are pages (parseClient); from there
// on they go back to the client (validate). The error is ready for the
// renderer.
func (h *Handler) parseAuthorize(c echo.Context) (*authorizeRequest, error) {
	req, err := h.parseClient(c.Request())
	if err != nil {
		return nil, err
	}
	req.state = req.params.Get("state")
	req.target = oauth.Target{RedirectURI: req.redirectURI, Status: http.StatusFound, Lang: req.lang,
		Page: req.info.ErrorPage && !slices.Contains(strings.Fields(req.params.Get("prompt")), "none")}
	if c.Request().Method == http.MethodPost {
		req.target.Status = http.StatusSeeOther
	}
	if len(req.state) <= 255 {
		req.target.State = req.state
	}
	if e := req.validate(); e != nil {
		return nil, h.core.RedirectError(req.target, e)
	}
	return req, nil
}

// parseClient reads the parameters and checks the client and its redirect
// URI, asking Core for the client and the scopes' profile. Every error is
// the HTML error page: nothing is known yet to redirect to.
func (h *Handler) parseClient(r *http.Request) (*authorizeRequest, error) {
	params, dups, err := readParams(r)
	if err != nil {
		return nil, oauth.NewPageError(http.StatusBadRequest, h.pages.RequestLang(r), "errorpage.request")
	}
	req := &authorizeRequest{params: params, dups: dups,
		lang: h.pages.Lang(r, params.Get("ui_locales"), params.Get("lang"))}
	if slices.Contains(dups, "client_id") {
		return nil, oauth.NewPageError(http.StatusBadRequest, req.lang, "errorpage.client")
	}
	if slices.Contains(dups, "redirect_uri") {
		return nil, oauth.NewPageError(http.StatusBadRequest, req.lang, "errorpage.redirect")
	}
	clientID := params.Get("client_id")
	if clientID == "" {
		return nil, oauth.NewPageError(http.StatusBadRequest, req.lang, "errorpage.client")
	}
	if req.client, err = h.core.Client(r.Context(), clientID); err != nil {
		return nil, err
	}
	if req.client == nil {
		h.log.Info("authorize: unknown client")
		return nil, oauth.NewPageError(http.StatusBadRequest, req.lang, "errorpage.client")
	}
	req.scopes = splitScopes(params.Get("scope"))
	req.profile, req.info, req.scopeErr = h.core.Match(req.scopes)
	req.redirectURI, req.sent = params.Get("redirect_uri"), params.Has("redirect_uri")
	switch {
	case req.sent && !slices.Contains(req.client.RedirectURIs, req.redirectURI):
		h.log.Info("authorize: redirect_uri not registered", "client_id", req.client.ID)
		return nil, oauth.NewPageError(http.StatusBadRequest, req.lang, "errorpage.redirect")
	case !req.sent && req.profile != nil && req.info.RedirectURIOptional && len(req.client.RedirectURIs) == 1:
		req.redirectURI = req.client.RedirectURIs[0]
	case !req.sent:
		return nil, oauth.NewPageError(http.StatusBadRequest, req.lang, "errorpage.redirect")
	}
	return req, nil
}

// validate checks the rest of a request whose client and redirect URI
// stand: duplicates, response_type, state, the scopes' profile, PKCE and
// the nonce, in that order. Its refusal goes back to the client.
func (req *authorizeRequest) validate() *oauth.Error {
	invalid := func(format string, args ...any) *oauth.Error {
		return oauth.Errorf(oauth.CodeInvalidRequest, http.StatusBadRequest, format, args...)
	}
	switch rt := req.params.Get("response_type"); {
	case len(req.dups) > 0:
		return invalid("Parameter %s is duplicated", req.dups[0])
	case rt == "":
		return invalid("Missing parameter response_type")
	case rt != "code":
		return oauth.Errorf(oauth.CodeUnsupportedResponseType, http.StatusBadRequest, "Only response_type code is supported")
	case req.state == "":
		return invalid("Missing parameter state")
	case len(req.state) > 255:
		return invalid("Parameter state is longer than 255 bytes")
	case req.scopeErr != nil:
		return req.scopeErr
	}
	req.challenge = req.params.Get("code_challenge")
	switch method := req.params.Get("code_challenge_method"); {
	case req.challenge == "" && method != "":
		return invalid("code_challenge_method without code_challenge")
	case req.challenge == "" && req.client.RequirePKCE:
		return invalid("This client must use PKCE (code_challenge with S256)")
	case req.challenge != "" && method != "S256":
		return invalid("code_challenge_method must be S256")
	case req.challenge != "" && !oauth.ValidChallenge(req.challenge):
		return invalid("Invalid parameter code_challenge")
	}
	req.nonce = req.params.Get("nonce")
	if len(req.nonce) > maxNonce {
		return invalid("Parameter nonce is longer than %d bytes", maxNonce)
	}
	return nil
}

// startFlow asks the profile for its authorization of a parsed request and
// builds the pending request: the granted scopes (each registered for the
// client), the profile's binding, PKCE, a fresh handle and CSRF token. It
// has no HTTP in it; its errors go back to the client. policy is the
// profile's login policy for the request.
func (h *Handler) startFlow(ctx context.Context, req *authorizeRequest, now time.Time) (f *flow, policy oauth.LoginPolicy, err error) {
	az, err := req.profile.Authorize(ctx, &oauth.AuthorizeRequest{
		Client: req.client, Scopes: req.scopes, RedirectURI: req.redirectURI, Params: req.params,
		Lang: req.lang, RequestedAt: now,
	})
	if err != nil {
		return nil, policy, err
	}
	if az == nil {
		return nil, policy, fmt.Errorf("oauth: profile %s returned no authorization", req.info.Name)
	}
	granted := az.Scopes
	if granted == nil {
		granted = req.scopes
	}
	for _, sc := range granted {
		if !slices.Contains(req.client.Scopes, sc) {
			return nil, policy, oauth.Errorf(oauth.CodeInvalidScope, http.StatusBadRequest, "Scope %s is not allowed for this client", sc)
		}
	}
	f = &flow{
		client:  req.client,
		profile: req.profile,
		target:  req.target,
		req: &store.AuthRequest{
			Grant: store.Grant{
				ClientID: req.client.ID, RedirectURI: req.redirectURI, RedirectURISent: req.sent,
				Scopes: granted, Profile: req.info.Name, Params: az.Binding.Params,
				Nonce: req.nonce, Lang: req.lang, SSO: az.Login.SSO, Prompt: oauth.PromptString(az.Login.Prompt),
				MaxAge: az.Login.MaxAge, HasMaxAge: az.Login.HasMaxAge, RequestedAt: now,
			},
			State:     req.state,
			Stage:     store.StageLogin,
			ExpiresAt: now.Add(h.requestLifetime()),
		},
	}
	if err := oauth.StoreDetails(&f.req.Grant, req.info.DetailType, az.Binding.Details); err != nil {
		return nil, policy, err
	}
	if req.challenge != "" {
		f.req.CodeChallenge, f.req.CodeChallengeMethod = req.challenge, "S256"
	}
	if f.handle, err = oauth.NewSecret(); err != nil {
		return nil, policy, err
	}
	if f.csrf, err = oauth.NewSecret(); err != nil {
		return nil, policy, err
	}
	f.req.Hash, f.req.CSRFHash = store.Fingerprint(f.handle), store.Fingerprint(f.csrf)
	return f, az.Login, nil
}

// requestLifetime is how long a pending request is kept: past every
// timeout, so a late answer still gets its redirect rather than the
// unknown-request page.
func (h *Handler) requestLifetime() time.Duration {
	return max(h.cfg.ProcessTimeout, h.cfg.LoginTimeout+h.cfg.ConsentTimeout) + time.Hour
}
