package browser

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/signd/signd/oauth"
	"github.com/signd/signd/oauth/pages"
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

// authorize is GET and POST /oauth2/authorize: validate the request, then
// show the login page, or (after single sign-on) the consent page, or
// redirect straight back.
func (h *Handler) authorize(c echo.Context) error {
	ctx := c.Request().Context()
	now := h.now()
	params, dups, err := readParams(c.Request())
	if err != nil {
		return oauth.NewPageError(http.StatusBadRequest, pages.NL, "errorpage.request")
	}
	lang := h.pages.PickLang(params.Get("ui_locales"), params.Get("lang"))

	// Until the redirect URI is validated, errors are pages.
	if slices.Contains(dups, "client_id") {
		return oauth.NewPageError(http.StatusBadRequest, lang, "errorpage.client")
	}
	if slices.Contains(dups, "redirect_uri") {
		return oauth.NewPageError(http.StatusBadRequest, lang, "errorpage.redirect")
	}
	clientID := params.Get("client_id")
	if clientID == "" {
		return oauth.NewPageError(http.StatusBadRequest, lang, "errorpage.client")
	}
	client, err := h.core.Client(ctx, clientID)
	if err != nil {
		return err
	}
	if client == nil {
		h.log.Info("authorize: unknown client")
		return oauth.NewPageError(http.StatusBadRequest, lang, "errorpage.client")
	}
	scopes := splitScopes(params.Get("scope"))
	profile, info, scopeErr := h.core.Match(scopes)
	redirectURI, sent := params.Get("redirect_uri"), params.Has("redirect_uri")
	switch {
	case sent && !slices.Contains(client.RedirectURIs, redirectURI):
		h.log.Info("authorize: redirect_uri not registered", "client_id", client.ID)
		return oauth.NewPageError(http.StatusBadRequest, lang, "errorpage.redirect")
	case !sent && profile != nil && info.RedirectURIOptional && len(client.RedirectURIs) == 1:
		redirectURI = client.RedirectURIs[0]
	case !sent:
		return oauth.NewPageError(http.StatusBadRequest, lang, "errorpage.redirect")
	}

	// From here on errors go back to the client.
	state := params.Get("state")
	t := oauth.Target{RedirectURI: redirectURI, Status: http.StatusFound, Lang: lang,
		Page: info.ErrorPage && !slices.Contains(strings.Fields(params.Get("prompt")), "none")}
	if c.Request().Method == http.MethodPost {
		t.Status = http.StatusSeeOther
	}
	if len(state) <= 255 {
		t.State = state
	}
	fail := func(code, format string, args ...any) error {
		return h.core.RedirectError(t, oauth.Errorf(code, http.StatusBadRequest, format, args...))
	}
	switch rt := params.Get("response_type"); {
	case len(dups) > 0:
		return fail(oauth.CodeInvalidRequest, "Parameter %s is duplicated", dups[0])
	case rt == "":
		return fail(oauth.CodeInvalidRequest, "Missing parameter response_type")
	case rt != "code":
		return fail(oauth.CodeUnsupportedResponseType, "Only response_type code is supported")
	case state == "":
		return fail(oauth.CodeInvalidRequest, "Missing parameter state")
	case len(state) > 255:
		return fail(oauth.CodeInvalidRequest, "Parameter state is longer than 255 bytes")
	case scopeErr != nil:
		return h.core.RedirectError(t, scopeErr)
	}
	challenge, method := params.Get("code_challenge"), params.Get("code_challenge_method")
	switch {
	case challenge == "" && method != "":
		return fail(oauth.CodeInvalidRequest, "code_challenge_method without code_challenge")
	case challenge == "" && client.RequirePKCE:
		return fail(oauth.CodeInvalidRequest, "This client must use PKCE (code_challenge with S256)")
	case challenge != "" && method != "S256":
		return fail(oauth.CodeInvalidRequest, "code_challenge_method must be S256")
	case challenge != "" && !oauth.ValidChallenge(challenge):
		return fail(oauth.CodeInvalidRequest, "Invalid parameter code_challenge")
	}
	nonce := params.Get("nonce")
	if len(nonce) > maxNonce {
		return fail(oauth.CodeInvalidRequest, "Parameter nonce is longer than %d bytes", maxNonce)
	}

	az, err := profile.Authorize(ctx, &oauth.AuthorizeRequest{
		Client: client, Scopes: scopes, RedirectURI: redirectURI, Params: params,
		Lang: lang, RequestedAt: now,
	})
	if err != nil {
		return h.core.RedirectError(t, err)
	}
	if az == nil {
		return h.core.RedirectError(t, fmt.Errorf("oauth: profile %s returned no authorization", info.Name))
	}
	granted := az.Scopes
	if granted == nil {
		granted = scopes
	}
	for _, sc := range granted {
		if !slices.Contains(client.Scopes, sc) {
			return fail(oauth.CodeInvalidScope, "Scope %s is not allowed for this client", sc)
		}
	}

	f := &flow{
		client:  client,
		profile: profile,
		target:  t,
		req: &store.AuthRequest{
			Grant: store.Grant{
				ClientID: client.ID, RedirectURI: redirectURI, RedirectURISent: sent,
				Scopes: granted, Profile: info.Name, Params: az.Binding.Params,
				Nonce: nonce, Lang: lang, SSO: az.Login.SSO, Prompt: oauth.PromptString(az.Login.Prompt),
				MaxAge: az.Login.MaxAge, HasMaxAge: az.Login.HasMaxAge, RequestedAt: now,
			},
			State:     state,
			Stage:     store.StageLogin,
			ExpiresAt: now.Add(h.requestLifetime()),
		},
	}
	if err := oauth.StoreDetails(&f.req.Grant, info.DetailType, az.Binding.Details); err != nil {
		return h.core.RedirectError(t, err)
	}
	if challenge != "" {
		f.req.CodeChallenge, f.req.CodeChallengeMethod = challenge, "S256"
	}
	if f.handle, err = oauth.NewSecret(); err != nil {
		return h.core.RedirectError(t, err)
	}
	if f.csrf, err = oauth.NewSecret(); err != nil {
		return h.core.RedirectError(t, err)
	}
	f.req.Hash, f.req.CSRFHash = store.Fingerprint(f.handle), store.Fingerprint(f.csrf)
	if err := h.bindBrowser(c, f, now); err != nil {
		return h.core.RedirectError(t, err)
	}
	h.log.Info("authorization request", "client_id", client.ID, "profile", f.req.Profile)

	// Single sign-on, when the profile allows it and the session is fresh
	// enough.
	policy := az.Login
	if policy.SSO && policy.Prompt != oauth.PromptLogin {
		user, authTime, err := h.sessionUser(c, now)
		if err != nil {
			return h.core.RedirectError(t, err)
		}
		if user != nil && !(policy.HasMaxAge && (policy.MaxAge == 0 || now.Sub(authTime) > policy.MaxAge)) {
			f.req.Username, f.req.AuthTime = user.Username, authTime
			h.log.Info("single sign-on", "client_id", client.ID, "username", user.Username)
			return h.proceed(c, f, user, nil)
		}
	}
	if policy.Prompt == oauth.PromptNone {
		return fail(oauth.CodeLoginRequired, "The user is not logged in")
	}
	if err := h.store.Update(ctx, func(tx oauth.Tx) error { return tx.CreateAuthRequest(f.req) }); err != nil {
		return h.core.RedirectError(t, err)
	}
	sendBinding(c, f)
	return h.renderLogin(c, f, "", "")
}

// requestLifetime is how long a pending request is kept: past every
// timeout, so a late answer still gets its redirect rather than the
// unknown-request page.
func (h *Handler) requestLifetime() time.Duration {
	return max(h.cfg.ProcessTimeout, h.cfg.LoginTimeout+h.cfg.ConsentTimeout) + time.Hour
}
